import type { PaymentPayload } from "@x402/core/types";
import { describe, expect, it } from "vitest";
import {
  decoded,
  standInPayment,
  standInRequirements,
  standInTerms,
} from "../../../test/helpers/gate-stand-ins.ts";
import { csvCleanup } from "../../operations/csv-cleanup/index.ts";
import { identifyPayment, type PaymentIdentity, type PaymentRejection } from "./payment-identity.ts";

const request = { operation: csvCleanup, terms: standInTerms, input: { rows: [{ id: "1" }] } };
const payment = () => decoded(standInPayment(1)) as PaymentPayload;
const matches = () => standInRequirements;
const identify = (payload: PaymentPayload, input: unknown = request.input) =>
  identifyPayment({ ...request, input }, payload, matches);
const rejection = (result: PaymentIdentity | PaymentRejection) =>
  "reason" in result ? result.reason : "accepted";

describe("a presented payment checked against the route's terms (no I/O)", () => {
  it.each<[string, (payload: PaymentPayload) => PaymentPayload, string]>([
    ["a well-formed exact payment of these terms", (p) => p, "accepted"],
    ["x402 version 1", (p) => ({ ...p, x402Version: 1 }) as PaymentPayload, "invalid_x402_version"],
    [
      "no accepted requirements",
      (p) => ({ ...p, accepted: undefined }) as unknown as PaymentPayload,
      "payment_terms_mismatch",
    ],
    [
      "signed for another route (same price)",
      (p) => ({ ...p, resource: { url: "http://x/v1/unit-convert" } }) as PaymentPayload,
      "resource_mismatch",
    ],
    [
      "signed for this route under another base URL",
      (p) => ({ ...p, resource: { url: "https://proxy.example/v1/csv-cleanup" } }) as PaymentPayload,
      "accepted",
    ],
    [
      "an authorization missing its nonce",
      (p) => withAuthorization(p, { nonce: undefined }),
      "invalid_payload",
    ],
    ["a nonce that is not 32 bytes", (p) => withAuthorization(p, { nonce: "0x01" }), "invalid_payload"],
    [
      "an extra field in the payload",
      (p) => ({ ...p, payload: { ...p.payload, extra: 1 } }),
      "invalid_payload",
    ],
  ])("%s → %s", (_, change, expected) => {
    expect(rejection(identify(change(payment())))).toBe(expected);
  });

  it("a payment signed for the operation's other door (its MCP tool) pays here when the terms name that door", () => {
    const signedFor = (url: string) => ({ ...payment(), resource: { url } }) as PaymentPayload;
    const bothDoors = { ...request, terms: { ...standInTerms, alsoNamed: ["mcp://tool/csv-cleanup"] } };
    const check = (req: typeof request, url: string) =>
      rejection(identifyPayment(req, signedFor(url), matches));
    expect(check(bothDoors, "mcp://tool/csv-cleanup")).toBe("accepted");
    expect(check(bothDoors, "mcp://tool/unit-convert")).toBe("resource_mismatch");
    expect(check(request, "mcp://tool/csv-cleanup")).toBe("resource_mismatch");
  });

  it("the same payment has one key whatever its case; the request fingerprint tells inputs apart", () => {
    const first = identify(payment()) as PaymentIdentity;
    const upper = withAuthorization(payment(), {
      from: (payment().payload.authorization as { from: string }).from.toUpperCase().replace("0X", "0x"),
    });
    expect((identify(upper) as PaymentIdentity).paymentKey).toBe(first.paymentKey);
    expect((identify(payment(), { rows: [{ id: "2" }] }) as PaymentIdentity).requestHash).not.toBe(
      first.requestHash,
    );
    expect((identify(payment(), { rows: [{ id: "1" }] }) as PaymentIdentity).requestHash).toBe(
      first.requestHash,
    );
  });
});

function withAuthorization(payload: PaymentPayload, change: Record<string, unknown>): PaymentPayload {
  const inner = payload.payload as { authorization: Record<string, unknown> };
  return { ...payload, payload: { ...inner, authorization: { ...inner.authorization, ...change } } };
}
