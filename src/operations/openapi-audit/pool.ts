import os from "node:os";
import { Worker } from "node:worker_threads";
import { invalidRequest, Problem } from "../../problem.ts";
import type { AuditJob } from "./audit.ts";
import type { OpenApiAuditOutput } from "./schema.ts";
import type { WorkerReply, WorkerRequest } from "./worker.ts";

export interface AuditPoolOptions {
  /** Worker threads, started on demand and kept for the next audits. */
  size: number;
  /** Audits waiting for a worker beyond this are refused at once (503). */
  maxQueued: number;
  /** One audit's run time in its worker; over it the worker is stopped and the audit is a 422. */
  timeLimitMs: number;
  /** Longest wait for a free worker before the audit is refused (503). */
  queueTimeoutMs: number;
  /** Longest start of a worker (tsx, Redocly and its configuration load in it). */
  startTimeoutMs: number;
  /** V8 old-generation heap of each worker; an audit that needs more is a 422. */
  maxMemoryMb: number;
  workerUrl: URL;
}

export const DEFAULT_AUDIT_POOL_OPTIONS: AuditPoolOptions = {
  size: Math.min(4, Math.max(2, os.availableParallelism() - 1)),
  maxQueued: 32,
  timeLimitMs: 15_000,
  queueTimeoutMs: 20_000,
  startTimeoutMs: 30_000,
  maxMemoryMb: 512,
  workerUrl: new URL("./worker-entry.mjs", import.meta.url),
};

interface Waiting {
  job: AuditJob;
  resolve: (result: OpenApiAuditOutput) => void;
  reject: (problem: Problem) => void;
  queueTimer?: NodeJS.Timeout;
}

interface Slot {
  worker: Worker;
  ready: boolean;
  started: Promise<void>;
  markStarted: (error?: Error) => void;
  startTimer: NodeJS.Timeout;
  running?: { id: number; waiting: Waiting; timer: NodeJS.Timeout };
}

const START_RETRY_DELAY_MS = 5_000;
const NOTHING_CHARGED = "nothing was charged";

const timeLimitExceeded = (ms: number) =>
  new Problem(
    422,
    "audit-time-limit",
    "Audit time limit exceeded",
    `the audit did not finish within ${ms} ms and was stopped; ${NOTHING_CHARGED}. ` +
      "Send a smaller contract (e.g. fewer paths per call).",
  );
const memoryLimitExceeded = (mb: number) =>
  new Problem(
    422,
    "audit-memory-limit",
    "Audit memory limit exceeded",
    `the audit needed more than ${mb} MB and was stopped; ${NOTHING_CHARGED}. Send a smaller contract.`,
  );
const auditFailed = (reason: string) =>
  new Problem(500, "audit-failed", "Audit failed", `the audit failed (${reason}); ${NOTHING_CHARGED}`);
const busy = (why: string) =>
  new Problem(503, "audit-busy", "Audit workers busy", `${why}; retry shortly; ${NOTHING_CHARGED}`, {
    headers: { "retry-after": "2" },
  });
const unavailable = (why: string) =>
  new Problem(503, "audit-unavailable", "Audit unavailable", `${why}; ${NOTHING_CHARGED}`, {
    headers: { "retry-after": "5" },
  });

/**
 * A small pool of audit worker threads. Workers start on demand, are reused for later audits,
 * run one audit at a time each, and are stopped (then replaced on demand) when an audit exceeds
 * its time or memory limit. Every failure is a Problem (status ≥ 400), so the payment is released.
 * Idle workers do not keep the process alive.
 */
export class AuditPool {
  readonly options: AuditPoolOptions;
  private readonly slots = new Set<Slot>();
  private readonly queue: Waiting[] = [];
  private nextId = 1;
  private closed = false;
  /** After a worker failed to start, no new start before this time (no tight restart loop). */
  private noStartsUntil = 0;
  private startError?: Error;
  /** Workers started over the pool's life (a test of reuse). */
  startedWorkers = 0;

  constructor(options: Partial<AuditPoolOptions> = {}) {
    this.options = { ...DEFAULT_AUDIT_POOL_OPTIONS, ...options };
  }

  run(job: AuditJob): Promise<OpenApiAuditOutput> {
    if (this.closed) return Promise.reject(unavailable("the service is shutting down"));
    if (this.queue.length >= this.options.maxQueued) {
      return Promise.reject(busy(`${this.queue.length} audits are already waiting for a worker`));
    }
    return new Promise((resolve, reject) => {
      const waiting: Waiting = { job, resolve, reject };
      waiting.queueTimer = setTimeout(() => {
        const index = this.queue.indexOf(waiting);
        if (index < 0) return;
        this.queue.splice(index, 1);
        reject(busy(`no audit worker was free within ${this.options.queueTimeoutMs} ms`));
      }, this.options.queueTimeoutMs).unref();
      this.queue.push(waiting);
      this.pump();
    });
  }

  /** Starts every worker now (e.g. before a benchmark) and waits until they are ready. */
  async warm(): Promise<void> {
    while (this.slots.size < this.options.size) this.spawn();
    await Promise.all([...this.slots].map((slot) => slot.started));
  }

