import {
  decodePaymentResponseHeader,
  decodePaymentSignatureHeader,
  encodePaymentResponseHeader,
} from "@x402/core/http";
import { PaymentPayloadV1Schema } from "@x402/core/schemas";
import type { PaymentPayload, PaymentRequired } from "@x402/core/types";
import type { PaymentRequirementsV1, SettleResponseV1 } from "@x402/core/types/v1";
import { EVM_NETWORK_CHAIN_ID_MAP, getEvmChainIdV1 } from "@x402/evm/v1";
import { PAYMENT_RESPONSE_HEADER, X_PAYMENT_HEADER, X_PAYMENT_RESPONSE_HEADER } from "../payments/headers.ts";
import { paymentBoundsProblem } from "../payments/resource-server/payload-bounds.ts";
import type { PaymentTerms } from "../payments/resource-server/terms.ts";
import type { StoredOutcome } from "../store/store.ts";

/**
 * x402 v1 over HTTP, the dialect of the v1 clients (`x402-fetch`, `x402-axios`): the payment in X-PAYMENT
 * (scheme and a network name such as `base` instead of `accepted` and `eip155:8453`), the receipt in
 * X-PAYMENT-RESPONSE, the terms in the 402's JSON body. A second mapping in the HTTP door onto the same
 * gate: a v1 payment is read as the v2 payment of the same signed authorization, so the ledger keys it
 * (network eip155:8453) the same whichever dialect presents it, and a replay through the other one is a
 * replay. The answers the ledger keeps are v2 (x402-answers.ts); a v1 caller gets them with the v1 receipt.
 */

/** The v1 name of a CAIP-2 EVM network (`eip155:8453` → `base`), as the SDK's v1 table names it. */
export function v1NetworkName(network: string): string | undefined {
  const chainId = Number(network.split(":")[1]);
  return Object.entries(EVM_NETWORK_CHAIN_ID_MAP).find(([, id]) => id === chainId)?.[0];
}

/**
 * The route's terms as a v1 client reads them (maxAmountRequired, resource, network name), each entry also
 * with its v2 `amount`; an entry on a network v1 has no name for, or in a scheme other than `exact`, is left out.
 */
function v1Requirements(paymentRequired: PaymentRequired): (PaymentRequirementsV1 & { amount: string })[] {
  const { resource } = paymentRequired;
  return paymentRequired.accepts.flatMap((accepted) => {
    const network = v1NetworkName(accepted.network);
    // x402 v1 has no batch-settlement: its clients are offered `exact` only.
    if (network === undefined || accepted.scheme !== "exact") return [];
    return [
      {
        scheme: accepted.scheme,
        network,
        maxAmountRequired: accepted.amount,
        resource: resource.url,
        description: resource.description ?? "",
        mimeType: resource.mimeType ?? "",
        payTo: accepted.payTo,
        maxTimeoutSeconds: accepted.maxTimeoutSeconds,
        asset: accepted.asset,
        extra: accepted.extra ?? {},
        amount: accepted.amount,
      } as PaymentRequirementsV1 & { amount: string },
    ];
  });
}

/**
 * A 402's JSON body in both dialects: the x402 v1 PaymentRequired a v1 client reads (`x402Version: 1`,
 * `error`, `accepts` with `maxAmountRequired`, `resource`, `network: "base"`), each entry also with the
 * v2 `amount`, and the v2 `resource` and `extensions`. A v2 client reads the PAYMENT-REQUIRED header,
 * which carries the v2 object unchanged.
 */
export function paymentRequiredBody(paymentRequired: PaymentRequired): Record<string, unknown> {
  return {
    x402Version: 1,
    error: paymentRequired.error ?? "X-PAYMENT header is required",
    accepts: v1Requirements(paymentRequired),
    resource: paymentRequired.resource,
    ...(paymentRequired.extensions ? { extensions: paymentRequired.extensions } : {}),
  };
}

/**
 * An X-PAYMENT header as the v2 payment of the same authorization, for the gate: a v1 payload (checked
 * with the SDK's v1 schema) for this route's scheme and network is taken as accepting the route's terms
 * (what it signed is then verified against them, as any payment); another scheme or network keeps its own,
 * which the gate refuses as not matching the terms.
 */
export function decodeV1Payment(
  header: string,
  terms: PaymentTerms,
): PaymentPayload | { unreadable: string } {
  let raw: unknown;
  try {
    raw = decodePaymentSignatureHeader(header);
  } catch {
    return { unreadable: `${X_PAYMENT_HEADER} is not a base64-encoded x402 payment` };
  }
  const problem = paymentBoundsProblem(raw);
  if (problem !== undefined) return { unreadable: `${X_PAYMENT_HEADER} is refused unread: ${problem}` };
  const parsed = PaymentPayloadV1Schema.safeParse(raw);
  if (!parsed.success) {
    const where = parsed.error.issues[0]?.path.join(".") || "payment";
    return { unreadable: `${X_PAYMENT_HEADER} is not an x402 v1 payment (at ${where})` };
  }
  const { scheme, network, payload } = parsed.data;
  const { requirements, paymentRequired } = terms;
  const named = caipNetwork(network);
  const accepted =
    scheme === requirements.scheme && named === requirements.network
      ? requirements
      : { ...requirements, scheme, network: (named ?? network) as PaymentPayload["accepted"]["network"] };
  // The payment-identifier extension, if a v1 client sends one beside its payload (v1 has no extensions).
  const { extensions } = raw as { extensions?: unknown };
  return {
    x402Version: 2,
    resource: paymentRequired.resource,
    accepted,
    payload,
    ...(typeof extensions === "object" && extensions !== null
      ? { extensions: extensions as Record<string, unknown> }
      : {}),
  };
}

/** A v1 network name as CAIP-2 (`base` → `eip155:8453`), if the SDK knows it. */
function caipNetwork(name: string): string | undefined {
  try {
    return `eip155:${getEvmChainIdV1(name)}`;
  } catch {
    return undefined;
  }
}

/** An answer for a v1 caller: its receipt in X-PAYMENT-RESPONSE, with the v1 network name. */
export function v1Answer(answer: StoredOutcome): StoredOutcome {
  const receipt = answer.headers[PAYMENT_RESPONSE_HEADER];
  if (receipt === undefined) return answer;
  const { [PAYMENT_RESPONSE_HEADER]: _, ...headers } = answer.headers;
  const settlement = decodePaymentResponseHeader(receipt);
  const network = (v1NetworkName(settlement.network) ?? settlement.network) as SettleResponseV1["network"];
  const v1: SettleResponseV1 = { ...settlement, network };
  return { ...answer, headers: { ...headers, [X_PAYMENT_RESPONSE_HEADER]: encodePaymentResponseHeader(v1) } };
}
