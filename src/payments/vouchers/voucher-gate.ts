import type { FacilitatorClient } from "@x402/core/server";
import type { PaymentPayload, PaymentRequirements, SettleResponse } from "@x402/core/types";
import { canonicalJson } from "../../canonical-json.ts";
import { Problem } from "../../problem.ts";
import type { StoredOutcome } from "../../store/store.ts";
import type {
  ChannelRecord,
  OnchainChannelState,
  VoucherChannelStore,
} from "../../store/voucher-channels.ts";
import {
  type GateOutcome,
  type KeptAnswers,
  type PaidRequest,
  paymentsUnavailable,
  RetryLater,
} from "../resource-server/paid-request.ts";
import { requestFingerprint, sha256 } from "../resource-server/payment-identity.ts";
import type { PaymentTerms } from "../resource-server/terms.ts";
import { type HandlerResult, VoucherCalls, type VoucherVerdict } from "./voucher-calls.ts";
import { corrective } from "./voucher-corrective.ts";
import { type CheckedVoucherPayload, checkVoucherPayload, onchainStateOf } from "./voucher-payload.ts";
import { refundAnswerBody, VoucherRefunds } from "./voucher-refunds.ts";
import { BATCH_SETTLEMENT } from "./voucher-terms.ts";
import type { WithdrawalWatch } from "./withdrawal-watch.ts";

const CHANNEL_BUSY = "invalid_batch_settlement_evm_channel_busy";
const EXCEEDS_BALANCE = "invalid_batch_settlement_evm_cumulative_exceeds_balance";

/** Whether a decoded payment chose the batch-settlement entry of the terms (vouchers). */
export const isVoucherPayment = (payment: PaymentPayload): boolean =>
  typeof payment.accepted === "object" && payment.accepted?.scheme === BATCH_SETTLEMENT;

/**
 * The gate's voucher path (x402 `batch-settlement`): a deposit or voucher payload checked against the
 * route's batch-settlement quote, then one call on its channel under the channel's lease (VoucherCalls):
 * verified, the handler run, and the charge committed with the answer. The facilitator verifies what only
 * the chain can tell (a deposit, a voucher of a contract wallet, a channel this instance has not seen);
 * a following voucher of an EOA payer is checked here against the mirrored channel (its signature was
 * recovered by checkVoucherPayload), so a paid call costs no round trip.
 */
export class VoucherGate {
  private readonly calls: VoucherCalls;
  private readonly refunds: VoucherRefunds;

  constructor(
    private readonly options: {
      facilitator: Pick<FacilitatorClient, "verify" | "settle">;
      store: VoucherChannelStore;
      answers: KeptAnswers;
      /** At least the longest a request may take: a live call's channel is never taken over. */
      leaseMs: number;
      now: () => number;
      /** The chain's withdrawals: when the mirror cannot be trusted, and when a voucher is too late. */
      withdrawals?: Pick<WithdrawalWatch, "mirrorMayMiss" | "closesBeforeClaim">;
      /** A call was charged: the claim policy looks at the channel after it. */
      charged?: (channel: ChannelRecord) => void;
    },
  ) {
    this.calls = new VoucherCalls({ store: options.store, leaseMs: options.leaseMs, now: options.now });
    this.refunds = new VoucherRefunds(options);
  }

