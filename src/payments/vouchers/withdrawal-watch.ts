import type { Logger } from "pino";
import { createPublicClient, http, parseAbi } from "viem";
import { BATCH_SETTLEMENT_ADDRESS } from "../../chain/batch-settlement.ts";
import type { OnchainChannelState } from "../../store/voucher-channels.ts";

/** The settlement contract's withdrawal events (contracts/x402BatchSettlement.sol). */
const WITHDRAWAL_EVENTS = parseAbi([
  "event WithdrawInitiated(bytes32 indexed channelId, address indexed sender, uint128 amount, uint40 finalizableAt)",
  "event WithdrawReduced(bytes32 indexed channelId, uint128 amount)",
  "event WithdrawCancelled(bytes32 indexed channelId)",
  "event WithdrawFinalized(bytes32 indexed channelId, address indexed sender, uint128 amount)",
]);

/**
 * The most blocks one poll asks the logs of (RPC providers cap `eth_getLogs` ranges). A longer gap (an
 * outage) is skipped as a restart is: every mirror older than the skip is distrusted and a claim runs.
 */
const MAX_LOG_RANGE = 2_000n;

/** A poll that has not succeeded for this many intervals leaves the watch blind: no mirror is trusted. */
const BLIND_AFTER_INTERVALS = 3;

/**
 * Reads the chain for withdrawals on this service's channels. A payer's `initiateWithdraw` starts a
 * delay after which every voucher this service answered and did not claim is lost; the watch sees the
 * event within one interval and asks for a claim at once. It also tells the voucher gate when its
 * mirrored channel state may miss a withdrawal (initiated, reduced, cancelled or finalized since the
 * mirror was read, or the watch cannot read the chain): the gate then verifies through the facilitator,
 * which reads the chain, instead of its local check. And it keeps the chain's clock, against which
 * `finalizableAt` counts (a test chain's clock is moved by evm_increaseTime).
 */
export class WithdrawalWatch {
  private timer: NodeJS.Timeout | undefined;
  private polling: Promise<void> | undefined;
  private nextBlock: bigint | undefined;
  private lastReadAt = Number.NEGATIVE_INFINITY;
  private chainOffsetMs = 0;
  /** Mirrors read before this (epoch ms) may miss a withdrawal the watch did not read: its start, a skipped gap. */
  private distrustBefore: number;
  private readonly client;
  /** Our channels' last withdrawal event, by when the watch saw it (epoch ms). */
  private readonly changedAt = new Map<string, number>();

  constructor(
    private readonly options: {
      rpcUrl: string;
      intervalMs: number;
      /**
       * How long, from accepting a voucher, its claim may take to land (the handler's run, the claim's
       * wait, and one interval of this watch): a withdrawal that finalizes sooner makes the voucher unsafe.
       */
      claimLandingMs: number;
      /** Whether a channel is this service's (in the store). */
      isOurs: (channelId: string) => Promise<boolean>;
      /** A payer of one of our channels initiated a withdrawal (or the watch skipped blocks): claim now. */
      claimNow: () => void;
      log: Logger;
      now?: () => number;
    },
  ) {
    this.distrustBefore = this.now();
    this.client = createPublicClient({ transport: http(options.rpcUrl) });
  }

  private now(): number {
    return (this.options.now ?? Date.now)();
  }

  start(): void {
    this.timer ??= setInterval(() => void this.poll(), this.options.intervalMs).unref();
    void this.poll();
  }

  stop(): void {
    clearInterval(this.timer);
    this.timer = undefined;
  }

  /** One read of the chain's new blocks; a poll already running is joined. */
  poll(): Promise<void> {
    this.polling ??= this.read()
      .catch((error) => this.options.log.warn({ err: error }, "withdrawal watch could not read the chain"))
      .finally(() => {
        this.polling = undefined;
      });
    return this.polling;
  }

  private async read(): Promise<void> {
    const asked = this.now();
    const latest = await this.client.getBlock({ blockTag: "latest" });
    let fromBlock = this.nextBlock ?? latest.number;
    if (latest.number - fromBlock >= MAX_LOG_RANGE) {
      this.options.log.warn(
        { from: String(fromBlock), to: String(latest.number) },
        "withdrawal watch skips blocks it fell behind on: every channel is verified on chain again and claimed",
      );
      fromBlock = latest.number;
      this.distrustBefore = asked;
      this.options.claimNow();
    }
    if (fromBlock <= latest.number) {
      const logs = await this.client.getLogs({
        address: BATCH_SETTLEMENT_ADDRESS,
        events: WITHDRAWAL_EVENTS,
        fromBlock,
        toBlock: latest.number,
      });
      for (const log of logs) {
        const channelId = log.args.channelId?.toLowerCase();
        if (!channelId || !(await this.options.isOurs(channelId))) continue;
        this.changedAt.set(channelId, this.now());
        if (log.eventName === "WithdrawInitiated") {
          this.options.log.warn(
            { channelId, amount: String(log.args.amount), finalizableAt: log.args.finalizableAt },
            "a payer initiated a withdrawal: claiming its channel now",
          );
          this.options.claimNow();
        }
      }
    }
    this.nextBlock = latest.number + 1n;
    this.chainOffsetMs = Number(latest.timestamp) * 1000 - asked;
    this.lastReadAt = asked;
  }

  /**
   * Whether a channel's mirrored state, read at `syncedAt` (epoch ms), may miss a withdrawal: a
   * withdrawal event seen since, a mirror older than this watch (a restart), or a watch that cannot read.
   */
  mirrorMayMiss(channelId: string, syncedAt: number | null): boolean {
    if (syncedAt === null || syncedAt < this.distrustBefore) return true;
    if (this.now() - this.lastReadAt > BLIND_AFTER_INTERVALS * this.options.intervalMs) return true;
    return (this.changedAt.get(channelId.toLowerCase()) ?? Number.NEGATIVE_INFINITY) >= syncedAt;
  }

  /** Whether a withdrawal pending on the channel finalizes before a claim of a voucher accepted now lands. */
  closesBeforeClaim(onchain: OnchainChannelState, withdrawDelay: number): boolean {
    return withdrawalClosesBeforeClaim(
      onchain,
      withdrawDelay,
      this.now() + this.chainOffsetMs,
      this.options.claimLandingMs,
    );
  }
}

/**
 * A pending withdrawal (initiated at `withdrawRequestedAt`, chain seconds) finalizes at
 * `withdrawRequestedAt + withdrawDelay`; a voucher accepted at `chainNowMs` is claimed at the latest
 * `claimLandingMs` later. Past that, the voucher's charge may be withdrawn before it is claimed.
 */
export function withdrawalClosesBeforeClaim(
  onchain: Pick<OnchainChannelState, "withdrawRequestedAt">,
  withdrawDelay: number,
  chainNowMs: number,
  claimLandingMs: number,
): boolean {
  if (!onchain.withdrawRequestedAt) return false;
  return chainNowMs + claimLandingMs >= (onchain.withdrawRequestedAt + withdrawDelay) * 1000;
}
