import { randomUUID } from "node:crypto";
import type { StoredOutcome } from "../../store/store.ts";
import type {
  ChannelConfig,
  ChannelRecord,
  OnchainChannelState,
  VoucherChannelStore,
} from "../../store/voucher-channels.ts";

/**
 * One voucher-paid call (x402 `batch-settlement`, payload type voucher or deposit) on one channel, under
 * the channel's lease: the spec's request processing. Check the cumulative amount against what this
 * server charged, verify, run the handler, and only when it succeeded commit the charge together with
 * the answer. A retry of a delivered voucher gets the kept answer; nothing else is ever charged twice.
 */

/** What the verifier learnt: the chain's view of the channel, or why the voucher is refused. */
export type VoucherVerdict =
  | { valid: true; onchain: OnchainChannelState; syncedAt: number }
  | { valid: false; reason: string };

/** The handler's result: the answer to keep and send (charged), or a failure (nothing charged). */
export type HandlerResult = { ok: true; outcome: StoredOutcome } | { ok: false; outcome: StoredOutcome };

export interface VoucherCall {
  channelId: string;
  network: string;
  config: ChannelConfig;
  voucher: { maxClaimableAmount: string; signature: string };
  payloadHash: string;
  requestHash: string;
  door: string;
  operationId: string;
  requestId: string;
  /** The terms' amount: charged in full on success (every price here is fixed). */
  price: string;
  /**
   * The voucher's signature and the channel on chain (the facilitator's verify, or a local check against
   * `channel`'s mirrored state). Undefined `channel`: the store has no row for it yet, and none is made
   * for a payload this refuses (anyone can sign configs of channels that do not exist).
   */
  verify(channel: ChannelRecord | undefined): Promise<VoucherVerdict>;
  /**
   * A deposit payload's deposit, sent on chain under the channel's lease once the voucher is known to
   * follow, before the handler runs: the channel's state after it, or why it failed (nothing charged).
   */
  deposit?(): Promise<VoucherVerdict>;
  run(): Promise<HandlerResult>;
}

/**
 * delivered: the handler's answer, charged (`channel` is the state after it);
 * replayed: this voucher was delivered before, for this request: its kept answer, not charged again;
 * mismatch: the voucher's ceiling is not charged + price (a lost client state, an old voucher): the
 *   corrective 402, from `channel`;
 * busy: another call holds the channel (invalid_batch_settlement_evm_channel_busy), retry after `until`;
 * refused: the verifier's reason; failed: the handler failed (its answer, nothing charged);
 * lost: the channel was taken over while the handler ran: nothing charged, the answer withheld.
 */
export type VoucherCallOutcome =
  | { kind: "delivered"; outcome: StoredOutcome; channel: ChannelRecord }
  | { kind: "replayed"; outcome: StoredOutcome }
  | { kind: "mismatch"; channel: ChannelRecord }
  | { kind: "busy"; until: number }
  | { kind: "refused"; reason: string }
  | { kind: "failed"; outcome: StoredOutcome }
  | { kind: "lost" };

export class VoucherCalls {
  constructor(
    private readonly options: {
      store: VoucherChannelStore;
      /** How long a call may hold its channel before another may take it (a crashed instance's lease). */
      leaseMs: number;
      now?: () => number;
    },
  ) {}

  private now(): number {
    return (this.options.now ?? Date.now)();
  }

