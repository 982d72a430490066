import { type Address, createPublicClient, type Hex, http } from "viem";
import { BATCH_SETTLEMENT_ADDRESS, batchSettlementAbi } from "../../chain/batch-settlement.ts";
import type { ChannelRecord } from "../../store/voucher-channels.ts";
import { render, usd } from "./ledger-report.ts";

/**
 * `utility402 ledger`'s voucher part: per channel, what this service charged (its ledger), what the chain
 * shows claimed and settled to payTo, and what is at risk: answered with a signed voucher but not claimed
 * yet, which the payer's timed withdrawal can take back once its deadline passes.
 */

/** What the settlement contract shows; absent (no RPC, chain down): the store's mirror is shown instead. */
export interface VoucherChainReader {
  channel(channelId: string): Promise<{ totalClaimed: bigint; withdrawInitiatedAt: number }>;
  /** A receiver's claimed and settled totals for a token (settle pays out all claimed at once). */
  receiver(receiver: string, token: string): Promise<{ totalClaimed: bigint; totalSettled: bigint }>;
}

export interface ChannelLedgerRow {
  channelId: string;
  payer: string;
  receiver: string;
  /** Atomic units, decimal. */
  charged: string;
  claimed: string;
  /**
   * Claimed and paid out to the receiver. The contract settles per receiver and token, not per channel:
   * when the receiver has claims not yet settled, which channel they came from is not on chain, so null.
   */
  settled: string | null;
  /** Charged (the payer signed it, the service answered) but not claimed on chain yet. */
  atRisk: string;
  /** When the payer's pending timed withdrawal can be finalized (ISO 8601); at risk is lost after it. */
  withdrawDeadline: string | null;
  /** Where claimed, settled and the withdrawal come from: the chain now, or the store's last mirror. */
  source: "chain" | "store";
}

export async function channelLedger(
  channels: readonly ChannelRecord[],
  chain?: VoucherChainReader,
): Promise<ChannelLedgerRow[]> {
  const receivers = new Map<string, Promise<{ totalClaimed: bigint; totalSettled: bigint }>>();
  const rows: ChannelLedgerRow[] = [];
  for (const channel of channels) {
    const charged = BigInt(channel.chargedCumulativeAmount ?? "0");
    const { receiver, token, withdrawDelay } = channel.config;
    let claimed: bigint;
    let initiatedAt: number;
    let settledAll: boolean | null;
    if (chain) {
      const state = await chain.channel(channel.channelId);
      claimed = state.totalClaimed;
      initiatedAt = state.withdrawInitiatedAt;
      const key = `${receiver}:${token}`;
      if (!receivers.has(key)) receivers.set(key, chain.receiver(receiver, token));
      const totals = await (receivers.get(key) as ReturnType<VoucherChainReader["receiver"]>);
      settledAll = totals.totalSettled === totals.totalClaimed;
    } else {
      claimed = BigInt(channel.onchain?.totalClaimed ?? "0");
      initiatedAt = channel.onchain?.withdrawRequestedAt ?? 0;
      settledAll = null;
    }
    rows.push({
      channelId: channel.channelId,
      payer: channel.config.payer,
      receiver,
      charged: charged.toString(),
      claimed: claimed.toString(),
      settled: settledAll ? claimed.toString() : null,
      atRisk: (charged > claimed ? charged - claimed : 0n).toString(),
      withdrawDeadline: initiatedAt > 0 ? new Date((initiatedAt + withdrawDelay) * 1000).toISOString() : null,
      source: chain ? "chain" : "store",
    });
  }
  return rows;
}

/** The channels as a plain-text table, with totals; nothing when there are none. */
export function formatChannelLedger(rows: readonly ChannelLedgerRow[]): string {
  if (rows.length === 0) return "";
  const table = [["channel", "payer", "charged", "claimed", "settled", "at risk", "withdrawal deadline"]];
  const total = { charged: 0n, claimed: 0n, atRisk: 0n };
  for (const row of rows) {
    table.push([
      row.channelId,
      row.payer,
      usd(BigInt(row.charged)),
      usd(BigInt(row.claimed)),
      row.settled === null ? "-" : usd(BigInt(row.settled)),
      usd(BigInt(row.atRisk)),
      row.withdrawDeadline ?? "-",
    ]);
    total.charged += BigInt(row.charged);
    total.claimed += BigInt(row.claimed);
    total.atRisk += BigInt(row.atRisk);
  }
  table.push(["total", "", usd(total.charged), usd(total.claimed), "", usd(total.atRisk), ""]);
  const source = rows.some((row) => row.source === "store")
    ? "claimed and withdrawals as last mirrored in the store (the chain could not be read); settled unknown"
    : "claimed, settled and withdrawals read from the chain; settled '-': the receiver has claims not yet settled";
  return `\nVoucher channels (USDC; ${source})\n${render(table)}`;
}

/** Reads the settlement contract over `rpcUrl`, failing fast (an operator's report, not a payment). */
export function voucherChainReader(rpcUrl: string): VoucherChainReader {
  const client = createPublicClient({ transport: http(rpcUrl, { retryCount: 0, timeout: 5_000 }) });
  const read = (functionName: string, args: readonly unknown[]) =>
    client.readContract({ address: BATCH_SETTLEMENT_ADDRESS, abi: batchSettlementAbi, functionName, args });
  return {
    async channel(channelId) {
      const [, totalClaimed] = (await read("channels", [channelId as Hex])) as readonly [bigint, bigint];
      const [, initiatedAt] = (await read("pendingWithdrawals", [channelId as Hex])) as readonly [
        bigint,
        number,
      ];
      return { totalClaimed, withdrawInitiatedAt: Number(initiatedAt) };
    },
    async receiver(receiver, token) {
      const [totalClaimed, totalSettled] = (await read("receivers", [
        receiver as Address,
        token as Address,
      ])) as readonly [bigint, bigint];
      return { totalClaimed, totalSettled };
    },
  };
}

/** The channels' ledger, from the chain over `rpcUrl` when it answers, else from the store's mirror. */
export async function readChannelLedger(
  channels: readonly ChannelRecord[],
  rpcUrl: string | undefined,
): Promise<ChannelLedgerRow[]> {
  if (channels.length > 0 && rpcUrl) {
    try {
      return await channelLedger(channels, voucherChainReader(rpcUrl));
    } catch {
      // The chain is down or elsewhere (a local chain that stopped with its service): the mirror below says so.
    }
  }
  return channelLedger(channels);
}
