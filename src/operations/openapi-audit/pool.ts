import os from "node:os";
import { invalidRequest } from "../../problem.ts";
import { WorkerPool, type WorkerPoolOptions, type WorkerPoolVariant } from "../worker-pool.ts";
import type { AuditJob } from "./audit.ts";
import type { OpenApiAuditOutput } from "./schema.ts";

/** The generic pool's limits; an audit over its time or memory limit is a 422. */
export type AuditPoolOptions = Omit<WorkerPoolOptions, "name">;

export const DEFAULT_AUDIT_POOL_OPTIONS: AuditPoolOptions = {
  size: Math.min(4, Math.max(2, os.availableParallelism() - 1)),
  maxQueued: 32,
  timeLimitMs: 15_000,
  queueTimeoutMs: 20_000,
  startTimeoutMs: 30_000,
  maxMemoryMb: 512,
  workerUrl: new URL("./worker-entry.mjs", import.meta.url),
};

/** The audit's own names for the pool's problems, and its worker's `invalid` reply. */
const AUDIT_VARIANT: WorkerPoolVariant = {
  theWork: "the audit",
  tasks: (count) => `${count} audits`,
  aWorker: "an audit worker",
  slugs: {
    busy: ["audit-busy", "Audit workers busy"],
    unavailable: ["audit-unavailable", "Audit unavailable"],
    timeLimit: ["audit-time-limit", "Audit time limit exceeded"],
    memoryLimit: ["audit-memory-limit", "Audit memory limit exceeded"],
    failed: ["audit-failed", "Audit failed"],
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
 */
export class AuditPool extends WorkerPool<AuditJob, OpenApiAuditOutput> {
  constructor(options: Partial<AuditPoolOptions> = {}) {
    super({ name: "audit", ...DEFAULT_AUDIT_POOL_OPTIONS, ...options }, AUDIT_VARIANT);
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
