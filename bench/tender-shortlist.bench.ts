/**
 * tender-shortlist: paid calls per second answered from the cache, against paid csv-cleanup calls in the
 * same run, both through the whole pipeline (402, signature, verify, reserve, run, settle on the local
 * chain, receipt). A third row pays for shortlists that miss the cache (a new query each call) against a
 * TED stand-in on 127.0.0.1 replaying a recording, so it shows the work of a fetch without TED's latency.
 * Run: npx tsx bench/tender-shortlist.bench.ts (writes bench/results/tender-shortlist.json).
 */
import os from "node:os";
import { devPrivateKey } from "../src/chain/dev-accounts.ts";
import { createPayer, type Payer } from "../src/client/paying-fetch.ts";
import { csvCleanup } from "../src/operations/csv-cleanup/index.ts";
import { tenderShortlist } from "../src/operations/tender-shortlist/index.ts";
import { fixturePages, startTedStandIn } from "../test/fixtures/ted/stand-in.ts";
import { jsonPost, startTestService } from "../test/helpers/service.ts";
import { type BenchRow, report } from "./lib.ts";

const CONCURRENCY = 4;
const ROUNDS_PER_BATCH = 5;
const BATCHES = 5;

const page = fixturePages("search-response-03.json", new Date())[0];
const ted = await startTedStandIn(() => ({ body: page }));
const service = await startTestService(
  { TED_API_URL: ted.url },
  { operations: [tenderShortlist, csvCleanup] },
);
// One payer per concurrent caller: dev accounts #2-#9 hold 1,000 test USDC each.
const payers: Payer[] = Array.from({ length: CONCURRENCY }, (_, i) => createPayer(devPrivateKey(2 + i)));

let uncachedQueries = 0;
const call = async (payer: Payer, path: string, body: unknown) => {
  const response = await payer.fetch(`${service.url}${path}`, jsonPost(body));
  await response.arrayBuffer();
  if (response.status !== 200) throw new Error(`${path} answered ${response.status}`);
};
const cachedBody = { query: "software", countries: ["AUT"], cpvCodes: ["72"] };
const csvBody = csvCleanup.example.input;

type Variant = { name: string; run: (payer: Payer) => Promise<void>; batches: number[] };
const variants: Variant[] = [
  {
    name: "csv-cleanup (USD 2.00), paid",
    run: (payer) => call(payer, "/v1/csv-cleanup", csvBody),
    batches: [],
  },
  {
    name: "tender-shortlist from the cache (USD 0.15), paid",
    run: (payer) => call(payer, "/v1/tender-shortlist", cachedBody),
    batches: [],
  },
  {
    name: "tender-shortlist, cache miss, TED stand-in on 127.0.0.1, paid",
    run: (payer) =>
      call(payer, "/v1/tender-shortlist", { ...cachedBody, query: `software ${uncachedQueries++}` }),
    batches: [],
  },
];

/** CONCURRENCY callers, each paying ROUNDS_PER_BATCH calls in a row: calls per second of wall time. */
async function batch(variant: Variant): Promise<number> {
  const start = process.hrtime.bigint();
  await Promise.all(
    payers.map(async (payer) => {
      for (let i = 0; i < ROUNDS_PER_BATCH; i++) await variant.run(payer);
    }),
  );
  const seconds = Number(process.hrtime.bigint() - start) / 1e9;
  return (CONCURRENCY * ROUNDS_PER_BATCH) / seconds;
}

try {
  await call(payers[0] as Payer, "/v1/tender-shortlist", cachedBody); // fills the cache
  for (const variant of variants) await batch(variant); // warm-up
  const fetchesBefore = ted.requests.length;
  // Variants take turns batch by batch, so a busy moment of this shared machine falls on all of them.
  for (let round = 0; round < BATCHES; round++) {
    for (const variant of variants) variant.batches.push(await batch(variant));
  }
  const median = (values: number[]) =>
    [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)] as number;
  const baseline = median((variants[0] as Variant).batches);
  const rows: BenchRow[] = variants.map(({ name, batches }) => ({
    variant: name,
    "calls/s": Number(median(batches).toFixed(1)),
    "ms/call": Number(((1000 * CONCURRENCY) / median(batches)).toFixed(1)),
    "× csv-cleanup": Number((median(batches) / baseline).toFixed(2)),
  }));
  const upstreamFetches = ted.requests.length - fetchesBefore;
  report("tender-shortlist", rows, {
    command: "npx tsx bench/tender-shortlist.bench.ts",
    concurrency: CONCURRENCY,
    callsPerBatch: CONCURRENCY * ROUNDS_PER_BATCH,
    batches: BATCHES,
    // Equal when every cached call was answered without TED and every cache miss fetched once.
    upstreamFetchesDuringTimedBatches: upstreamFetches,
    cacheMissCallsDuringTimedBatches: BATCHES * CONCURRENCY * ROUNDS_PER_BATCH,
    cpus: os.availableParallelism(),
    loadAverageAtEnd: os.loadavg().map((load) => Number(load.toFixed(2))),
    method:
      "Median of 5 batches per variant (4 callers × 5 sequential paid calls each, after one warm-up batch); " +
      "variants interleaved batch by batch. Every call is a real x402 payment settled on the local anvil chain. " +
      "Upstream fetches counted at the stand-in: only the cache-miss row reaches it.",
  });
  console.log(`cached tender-shortlist / csv-cleanup = ${rows[1]?.["× csv-cleanup"]} (calls per second)`);
} finally {
  await service.stop();
  await ted.close();
}
