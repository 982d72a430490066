/**
 * chain-arbitrage-snapshot against a local chain (anvil with the local DEX): snapshots per second,
 * one at a time and 8 at a time, direct to anvil and through a counting JSON-RPC stand-in, and the
 * RPC round trips (HTTP requests) and JSON-RPC calls per snapshot counted there. Also the time the
 * local DEX set-up takes on a fresh chain. Run: npx tsx bench/chain-arbitrage-snapshot.bench.ts
 * (writes bench/results/chain-arbitrage-snapshot.json).
 */

import { ensureLocalDex } from "../src/chain/dex/local-dex.ts";
import { startLocalChain } from "../src/chain/local-chain.ts";
import { createLogger } from "../src/log.ts";
import { LOCAL_CHAIN_ADDRESSES } from "../src/operations/chain-arbitrage-snapshot/addresses.ts";
import { snapshotClient } from "../src/operations/chain-arbitrage-snapshot/index.ts";
import { ChainArbitrageSnapshotRequest, VENUES } from "../src/operations/chain-arbitrage-snapshot/schema.ts";
import { takeSnapshot } from "../src/operations/chain-arbitrage-snapshot/snapshot.ts";
import { freePort } from "../test/helpers/service.ts";
import { startRpcStandIn } from "../test/operations/chain-arbitrage-snapshot-rpc-stand-in.ts";
import { type BenchRow, report } from "./lib.ts";

const TARGET_ROUND_TRIPS = 2;
const SNAPSHOTS_PER_BATCH = 40;
const BATCHES = 5;
const log = createLogger("silent");

const chain = await startLocalChain({ port: await freePort(), log });
const standIn = await startRpcStandIn(chain.rpcUrl);
try {
  const setupStart = process.hrtime.bigint();
  await ensureLocalDex(chain.rpcUrl, log);
  const setupMs = Number(process.hrtime.bigint() - setupStart) / 1e6;
  const againStart = process.hrtime.bigint();
  await ensureLocalDex(chain.rpcUrl, log);
  const againMs = Number(process.hrtime.bigint() - againStart) / 1e6;

  const settings = { addresses: LOCAL_CHAIN_ADDRESSES, priorityFeeWei: 1_000_000n, feedMaxAgeSeconds: 1200 };
  const input = ChainArbitrageSnapshotRequest.parse({});
  const direct = snapshotClient([chain.rpcUrl], 5000);
  const proxied = snapshotClient([standIn.url], 5000);

  // Round trips per snapshot: counted at the stand-in, one snapshot at a time, for every venue pair.
  const perPair: BenchRow[] = [];
  for (const [i, a] of VENUES.entries()) {
    for (const b of VENUES.slice(i + 1)) {
      const [trips, calls] = [standIn.roundTrips, standIn.calls];
      await takeSnapshot(proxied, settings, ChainArbitrageSnapshotRequest.parse({ venues: [a, b] }));
      perPair.push({
        venues: `${a} / ${b}`,
        "round trips": standIn.roundTrips - trips,
        "JSON-RPC calls": standIn.calls - calls,
      });
    }
  }
  const maxRoundTrips = Math.max(...perPair.map((row) => row["round trips"] as number));

  const variants = [
    { name: "direct to anvil, 1 at a time", client: direct, concurrency: 1 },
    { name: "direct to anvil, 8 at a time", client: direct, concurrency: 8 },
    { name: "via counting stand-in, 1 at a time", client: proxied, concurrency: 1 },
  ].map((variant) => ({ ...variant, rates: [] as number[] }));
  for (const variant of variants) {
    for (let i = 0; i < 5; i++) await takeSnapshot(variant.client, settings, input); // warm-up
  }
  // Variants take turns batch by batch, so a busy moment of this shared machine falls on all alike.
  for (let batch = 0; batch < BATCHES; batch++) {
    for (const variant of variants) {
      const start = process.hrtime.bigint();
      for (let done = 0; done < SNAPSHOTS_PER_BATCH; done += variant.concurrency) {
        await Promise.all(
          Array.from({ length: variant.concurrency }, () => takeSnapshot(variant.client, settings, input)),
        );
      }
      variant.rates.push(SNAPSHOTS_PER_BATCH / (Number(process.hrtime.bigint() - start) / 1e9));
    }
  }
  const median = (values: number[]) =>
    [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)] as number;
  const rows: BenchRow[] = variants.map((variant) => ({
    measure: variant.name,
    "snapshots/s (median)": Number(median(variant.rates).toFixed(1)),
    "ms/snapshot": Number((1000 / median(variant.rates)).toFixed(1)),
  }));
  console.table(perPair);
  report("chain-arbitrage-snapshot", rows, {
    command: "npx tsx bench/chain-arbitrage-snapshot.bench.ts",
    batches: BATCHES,
    snapshotsPerBatch: SNAPSHOTS_PER_BATCH,
    roundTripsPerSnapshot: perPair,
    maxRoundTrips,
    targetRoundTrips: TARGET_ROUND_TRIPS,
    targetMet: maxRoundTrips <= TARGET_ROUND_TRIPS,
    localDexSetupMs: Number(setupMs.toFixed(0)),
    localDexAlreadyThereMs: Number(againMs.toFixed(1)),
    note:
      "A snapshot is two HTTP round trips, both at one block: one JSON-RPC batch of " +
      "eth_getBlockByNumber and aggregate3 at that block (or latest) with the USDC→WETH quotes at amountUsdc " +
      "and at each of the ladder's 8 log-spaced sizes and their L1 fees, then aggregate3 pinned by the " +
      "block's hash (EIP-1898): one batch of the shared aggregate3 (the pools' fees, spot state and liquidity, " +
      "the WETH→USDC quotes of venues whose quoter does not measure gas) and one aggregate3 of its own per " +
      "quote that measures gas (every size's buy again and every sell on Uniswap/Slipstream), so each size's " +
      "gas is measured cold. A third request happens only when latest moved between the header and the first eth_call, " +
      "or to name the largest fillable size of a partial fill (neither happens here). Rates are the whole " +
      "operation (encoding, both round trips to anvil, decoding, integer arithmetic over the amount and the " +
      "8 ladder sizes in both directions) without the payment, on a 2-core machine shared with other work.",
  });
  console.log(
    `round trips per snapshot: ${maxRoundTrips} (target ≤ ${TARGET_ROUND_TRIPS}: ${maxRoundTrips <= TARGET_ROUND_TRIPS ? "met" : "missed"})`,
  );
} finally {
  await standIn.close();
  await chain.stop();
}
