/**
 * Why a settlement call came back without a final outcome. A leaf, shared by the facilitator (which says it)
 * and the resource server (which then asks the token what became of the payment).
 */

/** The reference facilitator's "broadcast, not confirmed in time"; x402 core then settles the same payment once more at once. */
export const SETTLEMENT_PENDING = "settlement_pending";

/**
 * The same as this service's gate reads it from its in-process facilitator (`withOneReceiptWait`): not one x402
 * core retries, so a paid call waits for its receipt once (X402_SETTLEMENT_TIMEOUT_MS), not twice.
 */
export const SETTLEMENT_UNCONFIRMED = "settlement_unconfirmed";

/** A settlement broadcast but not confirmed: the token decides whether it paid. */
export const isUnconfirmedSettlement = (reason: string | undefined): boolean =>
  reason === SETTLEMENT_PENDING || reason === SETTLEMENT_UNCONFIRMED;
