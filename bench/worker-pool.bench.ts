/**
 * Our worker pool (src/operations/worker-pool.ts) against piscina and tinypool, in the same run, with
 * the same worker count and the same task handler (bench/pool-workers/handler.ts) at the same CPU
 * priority (issue 34: replace the pool by a maintained library, or measure why not).
 *
 * - "json-diff 2×200 KB": the operation's worker work after payment (a ~400 KB request body).
 * - "tiny": a two-leaf json-diff body: what the pool itself costs per task.
 *   Each is a closed loop with 2 tasks in flight per worker; tasks/s and the p99 of a task's time
 *   from run() to its answer, median over interleaved rounds, and each library's ratio to ours.
 * - "deadline kill + replace": a one-worker pool; a task that never ends is stopped at 100 ms (ours:
 *   timeLimitMs; the libraries: an AbortSignal, which terminates a running task's worker), then a
 *   tiny task: how late the refusal comes after the deadline, and how long the next answer takes
 *   (a new worker's start).
 * - Two failures, each answered within 3 s or not: a worker that exits in the middle of its task,
 *   and a pool whose worker module cannot load (the second task, after the first failed start).
 *
 * Run: npm run bench -- worker-pool   (or npx tsx bench/worker-pool.bench.ts)
 */
import { performance } from "node:perf_hooks";
import { Piscina } from "piscina";
import Tinypool from "tinypool";
import { WorkerPool } from "../src/operations/worker-pool.ts";
import { changeLeaves, recordsDocument, seededRandom } from "../test/helpers/random-json.ts";
import { type BenchRow, report } from "./lib.ts";
import type { BenchTask } from "./pool-workers/handler.ts";

const SIZE = 2;
const IN_FLIGHT = 2 * SIZE;
const ROUNDS = 5;
const HEAVY_TASKS = 32;
const TINY_TASKS = 600;
const DEADLINE_MS = 100;
const DEADLINE_REPEATS = 3;
const MEMORY_MB = 768;
/** Limits no bench task reaches (the deadline bench sets its own). */
const NEVER = 600_000;

const random = seededRandom(20261128);
const before = recordsDocument(random, 200_000);
const heavyBody = JSON.stringify({ before, after: changeLeaves(random, before, 0.01) });
const tinyBody = JSON.stringify({ before: { a: 1 }, after: { a: 2 } });

const OURS_WORKER = new URL("./pool-workers/ours-entry.mjs", import.meta.url);
const LIBRARY_WORKER = new URL("./pool-workers/library-entry.mjs", import.meta.url).href;

interface Pool {
  run(task: BenchTask, signal?: AbortSignal): Promise<unknown>;
  close(): Promise<void>;
}

const BROKEN_WORKER = new URL("../test/helpers/audit-workers/broken-worker.mjs", import.meta.url);

type CreatePool = (size: number, timeLimitMs: number, worker?: URL) => Pool;

const pools: Record<string, CreatePool> = {
  ours: (size, timeLimitMs, worker = OURS_WORKER) => {
    const pool = new WorkerPool<BenchTask, string>({
      name: "bench",
      workerUrl: worker,
      size,
      maxQueued: 1000,
      timeLimitMs,
      queueTimeoutMs: NEVER,
      startTimeoutMs: NEVER,
      maxMemoryMb: MEMORY_MB,
    });
    return { run: (task) => pool.run(task), close: () => pool.close() };
  },
  piscina: (size, _timeLimitMs, worker) => {
    const pool = new Piscina({
      filename: worker?.href ?? LIBRARY_WORKER,
      minThreads: size,
      maxThreads: size,
      idleTimeout: NEVER,
      maxQueue: 1000,
      resourceLimits: { maxOldGenerationSizeMb: MEMORY_MB },
    });
    // Without a listener a worker that fails to start throws 'error' at the process.
    pool.on("error", () => {});
    return { run: (task, signal) => pool.run(task, { signal }), close: () => pool.destroy() };
  },
  tinypool: (size, _timeLimitMs, worker) => {
    const pool = new Tinypool({
      filename: worker?.href ?? LIBRARY_WORKER,
      minThreads: size,
      maxThreads: size,
      idleTimeout: NEVER,
      maxQueue: 1000,
      isolateWorkers: false,
      resourceLimits: { maxOldGenerationSizeMb: MEMORY_MB },
    });
    pool.on("error", () => {});
    return { run: (task, signal) => pool.run(task, { signal }), close: () => pool.destroy() };
  },
};

const quantile = (values: number[], q: number) => {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.ceil(q * sorted.length) - 1)] as number;
};
const median = (values: number[]) => quantile(values, 0.5);

/** `count` tasks, `IN_FLIGHT` at a time: tasks per second and each task's time to its answer. */
async function closedLoop(pool: Pool, task: BenchTask, count: number) {
  const latencies: number[] = [];
  let next = 0;
  const start = performance.now();
  const lane = async () => {
    while (next < count) {
      next++;
      const sent = performance.now();
      await pool.run(task);
      latencies.push(performance.now() - sent);
    }
  };
  await Promise.all(Array.from({ length: IN_FLIGHT }, lane));
  return { perSecond: count / ((performance.now() - start) / 1000), p99: quantile(latencies, 0.99) };
}

