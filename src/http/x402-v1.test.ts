import { decodePaymentResponseHeader, encodePaymentResponseHeader } from "@x402/core/http";
import { describe, expect, it } from "vitest";
import { decoded, standInPayment, standInTerms } from "../../test/helpers/gate-stand-ins.ts";
import { decodeV1Payment, paymentRequiredBody, v1Answer, v1NetworkName } from "./x402-v1.ts";

const v1Header = (payment: unknown) => Buffer.from(JSON.stringify(payment)).toString("base64");
const signed = decoded(standInPayment(1)).payload;

describe("x402 v1 over HTTP", () => {
  it("names CAIP-2 EVM networks as v1 does, from the SDK's table", () => {
    expect(v1NetworkName("eip155:8453")).toBe("base");
    expect(v1NetworkName("eip155:84532")).toBe("base-sepolia");
    expect(v1NetworkName("eip155:999999")).toBeUndefined();
  });

  it("reads an X-PAYMENT for the route's scheme and network as the v2 payment of the same authorization", () => {
    const payment = decodeV1Payment(
      v1Header({ x402Version: 1, scheme: "exact", network: "base", payload: signed }),
      standInTerms,
    );
    expect(payment).toEqual({
      x402Version: 2,
      resource: standInTerms.paymentRequired.resource,
      accepted: standInTerms.requirements,
      payload: signed,
    });
  });

  it("keeps another network or scheme as the payment says (the gate refuses it), and names what is unreadable", () => {
    const sepolia = decodeV1Payment(
      v1Header({ x402Version: 1, scheme: "exact", network: "base-sepolia", payload: signed }),
      standInTerms,
    );
    expect(sepolia).toMatchObject({ accepted: { network: "eip155:84532", scheme: "exact" } });
    expect(decodeV1Payment("%%%", standInTerms)).toEqual({ unreadable: expect.stringContaining("base64") });
    expect(decodeV1Payment(v1Header({ x402Version: 2, payload: signed }), standInTerms)).toEqual({
      unreadable: expect.stringContaining("x402Version"),
    });
    expect(
      decodeV1Payment(v1Header({ x402Version: 1, scheme: "exact", network: "base" }), standInTerms),
    ).toEqual({ unreadable: expect.stringContaining("payload") });
  });

  it("gives a v1 caller the receipt in X-PAYMENT-RESPONSE with the v1 network name", () => {
    const receipt = {
      success: true,
      transaction: `0x${"ab".repeat(32)}`,
      network: "eip155:8453",
      payer: "0x2",
    };
    const answer = v1Answer({
      status: 200,
      headers: {
        "content-type": "application/json",
        "PAYMENT-RESPONSE": encodePaymentResponseHeader(receipt as never),
      },
      body: "{}",
    });
    expect(answer.headers["PAYMENT-RESPONSE"]).toBeUndefined();
    expect(decodePaymentResponseHeader(answer.headers["X-PAYMENT-RESPONSE"] as string)).toEqual({
      ...receipt,
      network: "base",
    });
    const refusal = { status: 409, headers: { "content-type": "application/problem+json" }, body: "{}" };
    expect(v1Answer(refusal)).toBe(refusal);
  });

  it("writes a 402 body a v1 client pays from, with the v2 amount beside maxAmountRequired", () => {
    const body = paymentRequiredBody({ ...standInTerms.paymentRequired, error: "why" });
    expect(body).toMatchObject({
      x402Version: 1,
      error: "why",
      resource: standInTerms.paymentRequired.resource,
    });
    expect(body.accepts).toEqual([
      expect.objectContaining({ network: "base", maxAmountRequired: "2000000", amount: "2000000" }),
    ]);
  });

  it("keeps each entry's v2 amount its own when an entry without a v1 network name is left out", () => {
    const [base] = standInTerms.paymentRequired.accepts;
    const body = paymentRequiredBody({
      ...standInTerms.paymentRequired,
      accepts: [{ ...base, network: "eip155:999999", amount: "1" }, base],
    } as typeof standInTerms.paymentRequired);
    expect(body.accepts).toEqual([
      expect.objectContaining({ network: "base", maxAmountRequired: "2000000", amount: "2000000" }),
    ]);
  });
});