  get stats() {
    const slots = [...this.slots];
    return {
      workers: slots.length,
      busy: slots.filter((slot) => slot.running).length,
      queued: this.queue.length,
      startedWorkers: this.startedWorkers,
    };
  }

  /** Refuses new audits, fails the waiting ones and stops every worker. */
  async close(): Promise<void> {
    this.closed = true;
    for (const waiting of this.queue.splice(0)) {
      clearTimeout(waiting.queueTimer);
      waiting.reject(unavailable("the service is shutting down"));
    }
    const stopping = [...this.slots].map((slot) => {
      slot.running?.waiting.reject(unavailable("the service is shutting down"));
      return this.retire(slot);
    });
    await Promise.all(stopping);
  }

  private pump(): void {
    while (this.queue.length > 0) {
      const idle = [...this.slots].find((slot) => slot.ready && !slot.running);
      if (!idle) break;
      this.dispatch(idle, this.queue.shift() as Waiting);
    }
    if (Date.now() >= this.noStartsUntil) {
      const starting = [...this.slots].filter((slot) => !slot.ready).length;
      let wanted = Math.min(this.queue.length - starting, this.options.size - this.slots.size);
      while (wanted-- > 0) this.spawn();
    } else if (this.slots.size === 0) {
      // No worker could start a moment ago and none is left: fail now rather than let audits wait.
      const reason = this.startError?.message ?? "unknown error";
      for (const waiting of this.queue.splice(0)) {
        clearTimeout(waiting.queueTimer);
        waiting.reject(unavailable(`the audit workers could not start (${reason})`));
      }
    }
  }

  private spawn(): void {
    let markStarted: (error?: Error) => void = () => {};
    const started = new Promise<void>((resolve, reject) => {
      markStarted = (error) => (error ? reject(error) : resolve());
    });
    started.catch(() => {}); // Only warm() waits on it; a start failure is handled in fail().
    const worker = new Worker(this.options.workerUrl, {
      resourceLimits: { maxOldGenerationSizeMb: this.options.maxMemoryMb },
    });
    const slot: Slot = {
      worker,
      ready: false,
      started,
      markStarted,
      startTimer: setTimeout(
        () =>
          this.fail(
            slot,
            new Error(`an audit worker did not start within ${this.options.startTimeoutMs} ms`),
          ),
        this.options.startTimeoutMs,
      ).unref(),
    };
    worker.on("message", (reply: WorkerReply) => this.onReply(slot, reply));
    worker.on("error", (error) => this.fail(slot, error));
    worker.on("exit", (code) => this.fail(slot, new Error(`an audit worker exited (code ${code})`)));
    this.slots.add(slot);
    this.startedWorkers++;
  }

  private dispatch(slot: Slot, waiting: Waiting): void {
    clearTimeout(waiting.queueTimer);
    const id = this.nextId++;
    const timer = setTimeout(() => {
      if (slot.running?.id !== id) return;
      slot.running = undefined;
      void this.retire(slot);
      waiting.reject(timeLimitExceeded(this.options.timeLimitMs));
      this.pump();
    }, this.options.timeLimitMs);
    slot.running = { id, waiting, timer };
    slot.worker.ref(); // A running audit keeps the process alive; an idle worker does not.
    slot.worker.postMessage({ id, job: waiting.job } satisfies WorkerRequest);
  }

  private onReply(slot: Slot, reply: WorkerReply): void {
    if (reply.type === "ready") {
      clearTimeout(slot.startTimer);
      this.noStartsUntil = 0;
      slot.ready = true;
      slot.markStarted();
      slot.worker.unref();
      this.pump();
      return;
    }
    const running = slot.running;
    if (!running || running.id !== reply.id) return;
    clearTimeout(running.timer);
    slot.running = undefined;
    slot.worker.unref();
    if (reply.type === "done") running.waiting.resolve(reply.result);
    else if (reply.type === "invalid") {
      running.waiting.reject(
        invalidRequest([{ pointer: "/contract", message: `in the contract text: ${reply.message}` }]),
      );
    } else running.waiting.reject(auditFailed(reply.message));
    this.pump();
  }

  /** A worker died (crash, out of memory, failed start): its audit fails, the pool carries on. */
  private fail(slot: Slot, error: Error): void {
    if (!this.slots.has(slot)) return;
    const running = slot.running;
    slot.running = undefined;
    void this.retire(slot);
    slot.markStarted(error);
    if (running) {
      clearTimeout(running.timer);
      const outOfMemory = (error as NodeJS.ErrnoException).code === "ERR_WORKER_OUT_OF_MEMORY";
      running.waiting.reject(
        outOfMemory ? memoryLimitExceeded(this.options.maxMemoryMb) : auditFailed(error.message),
      );
    } else if (!slot.ready) {
      this.startError = error;
      this.noStartsUntil = Date.now() + START_RETRY_DELAY_MS;
    }
    this.pump();
  }

  private async retire(slot: Slot): Promise<void> {
    this.slots.delete(slot);
    clearTimeout(slot.startTimer);
    if (slot.running) clearTimeout(slot.running.timer);
    await slot.worker.terminate().catch(() => {});
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
