import { createHash, timingSafeEqual } from "node:crypto";
import type { PaymentPayload, PaymentRequirements } from "@x402/core/types";
import { z } from "zod";
import { canonicalJson } from "../../canonical-json.ts";
import type { PaymentRecord } from "../../store/store.ts";
import type { PaidRequest } from "./paid-request.ts";
import { type PaymentTerms, V1_CLIENT_VALID_AFTER_LEAD_SECONDS } from "./terms.ts";

const hex = (bytes?: number) =>
  z
    .string()
    .regex(bytes ? new RegExp(`^0x[0-9a-fA-F]{${bytes * 2}}$`) : /^0x(?:[0-9a-fA-F]{2})+$/)
    .transform((value) => value as `0x${string}`);
const uint = z.string().regex(/^\d{1,78}$/);

/** The EIP-3009 payload of the exact scheme, checked before anything reads it. */
const Eip3009Payload = z.strictObject({
  signature: z
    .string()
    .max(20_002)
    .regex(/^0x(?:[0-9a-fA-F]{2})+$/),
  authorization: z.strictObject({
    from: hex(20),
    to: hex(20),
    value: uint,
    validAfter: uint,
    validBefore: uint,
    nonce: hex(32),
  }),
});
type Eip3009 = z.output<typeof Eip3009Payload>;

/** What the ledger knows of a payment, and all that resolving it from the chain needs. */
export type PaymentFacts = Pick<
  PaymentRecord,
  "paymentKey" | "network" | "asset" | "amount" | "payer" | "payTo" | "nonce" | "validBefore" | "createdAt"
>;

/** A presented payment, checked against the route's terms: what the ledger keys, hashes and settles. */
export interface PaymentIdentity {
  payload: PaymentPayload;
  requirements: PaymentRequirements;
  authorization: Eip3009["authorization"];
  facts: PaymentFacts;
  paymentKey: string;
  payloadHash: string;
  /** The request's fingerprint: a payment pays for this operation with this input only. */
  requestHash: string;
}

/** Why a presented payment cannot be accepted (a 402 with the terms again). */
export interface PaymentRejection {
  reason: string;
  message: string;
}

export const sha256 = (text: string) => createHash("sha256").update(text).digest("hex");

export const safeEqual = (a: string, b: string) =>
  a.length === b.length && timingSafeEqual(Buffer.from(a), Buffer.from(b));

/** The fingerprint of a request: its operation and its canonical input. */
export const requestFingerprint = (operationId: string, input: unknown) =>
  sha256(`${operationId}\n${canonicalJson(input)}`);

/**
 * Checks a decoded payment against the route's terms (`match` is the resource server's requirement
 * matching): its identity, or why it cannot be accepted.
 */
export function identifyPayment(
  request: Pick<PaidRequest, "operation" | "terms" | "input">,
  payment: PaymentPayload,
  match: (payload: PaymentPayload) => PaymentRequirements | undefined,
): PaymentIdentity | PaymentRejection {
  const { terms, operation } = request;
  if (payment?.x402Version !== 2) {
    return { reason: "invalid_x402_version", message: "only x402 version 2 payment payloads are accepted" };
  }
  // A payment names the resource it was signed for (x402 v2 echoes the 402's `resource`): it pays for
  // that operation only, not for another one that happens to cost the same. Another door's name for the
  // same operation will do (its HTTP route, its MCP tool): a payment made through one replays through the other.
  const named = payment.resource?.url;
  const names = [terms.paymentRequired.resource.url, ...(terms.alsoNamed ?? [])];
  if (named !== undefined && !names.some((name) => routeOf(name) === routeOf(named))) {
    const shown =
      typeof named === "string" && !/^https?:/i.test(named) ? named.slice(0, 200) : routeOf(named);
    return quotedElsewhere(shown ?? "another resource", operation.path);
  }
  const requirements =
    typeof payment.accepted === "object" && payment.accepted !== null ? match(payment) : undefined;
  if (!requirements) {
    // Routes at the same price differ in maxTimeoutSeconds only: `accepted` names the one it was quoted for.
    const sibling = terms.siblings?.find(
      (quote) => quote.maxTimeoutSeconds === payment.accepted?.maxTimeoutSeconds,
    );
    if (sibling) return quotedElsewhere(sibling.path, operation.path);
    const { network, asset, amount, payTo, maxTimeoutSeconds } = terms.requirements;
    return {
      reason: "payment_terms_mismatch",
      message: `the payment does not match this route's terms (exact scheme, ${network}, asset ${asset}, amount ${amount}, payTo ${payTo}, maxTimeoutSeconds ${maxTimeoutSeconds})`,
    };
  }
  const parsed = Eip3009Payload.safeParse(payment.payload);
  if (!parsed.success) {
    const where = parsed.error.issues[0]?.path.join(".") || "payload";
    return { reason: "invalid_payload", message: `the EIP-3009 payment payload is malformed at ${where}` };
  }
  const { authorization } = parsed.data;
  const signedFor = signedQuote(authorization, terms);
  if (signedFor !== undefined) return quotedElsewhere(signedFor, operation.path);
  const paymentKey = [requirements.network, requirements.asset, authorization.from, authorization.nonce]
    .join(":")
    .toLowerCase();
  return {
    payload: payment,
    requirements,
    authorization,
    facts: {
      paymentKey,
      network: requirements.network,
      asset: requirements.asset,
      amount: requirements.amount,
      payer: authorization.from.toLowerCase(),
      payTo: requirements.payTo,
      nonce: authorization.nonce.toLowerCase(),
      validBefore: Number(authorization.validBefore),
      // Wall-clock time, as the ledger's own: where settlement latency starts (a resume uses the ledger's).
      createdAt: new Date().toISOString(),
    },
    paymentKey,
    payloadHash: sha256(canonicalJson(parsed.data)),
    requestHash: requestFingerprint(operation.id, request.input),
  };
}

const quotedElsewhere = (quotedFor: string, path: string): PaymentRejection => ({
  reason: "resource_mismatch",
  message: `the payment was signed for ${quotedFor}, not ${path}; sign a payment for this route`,
});

/**
 * The route at the same price whose quote the authorization's own signed validity names, if it names
 * another one than this: an official x402 v1 client signs validAfter = now − 600 and validBefore = now +
 * maxTimeoutSeconds (+ 1 when a second ticks between its two reads of the clock), and routes at the same
 * price have distinct maxTimeoutSeconds (terms.ts, routeQuotes). Other clients (the v2 one signs
 * validAfter 0) name no quote this way.
 */
function signedQuote(
  authorization: Pick<Eip3009["authorization"], "validAfter" | "validBefore">,
  terms: PaymentTerms,
): string | undefined {
  const span = BigInt(authorization.validBefore) - BigInt(authorization.validAfter);
  const names = (maxTimeoutSeconds: number) => {
    const lead = span - BigInt(maxTimeoutSeconds + V1_CLIENT_VALID_AFTER_LEAD_SECONDS);
    return lead === 0n || lead === 1n;
  };
  if (names(terms.requirements.maxTimeoutSeconds)) return undefined;
  return terms.siblings?.find((quote) => names(quote.maxTimeoutSeconds))?.path;
}

/** The path a resource URL names (the base URL may differ between a proxy's name and the instance's). */
function routeOf(url: unknown): string | undefined {
  if (typeof url !== "string") return undefined;
  try {
    return new URL(url).pathname;
  } catch {
    return url.slice(0, 200);
  }
}
