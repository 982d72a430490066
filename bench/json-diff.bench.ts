/**
 * json-diff against fast-json-patch's compare, in the same run (issue 4): a ~1 MB document with
 * 1 % of its leaves changed. "ours" is the whole operation as the handler runs it: the diff, the
 * sha256 of both documents' RFC 8785 forms and of the patch, and the check that the patch turns
 * before into after. compare does only the diff. Run: npx tsx bench/json-diff.bench.ts
 */
import { execFileSync } from "node:child_process";
import { createHash } from "node:crypto";
import { performance } from "node:perf_hooks";
import fastJsonPatch from "fast-json-patch";
import * as jsondiffpatch from "jsondiffpatch";
import * as jsonpatchFormatter from "jsondiffpatch/formatters/jsonpatch";
import { canonicalJson } from "../src/canonical-json.ts";
import { checkJsonStructure } from "../src/input/parse-input.ts";
import type { Json } from "../src/operations/json-diff/canonical.ts";
import { jsonDiffPool } from "../src/operations/json-diff/index.ts";
import { jsonDiff } from "../src/operations/json-diff/json-diff.ts";
import { readJsonDiffRequest } from "../src/operations/json-diff/read-request.ts";
import { type JsonDiffInput, JsonDiffRequest } from "../src/operations/json-diff/schema.ts";
import {
  changeLeaves,
  countLeaves,
  type Random,
  recordsDocument,
  seededRandom,
} from "../test/helpers/random-json.ts";
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

// ---------------------------------------------------------------------------------------------
// Patch length against jsondiffpatch (issue 18), on real and real-ish pairs. jsondiffpatch runs with
// move detection and the same item identity (objectHash), and its RFC 6902 formatter writes the patch.
// Each patch is applied to before with fast-json-patch and must give after.

/** package-lock.json at two pinned commits of this repository (40 commits apart), when git has them. */
const LOCK_COMMITS = ["210ef1ad6b575a5372ecfe4c3b6185fdb8124754", "7c30f1ee2da88013298b203537ea7bf34838f932"];
function lockfileAt(commit: string): Json | undefined {
  try {
    return JSON.parse(
      execFileSync("git", ["show", `${commit}:package-lock.json`], { encoding: "utf8" }),
    ) as Json;
  } catch {
    return undefined;
  }
}

/** Keyed records (an API export) reordered: `moved` of them change place, a few change inside too. */
function movedRecords(random: Random, moved: number) {
  const before = (recordsDocument(random, 200_000) as { records: Json[] }).records as Record<string, Json>[];
  const after = before.map((record) => ({ ...record }));
  for (let k = 0; k < moved; k++) {
    const [item] = after.splice(Math.floor(random() * after.length), 1);
    const changed =
      k % 2 === 0 ? { ...(item as Record<string, Json>), price: 1 + k } : (item as Record<string, Json>);
    after.splice(Math.floor(random() * after.length), 0, changed);
  }
  return {
    before: JSON.parse(JSON.stringify(before)) as Json,
    after: JSON.parse(JSON.stringify(after)) as Json,
  };
}

interface Pair {
  name: string;
  before: Json;
  after: Json;
  arrayMode: "index" | "lcs" | "key";
  arrayKey?: string;
}
const pairs: Pair[] = [];
const [lockBefore, lockAfter] = LOCK_COMMITS.map(lockfileAt);
if (lockBefore !== undefined && lockAfter !== undefined) {
  pairs.push({
    name: "package-lock.json, HEAD~40 → HEAD (real)",
    before: lockBefore,
    after: lockAfter,
    arrayMode: "lcs",
  });
}
const moveRandom = seededRandom(18);
pairs.push({
  name: "4 keyed records moved (2 also changed)",
  ...movedRecords(moveRandom, 4),
  arrayMode: "key",
  arrayKey: "sku",
});
pairs.push({
  name: "40 keyed records moved (20 also changed)",
  ...movedRecords(moveRandom, 40),
  arrayMode: "key",
  arrayKey: "sku",
});
{
  const { before, after } = movedRecords(moveRandom, 10);
  pairs.push({ name: "10 records moved, matched by equality (lcs)", before, after, arrayMode: "lcs" });
}
pairs.push({
  name: "1 % of leaves changed, nothing moved (the ~1 MB document above)",
  before,
  after,
  arrayMode: "key",
  arrayKey: "sku",
});

