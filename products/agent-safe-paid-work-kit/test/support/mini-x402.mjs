// A stand-in for @x402/core's x402Client and @x402/fetch's wrapFetchWithPayment, with the same hook
// API and order (read from @x402/core 2.27): registered policies order the offered entries and the
// first is taken; before-hooks may abort; the payload is created, then after-hooks run inside the
// same try, whose failure runs the failure hooks and rethrows; the transport sends the signature
// only when createPaymentPayload returned; the response hooks run for x402 v2 only (2.27 skips them
// for v1, as this does). The project's own tests run the guard against the real packages; these let
// the kit's tests run standalone, offline. "Signatures" are HMACs: the guard never looks at them.
import { createHmac, randomBytes } from "node:crypto";

export class MiniX402Client {
  constructor({ payer = "0x90F79bf6EB2c4f870365E785982E1f101E93b906", tamper } = {}) {
    this.payer = payer;
    this.tamper = tamper; // (authorization) => authorization: a signer that signs something else
    this.policies = [];
    this.before = [];
    this.after = [];
    this.failure = [];
    this.response = [];
  }
  registerPolicy(policy) {
    this.policies.push(policy);
    return this;
  }
  onBeforePaymentCreation(hook) {
    this.before.push(hook);
    return this;
  }
  onAfterPaymentCreation(hook) {
    this.after.push(hook);
    return this;
  }
  onPaymentCreationFailure(hook) {
    this.failure.push(hook);
    return this;
  }
  onPaymentResponse(hook) {
    this.response.push(hook);
    return this;
  }
  async createPaymentPayload(paymentRequired) {
    let offered = paymentRequired.accepts;
    for (const policy of this.policies) offered = policy(paymentRequired.x402Version, offered);
    const requirements = offered[0];
    const context = { paymentRequired, selectedRequirements: requirements };
    for (const hook of this.before) {
      const result = await hook(context);
      if (result?.abort) throw new Error(`Payment creation aborted: ${result.reason}`);
    }
    try {
      let authorization = {
        from: this.payer,
        to: requirements.payTo,
        value: requirements.amount ?? requirements.maxAmountRequired,
        validAfter: "0",
        validBefore: String(Math.floor(Date.now() / 1000) + requirements.maxTimeoutSeconds),
        nonce: `0x${randomBytes(32).toString("hex")}`,
      };
      if (this.tamper) authorization = this.tamper(authorization);
      const signature = `0x${createHmac("sha256", "test").update(JSON.stringify(authorization)).digest("hex")}`;
      const paymentPayload =
        paymentRequired.x402Version === 1
          ? { x402Version: 1, scheme: requirements.scheme, network: requirements.network, payload: { authorization, signature } }
          : { x402Version: 2, payload: { authorization, signature }, resource: paymentRequired.resource, accepted: requirements };
      for (const hook of this.after) await hook({ ...context, paymentPayload });
      return paymentPayload;
    } catch (error) {
      for (const hook of this.failure) await hook({ ...context, error });
      throw error;
    }
  }
  async handlePaymentResponse(ctx) {
    for (const hook of this.response) await hook(ctx);
  }
}

const b64 = (value) => Buffer.from(JSON.stringify(value)).toString("base64");
const unb64 = (value) => JSON.parse(Buffer.from(value, "base64").toString("utf8"));

/** wrapFetchWithPayment's flow: 402 → createPaymentPayload → resend with the payment → response hooks (v2 only). */
export function miniWrapFetch(fetchImpl, client) {
  return async (url, init = {}) => {
    const first = await fetchImpl(url, init);
    if (first.status !== 402) return first;
    const header = first.headers.get("payment-required");
    const paymentRequired = header ? unb64(header) : await first.json();
    let paymentPayload;
    try {
      paymentPayload = await client.createPaymentPayload(paymentRequired);
    } catch (error) {
      throw new Error(`Failed to create payment payload: ${error.message}`);
    }
    const name = paymentPayload.x402Version === 1 ? "X-PAYMENT" : "PAYMENT-SIGNATURE";
    const second = await fetchImpl(url, { ...init, headers: { ...(init.headers ?? {}), [name]: b64(paymentPayload) } });
    if (paymentPayload.x402Version === 1) return second;
    const receipt = second.headers.get("payment-response");
    const settleResponse = receipt ? unb64(receipt) : undefined;
    const required = !settleResponse && second.status === 402 && second.headers.get("payment-required");
    await client.handlePaymentResponse({ paymentPayload, requirements: paymentPayload.accepted, ...(settleResponse ? { settleResponse } : {}), ...(required ? { paymentRequired: unb64(required) } : {}) });
    return second;
  };
}
