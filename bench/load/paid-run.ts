/**
 * Paid load runs that prove what they count: every request carries its own fresh EIP-3009 payment
 * (signed beforehand with the official client, spread over many payer accounts), and every run
 * ends with a reconciliation: 200 responses = settled ledger rows = on-chain USDC Transfer events
 * to payTo within the run's blocks.
 */
import path from "node:path";
import Database from "better-sqlite3";
import { createPublicClient, http, keccak256, parseAbiItem, toHex } from "viem";
import { privateKeyToAccount } from "viem/accounts";
import { fundLocalAccounts } from "../../src/chain/local-chain.ts";
import { createPayer, type Payer } from "../../src/client/paying-fetch.ts";
import { BASE_USDC_ADDRESS } from "../../src/config.ts";
import { type LoadResult, runLoad } from "./load.ts";

const TRANSFER = parseAbiItem("event Transfer(address indexed from, address indexed to, uint256 value)");

/** Deterministic private keys for bench accounts (public knowledge, local chains only). */
export const benchKey = (label: string, index: number): `0x${string}` =>
  keccak256(toHex(`utility402 bench ${label} ${index}`));

/** `count` payer accounts, each minted `usdcEach` test USDC on the local chain. */
export async function fundedPayers(rpcUrl: string, count: number, usdcEach: bigint): Promise<Payer[]> {
  const keys = Array.from({ length: count }, (_, i) => benchKey("payer", i));
  await fundLocalAccounts(
    rpcUrl,
    keys.map((key) => ({ address: privateKeyToAccount(key).address, usdc: usdcEach })),
  );
  return keys.map((key) => createPayer(key));
}

/**
 * Signs `count` payments for one route with the official client, round-robin over the payers:
 * each is a new EIP-3009 authorization with its own random nonce. The route's 402 is fetched once.
 */
export async function signPayments(
  url: string,
  body: string,
  payers: Payer[],
  count: number,
): Promise<string[]> {
  const challenge = await fetch(url, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body,
  });
  if (challenge.status !== 402) throw new Error(`${url} answered ${challenge.status}, not 402`);
  const headers: string[] = [];
  for (let i = 0; i < count; i++) {
    const signed = await (payers[i % payers.length] as Payer).signPayment(challenge);
    const header = signed["PAYMENT-SIGNATURE"];
    if (!header) throw new Error("the client produced no PAYMENT-SIGNATURE header");
    headers.push(header);
  }
  await challenge.body?.cancel();
  return headers;
}

/** The settled rows of a service's SQLite ledger in `dataDir`, read-only (close() when done). */
export function sqliteLedger(dataDir: string): { settledRows(): number; close(): void } {
  const db = new Database(path.join(dataDir, "utility402.sqlite"), { readonly: true });
  const count = db.prepare("SELECT count(*) AS n FROM payments WHERE state = 'settled'");
  return { settledRows: () => (count.get() as { n: number }).n, close: () => db.close() };
}

export interface Reconciliation {
  ok200: number;
  /** Settled ledger rows added during the run; null for a server without a ledger. */
  ledgerSettled: number | null;
  transfers: number;
  /** 200s = ledger rows = transfers. */
  balanced: boolean;
}

export interface PaidRunResult extends LoadResult {
  reconciliation: Reconciliation;
}

/** Counts USDC Transfer events to `payTo` in [fromBlock, toBlock]. */
export async function transfersTo(
  rpcUrl: string,
  payTo: `0x${string}`,
  fromBlock: bigint,
  toBlock: bigint,
): Promise<number> {
  const client = createPublicClient({ transport: http(rpcUrl) });
  const logs = await client.getLogs({
    address: BASE_USDC_ADDRESS,
    event: TRANSFER,
    args: { to: payTo },
    fromBlock,
    toBlock,
  });
  return logs.length;
}

/**
 * One paid run against one or several targets (instances of one service share payTo and the
 * ledger), then the reconciliation. `ledgerSettled` counts the ledger's settled rows (omit it for a
 * server without a ledger).
 */
export async function paidRun(options: {
  targets: string[];
  connections: number;
  body: string;
  paymentHeaders: string[];
  rpcUrl: string;
  payTo: `0x${string}`;
  ledgerSettled?: () => Promise<number> | number;
}): Promise<PaidRunResult> {
  const chain = createPublicClient({ transport: http(options.rpcUrl) });
  const firstBlock = (await chain.getBlockNumber({ cacheTime: 0 })) + 1n;
  const ledgerBefore = options.ledgerSettled ? await options.ledgerSettled() : null;
  const load = await runLoad({
    targets: options.targets,
    connections: options.connections,
    method: "POST",
    body: options.body,
    paymentHeaders: options.paymentHeaders,
  });
  const lastBlock = await chain.getBlockNumber({ cacheTime: 0 });
  const ledgerAfter = options.ledgerSettled ? await options.ledgerSettled() : null;
  const ok200 = load.statuses["200"] ?? 0;
  const ledgerSettled = ledgerBefore === null ? null : (ledgerAfter as number) - ledgerBefore;
  const transfers = await transfersTo(options.rpcUrl, options.payTo, firstBlock, lastBlock);
  return {
    ...load,
    reconciliation: {
      ok200,
      ledgerSettled,
      transfers,
      balanced: ok200 === transfers && (ledgerSettled === null || ledgerSettled === ok200),
    },
  };
}