  async handle(request: PaidRequest, payment: PaymentPayload): Promise<GateOutcome> {
    const { terms, operation } = request;
    const quote = terms.voucher;
    const reject = (reason: string, message: string): GateOutcome => ({
      kind: "refused",
      problem: this.options.answers.rejection(terms, reason, message),
    });
    if (!quote)
      return reject("payment_terms_mismatch", `${operation.path} is paid with the exact scheme only`);
    const accepted = payment.accepted;
    const sameQuote = (["network", "asset", "amount", "payTo"] as const).every(
      (field) => String(accepted[field]).toLowerCase() === String(quote[field]).toLowerCase(),
    );
    if (payment.x402Version !== 2 || !sameQuote) {
      return reject(
        "payment_terms_mismatch",
        `the payment does not match this route's batch-settlement terms (${quote.network}, asset ${quote.asset}, amount ${quote.amount}, payTo ${quote.payTo})`,
      );
    }
    const checked = await checkVoucherPayload(payment.payload, quote);
    if ("reason" in checked) return reject(checked.reason, checked.message);
    if (checked.type === "refund") return this.refund(request, payment, checked);
    const facilitator = this.options.facilitator;
    const syncedAt = () => this.options.now();
    const fromVerify = async (): Promise<VoucherVerdict> => {
      const verified = await facilitator.verify(payment, quote);
      if (!verified.isValid) return { valid: false, reason: verified.invalidReason ?? "invalid_payload" };
      return { valid: true, onchain: onchainStateOf(verified.extra), syncedAt: syncedAt() };
    };
    let depositTransaction = "";
    /** The payer's withdrawal finalizes before this voucher could be claimed. */
    let withdrawing = false;
    const outcome = await this.calls.call({
      channelId: checked.channelId,
      network: quote.network,
      config: checked.config,
      voucher: checked.voucher,
      payloadHash: sha256(canonicalJson(payment.payload)),
      requestHash: requestFingerprint(operation.id, request.input),
      door: request.door,
      operationId: operation.id,
      requestId: request.requestId,
      price: quote.amount,
      verify: async (channel) => {
        const withdrawals = this.options.withdrawals;
        const mirror = channel?.onchain;
        const verdict =
          checked.type !== "deposit" &&
          checked.signatureChecked &&
          mirror &&
          !withdrawals?.mirrorMayMiss(checked.channelId, channel.onchainSyncedAt)
            ? // Still the mirror read at its own time, not now: a withdrawal seen since must keep it stale.
              localCheck(checked, mirror, channel.onchainSyncedAt ?? 0)
            : await fromVerify();
        // Refused before a deposit moves money or the handler runs: nothing is charged.
        withdrawing =
          verdict.valid && !!withdrawals?.closesBeforeClaim(verdict.onchain, checked.config.withdrawDelay);
        return withdrawing ? { valid: false, reason: EXCEEDS_BALANCE } : verdict;
      },
      ...(checked.type === "deposit"
        ? {
            deposit: async (): Promise<VoucherVerdict> => {
              const settled = await facilitator.settle(payment, quote);
              if (!settled.success) return { valid: false, reason: settled.errorReason ?? "invalid_payload" };
              depositTransaction = settled.transaction;
              const state = (settled.extra as { channelState?: unknown } | undefined)?.channelState;
              return { valid: true, onchain: onchainStateOf(state), syncedAt: syncedAt() };
            },
          }
        : {}),
      run: () => this.run(request, checked, quote.amount, () => depositTransaction),
    });
    switch (outcome.kind) {
      case "delivered":
        this.options.charged?.(outcome.channel);
        return { kind: "answer", answer: outcome.outcome, replayed: false };
      case "replayed":
        return { kind: "answer", answer: outcome.outcome, replayed: true };
      case "failed":
        return { kind: "answer", answer: outcome.outcome, replayed: false };
      case "refused":
        return reject(
          outcome.reason,
          withdrawing
            ? "a withdrawal pending on this channel finalizes before this voucher could be claimed: the channel takes no new vouchers (nothing was charged); pay from another channel"
            : refusalMessage(outcome.reason),
        );
      case "mismatch":
        return { kind: "refused", problem: corrective(terms, outcome.channel) };
      case "busy":
        throw this.busy(terms, outcome.until);
      case "lost":
        throw paymentsUnavailable(
          "this call's hold on its channel ran out before it could be charged; nothing was charged; retry the same request",
        );
    }
  }

  /** A channel another call holds: a 402 with channel_busy and Retry-After (nothing was charged). */
  private busy(terms: PaymentTerms, until: number): RetryLater {
    const seconds = Math.max(1, Math.ceil((until - this.options.now()) / 1000));
    const problem = this.options.answers.rejection(
      terms,
      CHANNEL_BUSY,
      "another call on this channel is being answered; retry this one after it (nothing was charged)",
    );
    return new RetryLater(problem, Math.min(seconds, 5));
  }

