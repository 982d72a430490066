import { randomUUID } from "node:crypto";
import type { FacilitatorClient } from "@x402/core/server";
import type { PaymentPayload, PaymentRequirements, SettleResponse } from "@x402/core/types";
import type { StoredOutcome } from "../../store/store.ts";
import type {
  ChannelRecord,
  OnchainChannelState,
  VoucherChannelStore,
} from "../../store/voucher-channels.ts";
import { type CheckedVoucherPayload, checksummedConfig, onchainStateOf } from "./voucher-payload.ts";

/**
 * Cooperative refunds (x402 `batch-settlement`, payload type `refund`): the payer asks for the unclaimed
 * rest of its channel back, or part of it, with a zero-charge voucher (its ceiling is what this service
 * charged). No operation runs. Under the channel's lease, so no paid call on the channel is between its
 * verification and its charge meanwhile (a call in flight makes the refund wait: channel_busy), the
 * refund payload is completed as the spec says (amount resolved and capped to balance − charged, the
 * refund nonce, and a claim of everything charged, so the payer gets back exactly the rest) and settled by
 * the facilitator in one transaction: `claimWithSignature` then `refundWithSignature` (multicall).
 */

/** What a refund came to; the gate turns it into the transport's answer. */
export type RefundOutcome =
  | { kind: "refunded"; settlement: SettleResponse }
  | { kind: "refused"; reason: string; message: string }
  | { kind: "mismatch"; channel: ChannelRecord }
  | { kind: "busy"; until: number }
  /** The facilitator's answer was lost or it failed unexpectedly: nothing known, the channel stays held. */
  | { kind: "unknown" };

export const REFUND_NO_BALANCE = "invalid_batch_settlement_evm_refund_no_balance";
const MISSING_CHANNEL = "invalid_batch_settlement_evm_missing_channel";

export class VoucherRefunds {
  constructor(
    private readonly options: {
      facilitator: Pick<FacilitatorClient, "verify" | "settle">;
      store: VoucherChannelStore;
      leaseMs: number;
      now: () => number;
    },
  ) {}

  async refund(
    payment: PaymentPayload,
    checked: CheckedVoucherPayload,
    quote: PaymentRequirements,
  ): Promise<RefundOutcome> {
    const { facilitator, store, now } = this.options;
    const owner = randomUUID();
    const taken = await store.takeChannel({
      channelId: checked.channelId,
      owner,
      now: now(),
      leaseUntil: now() + this.options.leaseMs,
    });
    // A channel this service keeps no state of has nothing it charged to claim first; its payer withdraws
    // through the contract (the spec's escape hatch) rather than on a baseline this service cannot check.
    if (!taken) {
      return {
        kind: "refused",
        reason: MISSING_CHANNEL,
        message: "this service has no state of this channel; withdraw through the contract instead",
      };
    }
    if (taken.kind === "busy") return taken;
    let sent = false;
    try {
      const channel = taken.channel;
      // The spec's zero-charge voucher: its ceiling is exactly what was charged, nothing is added.
      const charged = channel.chargedCumulativeAmount ?? "0";
      if (BigInt(checked.voucher.maxClaimableAmount) !== BigInt(charged)) {
        await store.releaseCall(checked.channelId, owner);
        return { kind: "mismatch", channel };
      }
      const verified = await facilitator.verify(payment, quote);
      if (!verified.isValid) {
        await store.releaseCall(checked.channelId, owner);
        return refused(verified.invalidReason ?? "invalid_batch_settlement_evm_refund_payload");
      }
      const before = onchainStateOf(verified.extra);
      // Everything charged is claimed in the same transaction, so the rest is balance − charged.
      const rest = BigInt(before.balance) - BigInt(charged);
      if (rest <= 0n) {
        await this.mirror(checked.channelId, owner, before);
        return refused(REFUND_NO_BALANCE, "the channel has nothing left beyond what was charged");
      }
      const asked = checked.refundAmount === undefined ? rest : BigInt(checked.refundAmount);
      const amount = asked < rest ? asked : rest;
      const claims =
        BigInt(charged) > BigInt(before.totalClaimed)
          ? [
              {
                voucher: { channel: checksummedConfig(checked.config), maxClaimableAmount: charged },
                signature: checked.voucher.signature,
                totalClaimed: charged,
              },
            ]
          : [];
      sent = true;
      const settled = await facilitator.settle(
        {
          ...payment,
          payload: {
            ...(payment.payload as Record<string, unknown>),
            amount: amount.toString(),
            refundNonce: before.refundNonce,
            claims,
          },
        },
        quote,
      );
      if (!settled.success) {
        // Refused before anything was sent (a simulation, a reverted transaction): the chain says where it is.
        const after = await facilitator.verify(payment, quote);
        if (after.isValid) await this.mirror(checked.channelId, owner, onchainStateOf(after.extra));
        else await store.releaseCall(checked.channelId, owner);
        return refused(settled.errorReason ?? "invalid_batch_settlement_evm_refund_transaction_failed");
      }
      const state = (settled.extra as { channelState?: unknown } | undefined)?.channelState;
      await this.mirror(checked.channelId, owner, onchainStateOf(state));
      return {
        kind: "refunded",
        settlement: {
          ...settled,
          extra: {
            channelState: {
              ...onchainStateOf(state),
              channelId: checked.channelId,
              chargedCumulativeAmount: charged,
            },
          },
        },
      };
    } catch (error) {
      // Not sent: nothing changed, the channel is free. Sent, outcome unknown: the channel stays held until
      // its lease runs out, so no voucher is checked against a balance the refund may have lowered.
      if (!sent) {
        await store.releaseCall(checked.channelId, owner).catch(() => {});
        throw error;
      }
      return { kind: "unknown" };
    }
  }

  /** The chain's state after the refund (or its refusal) mirrored, and the channel let go. */
  private async mirror(channelId: string, owner: string, onchain: OnchainChannelState): Promise<void> {
    await this.options.store.syncOnchain(channelId, owner, onchain, this.options.now());
    await this.options.store.releaseCall(channelId, owner);
  }
}

const refused = (reason: string, message?: string): RefundOutcome => ({
  kind: "refused",
  reason,
  message: message ?? `the refund was refused (${reason}); nothing was refunded or charged`,
});

/** The refund's answer body: what came back to the payer, and the channel after it. */
export const refundAnswerBody = (settlement: SettleResponse): StoredOutcome["body"] =>
  JSON.stringify({ refunded: settlement.amount, transaction: settlement.transaction, ...settlement.extra });