const keyOf = (arrayKey: string | undefined) => (item: object, index?: number) => {
  const record = item as Record<string, unknown>;
  // Without a key, items are the same item when equal (as lcs matches them); index only as a last resort.
  return arrayKey !== undefined && record[arrayKey] !== undefined
    ? String(record[arrayKey])
    : (JSON.stringify(item) ?? `$$index:${index}`);
};
const applies = (document: Json, patch: unknown[], expected: Json) => {
  try {
    const { newDocument } = fastJsonPatch.applyPatch(structuredClone(document), patch as never, true, false);
    return canonicalJson(newDocument) === canonicalJson(expected);
  } catch {
    return false;
  }
};
const lengthRows: BenchRow[] = [];
for (const pair of pairs) {
  const request = JsonDiffRequest.parse({
    before: pair.before,
    after: pair.after,
    arrayMode: pair.arrayMode,
    ...(pair.arrayKey ? { arrayKey: pair.arrayKey } : {}),
    maxChanges: 10000,
  }) as JsonDiffInput;
  const ours = jsonDiff(request);
  const plain = jsonDiff({ ...request, moves: false });
  const differ = jsondiffpatch.create({
    objectHash: keyOf(pair.arrayKey),
    arrays: { detectMove: true, includeValueOnMove: false },
  });
  const delta = differ.diff(structuredClone(pair.before), structuredClone(pair.after));
  const theirs = delta === undefined ? [] : jsonpatchFormatter.format(delta);
  const bytes = (patch: unknown[]) => JSON.stringify(patch).length;
  lengthRows.push({
    pair: pair.name,
    arrayMode: pair.arrayKey ? `${pair.arrayMode} (${pair.arrayKey})` : pair.arrayMode,
    "ours ops": ours.patch.length,
    "ours bytes": bytes(ours.patch),
    "ours moves": ours.stats.move,
    "ours, moves:false ops": plain.patch.length,
    "ours, moves:false bytes": bytes(plain.patch),
    "jsondiffpatch ops": theirs.length,
    "jsondiffpatch bytes": bytes(theirs),
    "jsondiffpatch moves": theirs.filter((op) => op.op === "move").length,
    "ours applies": applies(pair.before, ours.patch, pair.after) ? "yes" : "NO",
    "jsondiffpatch applies": applies(pair.before, theirs, pair.after) ? "yes" : "NO",
  });
}
console.log("\npatch length: json-diff against jsondiffpatch (RFC 6902 formatter, move detection on)");
console.table(lengthRows);

// ---------------------------------------------------------------------------------------------
// Main-thread time before payment for an 8 MiB body (issue 18's bounded-work rule: at most 50 ms).
// Before: the whole JSON reader and the request hash ran on the event loop. Now a body over 256 KiB
// is posted to a worker; the event loop's busy time is measured with eventLoopUtilization while the
// worker checks it.
function lockLike(count: number, bump: number): Json {
  const packages: Record<string, Json> = {};
  for (let i = 0; i < count; i++) {
    const version = bump > 0 && i % bump === 0 ? "2.0.1" : "1.4.2";
    packages[`node_modules/package-${i}`] = {
      version,
      resolved: `https://registry.example/package-${i}/-/package-${i}-${version}.tgz`,
      integrity: `sha512-${createHash("sha512").update(`${i}@${version}`).digest("base64")}`,
      dev: i % 3 === 0,
      license: "MIT",
      dependencies: { [`package-${(i * 7) % count}`]: "^1.0.0" },
    };
  }
  return { name: "app", lockfileVersion: 3, packages };
}
const bigBody = Buffer.from(
  `{"before":${JSON.stringify(lockLike(10600, 0), null, 2)},"after":${JSON.stringify(lockLike(10600, 7), null, 2)}}`,
);
const timeOnce = (fn: () => unknown) => {
  const start = performance.now();
  fn();
  return performance.now() - start;
};
const bigText = bigBody.toString("utf8");
const bigParsed = JSON.parse(bigText);
const bigInput = JsonDiffRequest.parse(bigParsed);
const oldPath = {
  "decode UTF-8": timeOnce(() => bigBody.toString("utf8")),
  "JSON.parse": timeOnce(() => JSON.parse(bigText)),
  "structure scan (depth, duplicate keys)": timeOnce(() =>
    checkJsonStructure(bigText, { maxDepth: 65, rejectDuplicateKeys: true }),
  ),
  "request schema": timeOnce(() => JsonDiffRequest.parse(bigParsed)),
  "request hash (canonicalize package, in the payment gate)": timeOnce(() => canonicalJson(bigInput)),
};
const pool = jsonDiffPool();
await pool.warm();
const busy: number[] = [];
const latency: number[] = [];
for (let round = 0; round < 5; round++) {
  const elu = performance.eventLoopUtilization();
  const start = performance.now();
  await pool.run({ kind: "check", body: bigBody });
  latency.push(performance.now() - start);
  busy.push(performance.eventLoopUtilization(elu).active);
}
const inlineText = JSON.stringify({ before: lockLike(330, 0), after: lockLike(330, 7) }, null, 2);
const inlineBytes = Buffer.from(inlineText);
const inlineMs = median(
  Array.from({ length: 7 }, () =>
    timeOnce(() => {
      // What the event loop does for an inline body before payment: read and check it, then the gate's request hash.
      canonicalJson(readJsonDiffRequest(inlineBytes));
    }),
  ),
);
await pool.close();
const prePayment = {
  bodyBytes: bigBody.length,
  "old path on the event loop, ms": Object.fromEntries(
    Object.entries(oldPath).map(([step, ms]) => [step, Number(ms.toFixed(1))]),
  ),
  "old path on the event loop, total ms": Number(
    Object.values(oldPath)
      .reduce((a, b) => a + b, 0)
      .toFixed(1),
  ),
  "new path: event loop busy while a worker checks it, ms (median of 5)": Number(median(busy).toFixed(1)),
  "new path: latency of the check, ms (median of 5)": Number(median(latency).toFixed(1)),
  inlineLimitBytes: 256 * 1024,
  "a body at the inline limit, checked and hashed on the event loop, ms": {
    bytes: inlineBytes.length,
    ms: Number(inlineMs.toFixed(1)),
  },
};
console.log("\nbefore payment, 8 MiB body");
console.log(prePayment);

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
  patchLength: lengthRows,
  prePayment,
});
console.log(
  `json-diff / compare = ${ratio} (target ≤ ${TARGET_RATIO}: ${ratio <= TARGET_RATIO ? "met" : "missed"})`,
);
