/**
 * json-diff against fast-json-patch's compare, in the same run (issue 4): a ~1 MB document with
 * 1 % of its leaves changed. "ours" is the whole operation as the handler runs it: the diff, the
 * sha256 of both documents' RFC 8785 forms and of the patch, and the check that the patch turns
 * before into after. compare does only the diff. Run: npx tsx bench/json-diff.bench.ts
 */
import { createHash } from "node:crypto";
import fastJsonPatch from "fast-json-patch";
import { canonicalJson } from "../src/canonical-json.ts";
import { checkJsonStructure } from "../src/http/read-input.ts";
import type { Json } from "../src/operations/json-diff/canonical.ts";
import { jsonDiff } from "../src/operations/json-diff/json-diff.ts";
import {
  changeLeaves,
  countLeaves,
  recordsDocument,
  seededRandom,
} from "../src/operations/json-diff/random-json.ts";
import { type JsonDiffInput, JsonDiffRequest } from "../src/operations/json-diff/schema.ts";
import { type BenchRow, report, timePerRun } from "./lib.ts";

const TARGET_RATIO = 1.5;
const ROUNDS = 7;
const ITERATIONS = 10;

const random = seededRandom(20250401);
const generated = recordsDocument(random, 1_000_000);
const changedDocument = changeLeaves(random, generated, 0.01);
// Parsed from text, as the service receives them (fresh objects, no shared subtrees).
const beforeText = JSON.stringify(generated);
const afterText = JSON.stringify(changedDocument);
const before = JSON.parse(beforeText) as Json;
const after = JSON.parse(afterText) as Json;
const bodyText = JSON.stringify({ before, after });

const input = (arrayMode: "index" | "key") =>
  JsonDiffRequest.parse({
    before,
    after,
    arrayMode,
    ...(arrayMode === "key" ? { arrayKey: "sku" } : {}),
  }) as JsonDiffInput;
const indexInput = input("index");
const keyInput = input("key");

const sha256 = (text: string) => createHash("sha256").update(text, "utf8").digest("hex");

// What each measured function computes, checked once before timing.
const ours = jsonDiff(indexInput);
const theirs = fastJsonPatch.compare(before as object, after as object);
const leaves = countLeaves(before);
const changedLeaves = theirs.length;
if (ours.stats.operations !== theirs.length) {
  throw new Error(`operation counts differ: ours ${ours.stats.operations}, compare ${theirs.length}`);
}
if (ours.beforeHash !== `sha256:${sha256(canonicalJson(before))}`) throw new Error("beforeHash is wrong");

const measured: Record<string, () => unknown> = {
  "fast-json-patch compare": () => fastJsonPatch.compare(before as object, after as object),
  "json-diff (index): diff + 3 hashes + patch check": () => jsonDiff(indexInput),
  "json-diff (key, arrayKey sku)": () => jsonDiff(keyInput),
  "request schema (before payment)": () => JsonDiffRequest.parse({ before, after }),
  "body scan: depth + duplicate keys (before payment)": () =>
    checkJsonStructure(bodyText, { maxDepth: 65, rejectDuplicateKeys: true }),
  "reference: compare + canonicalize package hashes": () => {
    fastJsonPatch.compare(before as object, after as object);
    return sha256(canonicalJson(before)) + sha256(canonicalJson(after));
  },
  "floor: JSON.stringify + sha256 of both (not canonical)": () =>
    sha256(JSON.stringify(before)) + sha256(JSON.stringify(after)),
};

// Interleaved rounds: the machines are shared and noisy, so every round times every function
// back to back and the ratios are taken per round, then the median.
const times = new Map<string, number[]>(Object.keys(measured).map((name) => [name, []]));
for (let round = 0; round < ROUNDS; round++) {
  for (const [name, fn] of Object.entries(measured)) times.get(name)?.push(timePerRun(fn, ITERATIONS));
}
const median = (values: number[]) =>
  [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)] as number;
const baseline = times.get("fast-json-patch compare") as number[];
const rows: BenchRow[] = Object.keys(measured).map((name) => {
  const series = times.get(name) as number[];
  return {
    measure: name,
    "median ms": Number(median(series).toFixed(2)),
    "× compare": Number(median(series.map((value, round) => value / (baseline[round] as number))).toFixed(2)),
  };
});

const ratio = rows[1]?.["× compare"] as number;
const floorRatio = rows[6]?.["× compare"] as number;
report("json-diff", rows, {
  command: "npx tsx bench/json-diff.bench.ts",
  document: {
    bytes: Buffer.byteLength(beforeText),
    records: (generated as { records: unknown[] }).records.length,
    leaves,
    changedLeaves,
    changedPercent: Number(((100 * changedLeaves) / leaves).toFixed(2)),
    operations: ours.stats.operations,
  },
  rounds: ROUNDS,
  iterationsPerBatch: ITERATIONS,
  targetRatio: TARGET_RATIO,
  ratio,
  targetMet: ratio <= TARGET_RATIO,
  floorRatio,
  note:
    "json-diff does more than compare: it hashes both ~1 MB documents in RFC 8785 form (sorted members), " +
    "hashes the patch, and applies the patch to before and compares the result with after before answering. " +
    `Serializing and hashing both documents with V8's native JSON.stringify alone (not even canonical) ` +
    `already costs ${floorRatio}x compare (the floor row), so ${TARGET_RATIO}x including hashing is not ` +
    `reachable in JavaScript; json-diff costs ${(ratio / floorRatio).toFixed(2)}x that floor, because its ` +
    "walk writes both canonical forms while it diffs (common bytes written once, copied in blocks). " +
    "Hashing with the canonicalize package instead (the reference row) would cost far more.",
});
console.log(
  `json-diff / compare = ${ratio} (target ≤ ${TARGET_RATIO}: ${ratio <= TARGET_RATIO ? "met" : "missed"})`,
);
