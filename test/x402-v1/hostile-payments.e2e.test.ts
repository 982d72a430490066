import { decodePaymentRequiredHeader } from "@x402/core/http";
import type { PaymentPayload, PaymentRequired } from "@x402/core/types";
import { generatePaymentId } from "@x402/extensions/payment-identifier";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { devPrivateKey } from "../../src/chain/dev-accounts.ts";
import { atomicPrice } from "../../src/contract/price.ts";
import { jsonDiff } from "../../src/operations/json-diff/index.ts";
import { jsonPost, startTestService, type TestService, usdcBalances } from "../helpers/service.ts";
import { callTool, connectMcp, receiptOf, toolPayer } from "../mcp/paying-mcp-client.ts";

/*
 * A hostile payer at the HTTP door's two dialects (PAYMENT-SIGNATURE, X-PAYMENT) and across the two doors:
 * payments signed by the official x402 client, then bent. Every one is refused with the terms (402) or
 * served once; nothing is a 500, and the chain shows each payer charged at most once per request.
 */

const PRICE = BigInt(atomicPrice(jsonDiff));
const base64 = (value: unknown) => Buffer.from(JSON.stringify(value)).toString("base64");
const diff = (n: number) => ({ before: { n }, after: { n: n + 1 } });

describe("hostile payments at the HTTP door (v1 and v2 dialects) and across the MCP door", () => {
  let service: TestService;
  let balanceOf: ReturnType<typeof usdcBalances>;
  let url: string;

  beforeAll(async () => {
    service = await startTestService({}, { operations: [jsonDiff] });
    balanceOf = usdcBalances(service.localChain?.rpcUrl as string);
    url = `${service.url}/v1/json-diff`;
  });
  afterAll(async () => {
    await service?.stop();
  });

  const termsFor = async (body: unknown): Promise<PaymentRequired> =>
    decodePaymentRequiredHeader((await fetch(url, jsonPost(body))).headers.get("PAYMENT-REQUIRED") as string);
  /** The v1 form of a v2 payment of the same authorization (what x402-fetch would send). */
  const v1Of = (payment: PaymentPayload, network = "base") =>
    base64({ x402Version: 1, scheme: "exact", network, payload: payment.payload });

  it("X-PAYMENT that decodes to JSON but not to an x402 v1 object is a 402 naming it, never a 500", async () => {
    for (const value of [null, 42, "a string", true, [], { x402Version: 1 }]) {
      const response = await fetch(url, jsonPost(diff(1), { "X-PAYMENT": base64(value) }));
      expect(response.status, JSON.stringify(value)).toBe(402);
      expect((await response.json()).reason).toBe("invalid_payload");
    }
  });

  // The HTTP door handed the gate whatever JSON the header decoded to: null, a number, a string or a
  // boolean was a 500 (a TypeError at the gate). Both doors now read it with asPaymentPayload.
  it("PAYMENT-SIGNATURE that decodes to JSON but not to an object is a 402 naming it, never a 500", async () => {
    for (const value of [null, 42, "a string", true]) {
      const response = await fetch(url, jsonPost(diff(1), { "PAYMENT-SIGNATURE": base64(value) }));
      expect(response.status, JSON.stringify(value)).toBe(402);
      expect((await response.json()).reason).toBe("invalid_payload");
    }
  });

  it("X-PAYMENT with a v2 payload inside, another network, less or more than the price: refused, nothing charged", async () => {
    const payer = toolPayer(devPrivateKey(2));
    const before = await balanceOf(payer.address);
    const terms = await termsFor(diff(2));
    const signed = await payer.sign(terms);
    const cheap = await payer.sign({
      ...terms,
      accepts: terms.accepts.map((accepted) => ({ ...accepted, amount: String(PRICE - 1n) })),
    });
    // More than the price would settle more than the ledger records (ledger = on-chain transfers): refused too.
    const dear = await payer.sign({
      ...terms,
      accepts: terms.accepts.map((accepted) => ({ ...accepted, amount: String(PRICE + 1n) })),
    });
    const attempts: [what: string, header: string, value: string][] = [
      ["a v2 payload", "X-PAYMENT", base64(signed)],
      ["base-sepolia", "X-PAYMENT", v1Of(signed, "base-sepolia")],
      ["less than the price", "X-PAYMENT", v1Of(cheap)],
      ["more than the price", "X-PAYMENT", v1Of(dear)],
      [
        "more than the price, price in accepted",
        "PAYMENT-SIGNATURE",
        base64({ ...dear, accepted: signed.accepted }),
      ],
    ];
    for (const [what, header, value] of attempts) {
      const response = await fetch(url, jsonPost(diff(2), { [header]: value }));
      expect(response.status, what).toBe(402);
    }
    expect(await balanceOf(payer.address)).toBe(before);
    // The untouched payment still pays, once.
    expect((await fetch(url, jsonPost(diff(2), { "X-PAYMENT": v1Of(signed) }))).status).toBe(200);
    expect(await balanceOf(payer.address)).toBe(before - PRICE);
  });

  it("both headers at once: PAYMENT-SIGNATURE is the payment, X-PAYMENT is ignored (never a second charge)", async () => {
    const payer = toolPayer(devPrivateKey(3));
    const before = await balanceOf(payer.address);
    const first = await payer.sign(await termsFor(diff(3)));
    const second = await payer.sign(await termsFor(diff(3)));
    const both = await fetch(
      url,
      jsonPost(diff(3), { "PAYMENT-SIGNATURE": base64(first), "X-PAYMENT": v1Of(second) }),
    );
    expect(both.status).toBe(200);
    expect(both.headers.get("PAYMENT-RESPONSE")).toBeTruthy();
    expect(both.headers.get("X-PAYMENT-RESPONSE")).toBeNull();
    // A refused v2 payment is not rescued by a valid v1 one beside it.
    const refused = await fetch(
      url,
      jsonPost(diff(4), { "PAYMENT-SIGNATURE": base64({ x402Version: 2 }), "X-PAYMENT": v1Of(second) }),
    );
    expect(refused.status).toBe(402);
    expect(await balanceOf(payer.address)).toBe(before - PRICE);
  });

  it("a payment-identifier of 10 KB is refused as a payment (402), its 402 stays small, nothing charged", async () => {
    const payer = toolPayer(devPrivateKey(4));
    const before = await balanceOf(payer.address);
    const signed = await payer.sign(await termsFor(diff(5)));
    const bent = {
      ...signed,
      extensions: { "payment-identifier": { info: { required: false, id: "a".repeat(10_240) } } },
    };
    const response = await fetch(url, jsonPost(diff(5), { "PAYMENT-SIGNATURE": base64(bent) }));
    expect(response.status).toBe(402);
    expect((response.headers.get("PAYMENT-REQUIRED") as string).length).toBeLessThan(4096);
    expect((await response.json()).detail).toContain("payment-identifier");
    expect(await balanceOf(payer.address)).toBe(before);
  });

  it("the same payment-identifier from two payers: two purchases, each charged once (the id is the payer's own)", async () => {
    const id = generatePaymentId();
    const payers = [
      toolPayer(devPrivateKey(7), { paymentId: () => id }),
      toolPayer(devPrivateKey(8), { paymentId: () => id }),
    ];
    const before = await Promise.all(payers.map((payer) => balanceOf(payer.address)));
    for (const [index, payer] of payers.entries()) {
      const payment = await payer.sign(await termsFor(diff(10 + index)));
      const response = await fetch(url, jsonPost(diff(10 + index), { "PAYMENT-SIGNATURE": base64(payment) }));
      expect(response.status).toBe(200);
      expect(response.headers.get("x-payment-replayed")).toBeNull();
    }
    expect(await Promise.all(payers.map((payer) => balanceOf(payer.address)))).toEqual(
      before.map((balance) => balance - PRICE),
    );
  });

  it("the same payment through MCP and HTTP at once: one charge, both get the one result", async () => {
    const payer = toolPayer(devPrivateKey(6));
    const before = await balanceOf(payer.address);
    const client = await connectMcp(service.url);
    try {
      const payment = await payer.sign(await termsFor(diff(6)));
      const [viaMcp, viaHttp] = await Promise.all([
        callTool(client, "json-diff", diff(6), payment),
        fetch(url, jsonPost(diff(6), { "PAYMENT-SIGNATURE": base64(payment) })),
      ]);
      expect(viaMcp.isError).toBeFalsy();
      expect(viaHttp.status).toBe(200);
      expect(JSON.parse(await viaHttp.text())).toEqual(viaMcp.structuredContent);
      expect(receiptOf(viaMcp)?.success).toBe(true);
      expect(await balanceOf(payer.address)).toBe(before - PRICE);
    } finally {
      await client.close();
    }
  });
});
