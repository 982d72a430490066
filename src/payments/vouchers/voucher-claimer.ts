import type { FacilitatorClient } from "@x402/core/server";
import type { PaymentPayload, PaymentRequirements } from "@x402/core/types";
import type { Logger } from "pino";
import { createPublicClient, http } from "viem";
import { BATCH_SETTLEMENT_ADDRESS, batchSettlementAbi } from "../../chain/batch-settlement.ts";
import type { ChannelRecord, VoucherChannelStore } from "../../store/voucher-channels.ts";
import { checksummedConfig } from "./voucher-payload.ts";

/**
 * Claims what the service answered with vouchers, then settles it to payTo: every channel whose latest
 * kept voucher is above what the chain shows claimed goes into one `claim` (the facilitator's
 * claimWithSignature, the receiver authorizer's ClaimBatch signature), then one `settle` moves the
 * claimed total to payTo. The claim policy, which bounds the unclaimed credit the operator carries:
 * - a channel whose charged-but-unclaimed value reaches `threshold` is claimed at once (`charged`);
 * - a channel with a withdrawal pending is claimed at once, when the withdrawal watch sees it initiated
 *   and after every call charged on it while it is pending;
 * - everything due, on the timer and once more at graceful shutdown.
 * What the chain shows claimed is read from the chain itself, so a restart (kill -9 included) claims
 * every voucher it answered that was not claimed yet (the store keeps each channel's latest voucher),
 * and the first round settles even with nothing to claim: a claim that a crash left unsettled.
 */
export class VoucherClaimer {
  private timer: NodeJS.Timeout | undefined;
  private running: Promise<void> | undefined;
  /** A round asked for while one runs: it may miss a charge committed after it read the store. */
  private again: Promise<void> | undefined;
  /** Claimed and not known settled; true at start: a claim that a crash (or a failed settle) left unsettled. */
  private settleOwed = true;
  /** What this instance last saw claimed per channel (another instance's claim is read from the chain). */
  private readonly claimed = new Map<string, bigint>();

  constructor(
    private readonly options: {
      store: VoucherChannelStore;
      facilitator: Pick<FacilitatorClient, "settle">;
      /** A batch-settlement quote of this service: its network, asset, payTo and receiver authorizer. */
      quote: PaymentRequirements;
      /** The channel's balance and totalClaimed on chain now. */
      readChannel: (channelId: string) => Promise<ChannelOnchain>;
      /** A channel's charged-but-unclaimed value at which it is claimed at once (atomic units). */
      threshold: bigint;
      intervalMs: number;
      log: Logger;
    },
  ) {}

  start(): void {
    this.timer ??= setInterval(() => void this.claimAll(), this.options.intervalMs).unref();
  }

  /** Stops the timer and claims once more (the graceful shutdown's last claim). */
  async stop(): Promise<void> {
    clearInterval(this.timer);
    this.timer = undefined;
    await this.claimAll();
  }

  /**
   * A call was charged on `channel` (its state after the charge): claimed at once when its unclaimed
   * value reached the threshold or a withdrawal is pending on it, by its mirror or by `withdrawalSeen`
   * (the watch saw one after the mirror was read: a round it started may have read the store before
   * this charge was committed).
   */
  charged(channel: ChannelRecord, withdrawalSeen = false): void {
    const charged = BigInt(channel.chargedCumulativeAmount ?? "0");
    const claimed = maxBig(
      this.claimed.get(channel.channelId) ?? 0n,
      BigInt(channel.onchain?.totalClaimed ?? "0"),
    );
    if (
      withdrawalSeen ||
      channel.onchain?.withdrawRequestedAt ||
      charged - claimed >= this.options.threshold
    ) {
      void this.claimAll();
    }
  }

