import type { x402ResourceServer } from "@x402/core/server";
import { SettleError, VerifyError } from "@x402/core/types";
import type { JobError } from "../../jobs/queue.ts";
import type { HeldAuthorization, PaymentRecord } from "../../store/store.ts";
import { isUnconfirmedSettlement } from "../settlement-reasons.ts";

/** Beyond two settlement waits, the margin a held payment keeps between its job's deadline and its expiry. */
export const SETTLE_MARGIN_MS = 30_000;

/** The first line of a facilitator's refusal: viem appends a multi-line call dump. */
export const firstLine = (error: {
  errorMessage?: string;
  errorReason?: string;
  invalidMessage?: string;
  invalidReason?: string;
}) =>
  (
    error.errorMessage ??
    error.invalidMessage ??
    error.errorReason ??
    error.invalidReason ??
    "settlement refused"
  ).split("\n")[0] as string;

/** Until when a held payment's job may run: its authorization's expiry less the time to settle it. */
export function jobDeadline(record: Pick<PaymentRecord, "validBefore">, settlementTimeoutMs: number): number {
  return record.validBefore * 1000 - 2 * settlementTimeoutMs - SETTLE_MARGIN_MS;
}

export const paymentRefused = (reason: string): JobError => ({
  code: "payment_failed",
  message: `the payment could not be settled (${reason}); the result is withheld`,
});

export const deadlinePassed = (record: PaymentRecord): JobError => ({
  code: "deadline_passed",
  message: `the job did not finish before its payment's deadline (validBefore ${new Date(record.validBefore * 1000).toISOString()}); nothing was charged`,
});

/**
 * One attempt to settle a held authorization once its job delivered: verify again (the payer's balance
 * may have moved since acceptance; a transfer that would revert is never sent), then settle. Settled →
 * its transaction; refused → why; pending or unknown (told to `unknown`) → neither: the token decides.
 */
export async function settleHeld(
  resourceServer: Pick<x402ResourceServer, "verifyPayment" | "settlePayment">,
  held: HeldAuthorization,
  unknown: (error: unknown) => void,
): Promise<{ transaction: string } | { refusal?: string }> {
  try {
    const verified = await resourceServer.verifyPayment(held.payload, held.requirements);
    if (!verified.isValid) {
      return {
        refusal: verified.invalidMessage ?? verified.invalidReason ?? "the payment no longer verifies",
      };
    }
    const settlement = await resourceServer.settlePayment(held.payload, held.requirements);
    if (settlement.success) return { transaction: settlement.transaction };
    return isUnconfirmedSettlement(settlement.errorReason) ? {} : { refusal: firstLine(settlement) };
  } catch (error) {
    if (error instanceof SettleError || error instanceof VerifyError) return { refusal: firstLine(error) };
    unknown(error);
    return {};
  }
}