  /** A cooperative refund (voucher-refunds.ts): no operation runs; its answer carries the refund's settlement. */
  private async refund(
    request: PaidRequest,
    payment: PaymentPayload,
    checked: CheckedVoucherPayload,
  ): Promise<GateOutcome> {
    const { terms } = request;
    const outcome = await this.refunds.refund(payment, checked, terms.voucher as PaymentRequirements);
    switch (outcome.kind) {
      case "refunded": {
        const answer: StoredOutcome = {
          status: 200,
          headers: { "content-type": "application/json" },
          body: refundAnswerBody(outcome.settlement),
        };
        return {
          kind: "answer",
          answer: this.options.answers.withReceipt(answer, outcome.settlement),
          replayed: false,
        };
      }
      case "refused":
        return {
          kind: "refused",
          problem: this.options.answers.rejection(terms, outcome.reason, outcome.message),
        };
      case "mismatch":
        return { kind: "refused", problem: corrective(terms, outcome.channel) };
      case "busy":
        throw this.busy(terms, outcome.until);
      case "unknown":
        throw paymentsUnavailable(
          "the refund was sent but its outcome is not known yet; the channel is held until the chain is read again: retry the refund in a minute",
        );
    }
  }

  /** Runs the operation; its answer carries the charge and the channel after it in PAYMENT-RESPONSE. */
  private async run(
    request: PaidRequest,
    checked: CheckedVoucherPayload,
    price: string,
    depositTransaction: () => string,
  ): Promise<HandlerResult> {
    const { operation, log } = request;
    const paymentKey = `${request.terms.voucher?.network}:${checked.channelId}:${checked.voucher.maxClaimableAmount}`;
    try {
      const result = await request.run({ paymentKey, payer: checked.config.payer });
      const answer: StoredOutcome = {
        status: result.status ?? 200,
        headers: { "content-type": operation.outputContentType, ...result.headers },
        ...(result.file
          ? { body: "", file: result.file }
          : { body: result.bodyText ?? JSON.stringify(result.body) }),
      };
      return { ok: true, outcome: this.options.answers.withReceipt(answer, await settlementOf()) };
    } catch (error) {
      if (!(error instanceof Problem)) log.error({ err: error }, "operation failed");
      const problem =
        error instanceof Problem
          ? error
          : Problem.of("internal-error", "the operation failed unexpectedly; nothing was charged");
      return { ok: false, outcome: problem.toResponse(operation.path) };
    }

    async function settlementOf(): Promise<SettleResponse> {
      const channel = checked.voucher.maxClaimableAmount;
      return {
        success: true,
        payer: checked.config.payer,
        transaction: depositTransaction(),
        network: request.terms.voucher?.network as SettleResponse["network"],
        amount: price,
        extra: {
          chargedAmount: price,
          channelState: { channelId: checked.channelId, chargedCumulativeAmount: channel },
        },
      };
    }
  }
}

/**
 * A following voucher of an EOA payer, checked against the channel as this service last read it: its
 * signature was recovered already; the ceiling must be covered by the balance. The balance only grows
 * by deposits (which come through here) and shrinks by a finalized withdrawal, which needs the delay to
 * pass after an initiation the claimer watches for.
 */
function localCheck(
  checked: CheckedVoucherPayload,
  onchain: OnchainChannelState,
  syncedAt: number,
): VoucherVerdict {
  if (BigInt(checked.voucher.maxClaimableAmount) > BigInt(onchain.balance)) {
    return { valid: false, reason: EXCEEDS_BALANCE };
  }
  return { valid: true, onchain, syncedAt };
}

const refusalMessage = (reason: string): string =>
  reason === EXCEEDS_BALANCE
    ? "the voucher's cumulative amount is above the channel's balance: deposit more (a deposit payload)"
    : `the batch-settlement payment was refused (${reason}); nothing was charged`;
