import type { PaymentRequirements } from "@x402/core/types";
import type { OperationKind } from "../../contract/operation.ts";

/** The x402 scheme name of vouchers: a deposit in an on-chain channel, a signed cumulative voucher per call. */
export const BATCH_SETTLEMENT = "batch-settlement";

/** The channel parameters a batch-settlement quote names (coinbase/x402 scheme_batch_settlement_evm.md). */
export interface VoucherOffer {
  receiverAuthorizer: `0x${string}`;
  /** Seconds; 900 to 2,592,000. */
  withdrawDelay: number;
  /** Atomic units the client should deposit; a route's price is quoted instead when higher. */
  minDeposit: string;
}

/**
 * Operations whose answer is delivered in the request (sync, product) offer vouchers. An async job's
 * payment is held, unsettled, until its job delivers; a voucher's charge is committed with the answer it
 * paid for, and a job's 202 is not that answer (docs/payments.md, "Vouchers").
 */
export const offersVouchers = (operation: { kind: OperationKind }) => operation.kind !== "async";

/** A route's `batch-settlement` quote: its `exact` quote's price, payee, asset and timeout, with the channel's parameters. */
export function voucherRequirements(
  exact: PaymentRequirements,
  token: { assetName: string; assetVersion: string },
  offer: VoucherOffer,
): PaymentRequirements {
  return {
    ...exact,
    scheme: BATCH_SETTLEMENT,
    extra: {
      receiverAuthorizer: offer.receiverAuthorizer,
      withdrawDelay: offer.withdrawDelay,
      name: token.assetName,
      version: token.assetVersion,
      // The spec: when present, at least the amount.
      minDeposit: BigInt(offer.minDeposit) >= BigInt(exact.amount) ? offer.minDeposit : exact.amount,
    },
  };
}
