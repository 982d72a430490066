import os from "node:os";
import { invalidRequest } from "../../problem.ts";
import {
  serviceDeadlines,
  WorkerPool,
  type WorkerPoolOptions,
  type WorkerPoolVariant,
  workerModule,
} from "../worker-pool.ts";
import type { AuditJob } from "./audit.ts";
import type { OpenApiAuditOutput } from "./schema.ts";

/** The generic pool's limits; an audit over its time or memory limit is a 422. */
export type AuditPoolOptions = Omit<WorkerPoolOptions, "name">;

const SIZE = Math.min(4, Math.max(2, os.availableParallelism() - 1));

/** Audits one payer may run at once: all workers but one (at least one), so another payer always has one. */
const runningPerPayer = (size: number) => Math.max(1, size - 1);

const AUDIT_DEADLINES = { timeLimitMs: 15_000, queueTimeoutMs: 20_000, startTimeoutMs: 30_000 };

export const DEFAULT_AUDIT_POOL_OPTIONS: AuditPoolOptions = {
  size: SIZE,
  maxQueued: 32,
  // One payer never holds every worker: at least one stays for the others (served in turn).
  maxRunningPerClient: runningPerPayer(SIZE),
  maxQueuedPerClient: 8,
  ...AUDIT_DEADLINES,
  maxMemoryMb: 512,
  workerUrl: workerModule(import.meta.url, "./worker", "./worker-entry.mjs"),
};

/** The audit's own names for the pool's problems, and its worker's `invalid` reply. */
const AUDIT_VARIANT: WorkerPoolVariant = {
  theWork: "the audit",
  tasks: (count) => `${count} audits`,
  aWorker: "an audit worker",
  slugs: {
    busy: "audit-busy",
    unavailable: "audit-unavailable",
    timeLimit: "audit-time-limit",
    memoryLimit: "audit-memory-limit",
    failed: "audit-failed",
  },
  advice: {
    timeLimit: ". Send a smaller contract (e.g. fewer paths per call).",
    memoryLimit: ". Send a smaller contract.",
  },
  // A text contract parsed in the worker was refused: a 400 at /contract.
  replyProblem: (type, message) =>
    type === "invalid"
      ? invalidRequest([{ pointer: "/contract", message: `in the contract text: ${message}` }])
      : undefined,
};

/**
 * A small pool of audit worker threads (the generic worker pool with the audit's names). Workers
 * start on demand, are reused for later audits, run one audit at a time each, and are stopped
 * (then replaced on demand) when an audit exceeds its time or memory limit. Every failure is a
 * Problem (status ≥ 400), so the payment is released. Idle workers do not keep the process alive.
 * Audits run for a payer (`run(job, payer)`) get a fair share: each payer's audits wait in their own
 * queue, payers are served in turn, and one payer runs at most `maxRunningPerClient` at once.
 */
export class AuditPool extends WorkerPool<AuditJob, OpenApiAuditOutput> {
  constructor(options: Partial<AuditPoolOptions> = {}) {
    const size = options.size ?? DEFAULT_AUDIT_POOL_OPTIONS.size;
    super(
      {
        name: "audit",
        ...DEFAULT_AUDIT_POOL_OPTIONS,
        ...serviceDeadlines(AUDIT_DEADLINES),
        maxRunningPerClient: runningPerPayer(size),
        ...options,
      },
      AUDIT_VARIANT,
    );
  }
}

let shared: AuditPool | undefined;

/** The service's pool, created on the first audit. */
export const sharedAuditPool = () => {
  shared ??= new AuditPool();
  return shared;
};

/** Stops the service's audit workers (a shutdown hook; idle workers never hold the process open anyway). */
export async function closeSharedAuditPool(): Promise<void> {
  const pool = shared;
  shared = undefined;
  await pool?.close();
}
