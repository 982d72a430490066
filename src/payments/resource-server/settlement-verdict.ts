import type { SettleResponse } from "@x402/core/types";
import type { AuthorizationOutcome } from "../settler/authorization-state.ts";

/** After validBefore (+ clock skew) an unused authorization can no longer land: the payment is over. */
export const EXPIRY_MARGIN_SECONDS = 30;

/** What deciding a settlement whose answer did not say "settled" may look at. */
export interface SettlementFacts {
  /** What the token says became of the authorization; undefined when the chain cannot be asked. */
  onChain: AuthorizationOutcome | undefined;
  /** The facilitator's refusal of the settlement, if it refused one. */
  refusal?: string;
  /**
   * This very attempt was refused and nothing of it can be pending (not a resumed payment, which an
   * earlier attempt may have broadcast): with the authorization unused, the refusal is final.
   */
  refusalStands?: boolean;
  /** The clock, epoch milliseconds. */
  nowMs: number;
  /** The authorization's validBefore, epoch seconds. */
  validBefore: number;
}

export type SettlementVerdict =
  /** The token moved the price to the payee in this transaction: charged, the result is delivered. */
  | { verdict: "settled"; transaction: `0x${string}` }
  /** The authorization is cancelled or spent elsewhere: never paid, the result is withheld. */
  | { verdict: "failed"; cause: "consumed"; transaction?: `0x${string}` }
  /** The facilitator's refusal is final: nothing was charged, the result is withheld. */
  | { verdict: "failed"; cause: "refused"; refusal: string }
  /** Unused after it expired: nothing can be charged any more. */
  | { verdict: "released"; cause: "expired" }
  /** Not decided yet (unused and still valid, or the chain cannot tell): the payment stays open. */
  | { verdict: "keep-open" };

/**
 * The settlement verdict, from the token's record of the authorization and the clock. The token
 * decides: paid → settled; used otherwise → failed; unused → the refusal stands if it is this
 * attempt's own, else released once a transfer broadcast before validBefore can no longer land
 * (validBefore plus clock skew), else kept open. Without chain access only a refusal is trusted.
 */
export function settlementVerdict(facts: SettlementFacts): SettlementVerdict {
  const { onChain, refusal } = facts;
  if (!onChain) {
    return refusal === undefined
      ? { verdict: "keep-open" }
      : { verdict: "failed", cause: "refused", refusal };
  }
  if (onChain.state === "paid") return { verdict: "settled", transaction: onChain.transaction };
  if (onChain.state === "consumed")
    return { verdict: "failed", cause: "consumed", transaction: onChain.transaction };
  if (facts.refusalStands && refusal !== undefined) return { verdict: "failed", cause: "refused", refusal };
  if (facts.nowMs / 1000 >= facts.validBefore + EXPIRY_MARGIN_SECONDS)
    return { verdict: "released", cause: "expired" };
  return { verdict: "keep-open" };
}

/** What a payment resumed by a retry needs, once the token has been asked (undefined: no chain access). */
export type ResumeVerdict = "decide" | "settle";

/**
 * A resumed payment (its owner stopped, or its settlement is unknown) is settled again only while its
 * authorization is unused, as far as the token can tell, and still valid; otherwise the settlement
 * verdict decides it from the token (a transfer broadcast earlier may still land: "decide" waits for it).
 */
export function resumeVerdict(
  facts: Pick<SettlementFacts, "onChain" | "nowMs" | "validBefore">,
): ResumeVerdict {
  if (facts.onChain && facts.onChain.state !== "unused") return "decide";
  return facts.nowMs / 1000 >= facts.validBefore ? "decide" : "settle";
}

/** The receipt of a payment the token says was paid in this transaction (no facilitator answer to copy). */
export function onChainReceipt(
  payment: { network: string; payer: string },
  transaction: string,
): SettleResponse {
  return {
    success: true,
    transaction,
    network: payment.network as `${string}:${string}`,
    payer: payment.payer,
  };
}