const workloads: Record<string, { task: BenchTask; count: number }> = {
  "json-diff 2×200 KB": { task: { kind: "diff", body: heavyBody }, count: HEAVY_TASKS },
  tiny: { task: { kind: "diff", body: tinyBody }, count: TINY_TASKS },
};

// Every pool started and warm (each worker has answered) before any timing.
const warm: Record<string, Pool> = {};
for (const [name, create] of Object.entries(pools)) {
  warm[name] = create(SIZE, NEVER);
  await closedLoop(warm[name], workloads.tiny?.task as BenchTask, 4 * IN_FLIGHT);
}

// Interleaved rounds (the machine is shared and noisy): per round every pool runs every workload,
// the pools in a rotated order (no pool always runs first).
const results = new Map<string, { perSecond: number[]; p99: number[] }>();
const names = Object.keys(warm);
for (let round = 0; round < ROUNDS; round++) {
  const order = names.map((_, i) => names[(i + round) % names.length] as string);
  for (const [workload, { task, count }] of Object.entries(workloads)) {
    for (const name of order) {
      const pool = warm[name] as Pool;
      const { perSecond, p99 } = await closedLoop(pool, task, count);
      const key = `${workload}\u0000${name}`;
      const series = results.get(key) ?? { perSecond: [], p99: [] };
      series.perSecond.push(perSecond);
      series.p99.push(p99);
      results.set(key, series);
    }
  }
}
for (const pool of Object.values(warm)) await pool.close();

const rows: BenchRow[] = [];
for (const workload of Object.keys(workloads)) {
  const ours = results.get(`${workload}\u0000ours`) as { perSecond: number[]; p99: number[] };
  for (const name of Object.keys(pools)) {
    const series = results.get(`${workload}\u0000${name}`) as { perSecond: number[]; p99: number[] };
    rows.push({
      workload,
      pool: name,
      "tasks/s": Number(median(series.perSecond).toFixed(1)),
      "p99 ms": Number(median(series.p99).toFixed(2)),
      "tasks/s ÷ ours": Number(
        median(series.perSecond.map((value, round) => value / (ours.perSecond[round] as number))).toFixed(2),
      ),
      "p99 ÷ ours": Number(
        median(series.p99.map((value, round) => value / (ours.p99[round] as number))).toFixed(2),
      ),
    });
  }
}

// The deadline: the refusal's delay past it, then the next task's answer (on a new worker).
const deadlineRows: BenchRow[] = [];
for (const [name, create] of Object.entries(pools)) {
  const late: number[] = [];
  const nextAnswer: number[] = [];
  for (let repeat = 0; repeat < DEADLINE_REPEATS; repeat++) {
    const pool = create(1, DEADLINE_MS);
    await pool.run({ kind: "diff", body: tinyBody });
    const sent = performance.now();
    const stopped = await pool.run({ kind: "spin" }, AbortSignal.timeout(DEADLINE_MS)).then(
      () => false,
      () => true,
    );
    if (!stopped) throw new Error(`${name}: the endless task was not stopped`);
    const refused = performance.now();
    await pool.run({ kind: "diff", body: tinyBody });
    late.push(refused - sent - DEADLINE_MS);
    nextAnswer.push(performance.now() - refused);
    await pool.close();
  }
  deadlineRows.push({
    pool: name,
    [`refused ms after the ${DEADLINE_MS} ms deadline`]: Number(median(late).toFixed(1)),
    "next answer ms (new worker)": Number(median(nextAnswer).toFixed(1)),
  });
}

// Failures: what the caller gets, and when (a task still waiting after 3 s is left behind).
const ANSWER_WITHIN_MS = 3_000;
const failureRows: BenchRow[] = [];
async function outcome(task: Promise<unknown>): Promise<string> {
  const sent = performance.now();
  task.catch(() => {});
  let timer: NodeJS.Timeout | undefined;
  const pending = new Promise<string>((resolve) => {
    timer = setTimeout(() => resolve(`no answer after ${ANSWER_WITHIN_MS / 1000} s`), ANSWER_WITHIN_MS);
  });
  const answered = task.then(
    () => "answered",
    (error: Error) => `refused in ${Math.round(performance.now() - sent)} ms: ${error.message.slice(0, 60)}`,
  );
  try {
    return await Promise.race([answered, pending]);
  } finally {
    clearTimeout(timer);
  }
}
for (const [name, create] of Object.entries(pools)) {
  const crashing = create(1, NEVER);
  await crashing.run({ kind: "diff", body: tinyBody });
  const exited = await outcome(crashing.run({ kind: "exit" }));
  const broken = create(1, NEVER, BROKEN_WORKER);
  await outcome(broken.run({ kind: "diff", body: tinyBody }));
  const afterFailedStart = await outcome(broken.run({ kind: "diff", body: tinyBody }));
  await Promise.race([
    Promise.all([crashing.close(), broken.close()]),
    new Promise((r) => setTimeout(r, 1000)),
  ]);
  failureRows.push({
    pool: name,
    "worker exits mid-task": exited,
    "2nd task after a failed start": afterFailedStart,
  });
}

report("worker-pool", rows, {
  deadline: deadlineRows,
  failures: failureRows,
  workers: SIZE,
  inFlight: IN_FLIGHT,
  rounds: ROUNDS,
  heavyBodyBytes: Buffer.byteLength(heavyBody),
  note: "medians over interleaved rounds; workers load the TypeScript sources through tsx, as in development and tests",
});
console.table(deadlineRows);
console.table(failureRows);
