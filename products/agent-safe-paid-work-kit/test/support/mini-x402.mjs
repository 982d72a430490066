// A stand-in for @x402/core's x402Client and @x402/fetch's wrapFetchWithPayment, with the same hook
// API and order (read from @x402/core 2.27): before-hooks may abort; the payload is created, then
// after-hooks run inside the same try, whose failure runs the failure hooks and rethrows; the
// transport sends the signature only when createPaymentPayload returned. The project's own tests
// run the guard against the real packages; these let the kit's tests run standalone, offline.
// "Signatures" are HMACs: the guard never looks at them.
import { createHmac, randomBytes } from "node:crypto";

export class MiniX402Client {
  constructor({ payer = "0x90F79bf6EB2c4f870365E785982E1f101E93b906", tamper } = {}) {
    this.payer = payer;
    this.tamper = tamper; // (authorization) => authorization: a signer that signs something else
    this.before = [];
    this.after = [];
    this.failure = [];
    this.response = [];
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
    const requirements = paymentRequired.accepts[0];
    const context = { paymentRequired, selectedRequirements: requirements };
    for (const hook of this.before) {
      const result = await hook(context);
      if (result?.abort) throw new Error(`Payment creation aborted: ${result.reason}`);
    }
    try {
      let authorization = {
        from: this.payer,
        to: requirements.payTo,
        value: requirements.amount,
        validAfter: "0",
        validBefore: String(Math.floor(Date.now() / 1000) + requirements.maxTimeoutSeconds),
        nonce: `0x${randomBytes(32).toString("hex")}`,
      };
      if (this.tamper) authorization = this.tamper(authorization);
      const signature = `0x${createHmac("sha256", "test").update(JSON.stringify(authorization)).digest("hex")}`;
      const paymentPayload = { x402Version: 2, payload: { authorization, signature }, resource: paymentRequired.resource, accepted: requirements };
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

/** wrapFetchWithPayment's flow: 402 → createPaymentPayload → resend with PAYMENT-SIGNATURE → response hooks. */
export function miniWrapFetch(fetchImpl, client) {
  return async (url, init = {}) => {
    const first = await fetchImpl(url, init);
    if (first.status !== 402) return first;
    const paymentRequired = unb64(first.headers.get("payment-required"));
    let paymentPayload;
    try {
      paymentPayload = await client.createPaymentPayload(paymentRequired);
    } catch (error) {
      throw new Error(`Failed to create payment payload: ${error.message}`);
    }
    const second = await fetchImpl(url, { ...init, headers: { ...(init.headers ?? {}), "PAYMENT-SIGNATURE": b64(paymentPayload) } });
    const receipt = second.headers.get("payment-response");
    const settleResponse = receipt ? unb64(receipt) : undefined;
    const required = !settleResponse && second.status === 402 && second.headers.get("payment-required");
    await client.handlePaymentResponse({ paymentPayload, requirements: paymentPayload.accepted, ...(settleResponse ? { settleResponse } : {}), ...(required ? { paymentRequired: unb64(required) } : {}) });
    return second;
  };
}
