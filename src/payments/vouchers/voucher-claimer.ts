import type { FacilitatorClient } from "@x402/core/server";
import type { PaymentPayload, PaymentRequirements } from "@x402/core/types";
import type { Logger } from "pino";
import { createPublicClient, getAddress, http } from "viem";
import { BATCH_SETTLEMENT_ADDRESS, batchSettlementAbi } from "../../chain/batch-settlement.ts";
import type { ChannelRecord, VoucherChannelStore } from "../../store/voucher-channels.ts";

/**
 * Claims what the service answered with vouchers, then settles it to payTo: every channel whose latest
 * kept voucher is above what the chain shows claimed goes into one `claim` (the facilitator's
 * claimWithSignature, the receiver authorizer's ClaimBatch signature), then one `settle` moves the
 * claimed total to payTo. Runs on a timer and once more at graceful shutdown. What the chain shows
 * claimed is read from the chain itself, so a restart (kill -9 included) claims every voucher it
 * answered that was not claimed yet: the ledger keeps each channel's latest voucher.
 *
 * Not yet: a threshold on unclaimed value, and claiming at once when a payer initiates a withdrawal.
 */
export class VoucherClaimer {
  private timer: NodeJS.Timeout | undefined;
  private running: Promise<void> | undefined;
  /** The first round settles even with nothing to claim: a claim a crash left unsettled. */
  private settledSinceStart = false;

  constructor(
    private readonly options: {
      store: VoucherChannelStore;
      facilitator: Pick<FacilitatorClient, "settle">;
      /** A batch-settlement quote of this service: its network, asset, payTo and receiver authorizer. */
      quote: PaymentRequirements;
      /** The channel's totalClaimed on chain now. */
      claimedOnChain: (channelId: string) => Promise<bigint>;
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

  /** One claim and settle of everything due; a claim already running is joined, not doubled. */
  claimAll(): Promise<void> {
    this.running ??= this.claimDue()
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
    const due: { channel: ChannelRecord; voucher: string; signature: string }[] = [];
    for (const channel of await store.channels()) {
      const { signedMaxClaimable: voucher, signature } = channel;
      if (channel.network !== quote.network || !voucher || !signature) continue;
      if (channel.config.receiver !== quote.payTo.toLowerCase()) continue;
      if (BigInt(voucher) > (await this.options.claimedOnChain(channel.channelId))) {
        due.push({ channel, voucher, signature });
      }
    }
    if (due.length > 0) {
      const claims = due.map(({ channel, voucher, signature }) => ({
        voucher: { channel: checksummed(channel.config), maxClaimableAmount: voucher },
        signature,
        // Every kept voucher is exactly what was charged on its channel (voucher-calls.ts): claim all of it.
        totalClaimed: voucher,
      }));
      const claimed = await facilitator.settle(envelope(quote, { type: "claim", claims }), quote);
      if (!claimed.success) {
        log.error({ reason: claimed.errorReason, channels: due.length }, "voucher claim refused");
        return;
      }
      log.info({ channels: due.length, transaction: claimed.transaction }, "vouchers claimed");
    } else if (this.settledSinceStart) {
      return;
    }
    this.settledSinceStart = true;
    const settled = await facilitator.settle(
      envelope(quote, { type: "settle", receiver: quote.payTo, token: quote.asset }),
      quote,
    );
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

const checksummed = (config: ChannelRecord["config"]) => ({
  payer: getAddress(config.payer),
  payerAuthorizer: getAddress(config.payerAuthorizer),
  receiver: getAddress(config.receiver),
  receiverAuthorizer: getAddress(config.receiverAuthorizer),
  token: getAddress(config.token),
  withdrawDelay: config.withdrawDelay,
  salt: config.salt as `0x${string}`,
});

/** Reads a channel's totalClaimed from the settlement contract. */
export function channelClaimedReader(rpcUrl: string): (channelId: string) => Promise<bigint> {
  const client = createPublicClient({ transport: http(rpcUrl) });
  return async (channelId) => {
    const [, totalClaimed] = (await client.readContract({
      address: BATCH_SETTLEMENT_ADDRESS,
      abi: batchSettlementAbi,
      functionName: "channels",
      args: [channelId as `0x${string}`],
    })) as readonly [bigint, bigint];
    return totalClaimed;
  };
}