  async call(call: VoucherCall): Promise<VoucherCallOutcome> {
    if (!AMOUNT.test(call.voucher.maxClaimableAmount) || !AMOUNT.test(call.price)) {
      return { kind: "refused", reason: "invalid_batch_settlement_evm_voucher_payload" };
    }
    const store = this.options.store;
    let first: VoucherVerdict | undefined;
    if (!(await store.getChannel(call.channelId))) {
      first = await call.verify(undefined);
      if (!first.valid) return { kind: "refused", reason: first.reason };
    }
    const owner = randomUUID();
    const now = this.now();
    const start = await store.beginCall({
      channelId: call.channelId,
      network: call.network,
      config: call.config,
      signedMaxClaimable: call.voucher.maxClaimableAmount,
      owner,
      now,
      leaseUntil: now + this.options.leaseMs,
    });
    if (start.kind === "busy") return start;
    if (start.kind === "charged") {
      const same =
        start.charge.requestHash === call.requestHash && start.charge.payloadHash === call.payloadHash;
      if (same) return { kind: "replayed", outcome: start.charge.outcome };
      // An old voucher offered for another request: the client's state is behind; show it the channel.
      const channel = await store.getChannel(call.channelId);
      if (!channel) throw new Error(`channel ${call.channelId} vanished after its charge was read`);
      return { kind: "mismatch", channel };
    }
    let released = false;
    const release = async () => {
      released = true;
      await store.releaseCall(call.channelId, owner);
    };
    try {
      let channel = start.channel;
      // With a charged amount known, a wrong ceiling is answered before anything is verified.
      if (channel.chargedCumulativeAmount !== null && !follows(channel.chargedCumulativeAmount, call)) {
        await release();
        return { kind: "mismatch", channel };
      }
      // Verified before its row was made, and no other call has mirrored the chain since: that verdict stands.
      let verdict = first && channel.onchain === null ? first : await call.verify(channel);
      if (verdict.valid && call.deposit) {
        if (channel.chargedCumulativeAmount === null) {
          // The baseline before the deposit: the voucher must follow it before any money moves.
          if (!(await store.syncOnchain(call.channelId, owner, verdict.onchain, verdict.syncedAt))) {
            return { kind: "lost" };
          }
          channel = (await store.getChannel(call.channelId)) as ChannelRecord;
          if (!follows(channel.chargedCumulativeAmount as string, call)) {
            await release();
            return { kind: "mismatch", channel };
          }
        }
        verdict = await call.deposit();
      }
      if (!verdict.valid) {
        await release();
        return { kind: "refused", reason: verdict.reason };
      }
      if (!(await store.syncOnchain(call.channelId, owner, verdict.onchain, verdict.syncedAt))) {
        return { kind: "lost" };
      }
      channel = (await store.getChannel(call.channelId)) as ChannelRecord;
      if (!follows(channel.chargedCumulativeAmount as string, call)) {
        await release();
        return { kind: "mismatch", channel };
      }
      const result = await call.run();
      if (!result.ok) {
        await release();
        return { kind: "failed", outcome: result.outcome };
      }
      const cumulative = call.voucher.maxClaimableAmount;
      const committed = await store.commitCall(
        owner,
        {
          channelId: call.channelId,
          signedMaxClaimable: cumulative,
          signature: call.voucher.signature,
          payloadHash: call.payloadHash,
          requestHash: call.requestHash,
          door: call.door,
          operationId: call.operationId,
          amount: call.price,
          cumulative,
          requestId: call.requestId,
          outcome: result.outcome,
        },
        this.now(),
      );
      released = true;
      if (!committed) return { kind: "lost" };
      const after = (await store.getChannel(call.channelId)) as ChannelRecord;
      return { kind: "delivered", outcome: result.outcome, channel: after };
    } catch (error) {
      // A handler or verifier that threw: nothing was charged; the channel is free for the retry.
      if (!released) await store.releaseCall(call.channelId, owner).catch(() => {});
      throw error;
    }
  }
}

/** A uint128 in decimal, without leading zeros (the form the store compares). */
const AMOUNT = /^(0|[1-9][0-9]{0,38})$/;

/** The spec's rule: a voucher's ceiling is exactly what was charged plus this request's price. */
const follows = (charged: string, call: Pick<VoucherCall, "voucher" | "price">): boolean =>
  BigInt(call.voucher.maxClaimableAmount) === BigInt(charged) + BigInt(call.price);