  /**
   * One claim and settle of everything due. While a round runs, one more is queued after it (and joined
   * by every caller meanwhile): a charge committed after the running round read the store is not missed.
   */
  claimAll(): Promise<void> {
    if (this.running) {
      this.again ??= this.running.then(() => {
        this.again = undefined;
        return this.claimAll();
      });
      return this.again;
    }
    this.running = this.claimDue()
      .catch((error) =>
        this.options.log.error({ err: error }, "voucher claim failed; retried on the next round"),
      )
      .finally(() => {
        this.running = undefined;
      });
    return this.running;
  }

  private async claimDue(): Promise<void> {
    const { quote, store, facilitator, log } = this.options;
    const due: { channel: ChannelRecord; voucher: string; signature: string; claim: bigint }[] = [];
    for (const channel of await store.channels()) {
      const { signedMaxClaimable: voucher, signature } = channel;
      if (channel.network !== quote.network || !voucher || !signature) continue;
      if (channel.config.receiver !== quote.payTo.toLowerCase()) continue;
      const onchain = await this.options.readChannel(channel.channelId);
      this.claimed.set(channel.channelId, onchain.totalClaimed);
      if (BigInt(voucher) <= onchain.totalClaimed) continue;
      // Every kept voucher is exactly what was charged on its channel (voucher-calls.ts): claim all of it,
      // but never above the balance, which would revert the whole batch (a withdrawal took the rest).
      const claim = minBig(BigInt(voucher), onchain.balance);
      if (claim < BigInt(voucher)) {
        log.error(
          { channelId: channel.channelId, charged: voucher, balance: String(onchain.balance) },
          "a channel's balance no longer covers what it was charged: the difference is lost",
        );
      }
      if (claim > onchain.totalClaimed) due.push({ channel, voucher, signature, claim });
    }
    if (due.length > 0) {
      const claims = due.map(({ channel, voucher, signature, claim }) => ({
        voucher: { channel: checksummedConfig(channel.config), maxClaimableAmount: voucher },
        signature,
        totalClaimed: claim.toString(),
      }));
      const claimed = await facilitator.settle(envelope(quote, { type: "claim", claims }), quote);
      if (!claimed.success) {
        log.error({ reason: claimed.errorReason, channels: due.length }, "voucher claim refused");
        return;
      }
      for (const { channel, claim } of due) this.claimed.set(channel.channelId, claim);
      this.settleOwed = true;
      log.info({ channels: due.length, transaction: claimed.transaction }, "vouchers claimed");
    }
    if (!this.settleOwed) return;
    const settled = await facilitator.settle(
      envelope(quote, { type: "settle", receiver: quote.payTo, token: quote.asset }),
      quote,
    );
    if (settled.success || settled.errorReason?.endsWith("nothing_to_settle")) this.settleOwed = false;
    if (settled.success) {
      log.info(
        { amount: settled.amount, transaction: settled.transaction },
        "claimed vouchers settled to payTo",
      );
    } else if (!settled.errorReason?.endsWith("nothing_to_settle")) {
      log.error({ reason: settled.errorReason }, "settling claimed vouchers failed");
    }
  }
}

const envelope = (quote: PaymentRequirements, payload: Record<string, unknown>): PaymentPayload => ({
  x402Version: 2,
  accepted: quote,
  payload,
});

/** A channel's balance and totalClaimed on chain. */
export interface ChannelOnchain {
  balance: bigint;
  totalClaimed: bigint;
}

/** Reads a channel's balance and totalClaimed from the settlement contract. */
export function channelReader(rpcUrl: string): (channelId: string) => Promise<ChannelOnchain> {
  const client = createPublicClient({ transport: http(rpcUrl) });
  return async (channelId) => {
    const [balance, totalClaimed] = (await client.readContract({
      address: BATCH_SETTLEMENT_ADDRESS,
      abi: batchSettlementAbi,
      functionName: "channels",
      args: [channelId as `0x${string}`],
    })) as readonly [bigint, bigint];
    return { balance, totalClaimed };
  };
}

const maxBig = (a: bigint, b: bigint): bigint => (a >= b ? a : b);
const minBig = (a: bigint, b: bigint): bigint => (a <= b ? a : b);
