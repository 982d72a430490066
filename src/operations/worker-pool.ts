import os from "node:os";
import { Worker } from "node:worker_threads";
import { Problem, type ProblemBody } from "../problem.ts";

/**
 * A small pool of worker threads for an operation's heavy input work (parsing and checking a large
 * body before payment, running the operation after it), so no request keeps the event loop busy.
 * The same shape as openapi-audit's pool: workers start on demand and are reused, one task at a
 * time each; a task over its time or memory limit stops its worker; a full queue is refused at
 * once. Every failure is a Problem (status ≥ 400), so nothing is charged. Idle workers do not keep
 * the process alive.
 *
 * A worker module answers { type: "ready" } once, then one reply per { id, task }: { type: "done",
 * id, result } or { type: "problem", id, problem } (a Problem it threw: a 400 names the field).
 */
export interface WorkerPoolOptions {
  /** Names the work in messages ("json-diff"). */
  name: string;
  workerUrl: URL;
  size: number;
  maxQueued: number;
  timeLimitMs: number;
  queueTimeoutMs: number;
  startTimeoutMs: number;
  maxMemoryMb: number;
}

export type WorkerReply<R> =
  | { type: "ready" }
  | { type: "done"; id: number; result: R }
  | { type: "problem"; id: number; problem: SerializedProblem }
  | { type: "failed"; id: number; message: string };

export interface SerializedProblem {
  status: number;
  slug: string;
  title: string;
  detail: string;
  headers: Record<string, string>;
  extensions: Record<string, unknown>;
}

export const serializeProblem = (problem: Problem): SerializedProblem => ({
  status: problem.status,
  slug: problem.slug,
  title: problem.title,
  detail: problem.detail,
  headers: problem.headers,
  extensions: problem.extensions,
});

const revive = ({ status, slug, title, detail, headers, extensions }: SerializedProblem) => {
  const { errors, ...rest } = extensions as Pick<ProblemBody, "errors">;
  return new Problem(status, slug, title, detail, {
    headers,
    extensions: rest,
    ...(errors ? { errors } : {}),
  });
};

/** Defaults: at most half the CPUs (at least one), the rest stay free for the event loop and settlement. */
export const defaultPoolSize = () => Math.max(1, Math.min(4, Math.floor(os.availableParallelism() / 2)));

interface Waiting<T, R> {
  task: T;
  resolve: (result: R) => void;
  reject: (problem: Problem) => void;
  queueTimer?: NodeJS.Timeout;
}

interface Slot<T, R> {
  worker: Worker;
  ready: boolean;
  startTimer: NodeJS.Timeout;
  running?: { id: number; waiting: Waiting<T, R>; timer: NodeJS.Timeout };
}

const NOTHING_CHARGED = "nothing was charged";

export class WorkerPool<T, R> {
  private readonly slots = new Set<Slot<T, R>>();
  private readonly queue: Waiting<T, R>[] = [];
  private nextId = 1;
  private closed = false;
  private noStartsUntil = 0;
  private startError?: Error;

  constructor(readonly options: WorkerPoolOptions) {}

  private busy(why: string) {
    return new Problem(503, "worker-busy", "Workers busy", `${why}; retry shortly; ${NOTHING_CHARGED}`, {
      headers: { "retry-after": "2" },
    });
  }

  private unavailable(why: string) {
    return new Problem(503, "worker-unavailable", "Temporarily unavailable", `${why}; ${NOTHING_CHARGED}`, {
      headers: { "retry-after": "5" },
    });
  }

  run(task: T): Promise<R> {
    const { name, maxQueued, queueTimeoutMs } = this.options;
    if (this.closed) return Promise.reject(this.unavailable("the service is shutting down"));
    if (this.queue.length >= maxQueued) {
      return Promise.reject(this.busy(`${this.queue.length} ${name} tasks are already waiting for a worker`));
    }
    return new Promise((resolve, reject) => {
      const waiting: Waiting<T, R> = { task, resolve, reject };
      waiting.queueTimer = setTimeout(() => {
        const index = this.queue.indexOf(waiting);
        if (index < 0) return;
        this.queue.splice(index, 1);
        reject(this.busy(`no ${name} worker was free within ${queueTimeoutMs} ms`));
      }, queueTimeoutMs).unref();
      this.queue.push(waiting);
      this.pump();
    });
  }

  /** Starts every worker now and waits until they are ready (benchmarks, tests). */
  async warm(): Promise<void> {
    while (this.slots.size < this.options.size) this.spawn();
    while ([...this.slots].some((slot) => !slot.ready)) await new Promise((r) => setTimeout(r, 10));
  }

  async close(): Promise<void> {
    this.closed = true;
    for (const waiting of this.queue.splice(0)) {
      clearTimeout(waiting.queueTimer);
      waiting.reject(this.unavailable("the service is shutting down"));
    }
    await Promise.all(
      [...this.slots].map((slot) => {
        slot.running?.waiting.reject(this.unavailable("the service is shutting down"));
        return this.retire(slot);
      }),
    );
  }

  private pump(): void {
    while (this.queue.length > 0) {
      const idle = [...this.slots].find((slot) => slot.ready && !slot.running);
      if (!idle) break;
      this.dispatch(idle, this.queue.shift() as Waiting<T, R>);
    }
    if (Date.now() >= this.noStartsUntil) {
      const starting = [...this.slots].filter((slot) => !slot.ready).length;
      let wanted = Math.min(this.queue.length - starting, this.options.size - this.slots.size);
      while (wanted-- > 0) this.spawn();
    } else if (this.slots.size === 0) {
      const reason = this.startError?.message ?? "unknown error";
      for (const waiting of this.queue.splice(0)) {
        clearTimeout(waiting.queueTimer);
        waiting.reject(this.unavailable(`the ${this.options.name} workers could not start (${reason})`));
      }
    }
  }

  private spawn(): void {
    const worker = new Worker(this.options.workerUrl, {
      resourceLimits: { maxOldGenerationSizeMb: this.options.maxMemoryMb },
    });
    const slot: Slot<T, R> = {
      worker,
      ready: false,
      startTimer: setTimeout(
        () => this.fail(slot, new Error(`a worker did not start within ${this.options.startTimeoutMs} ms`)),
        this.options.startTimeoutMs,
      ).unref(),
    };
    worker.on("message", (reply: WorkerReply<R>) => this.onReply(slot, reply));
    worker.on("error", (error) => this.fail(slot, error));
    worker.on("exit", (code) => this.fail(slot, new Error(`a worker exited (code ${code})`)));
    this.slots.add(slot);
  }

  private dispatch(slot: Slot<T, R>, waiting: Waiting<T, R>): void {
    clearTimeout(waiting.queueTimer);
    const id = this.nextId++;
    const { timeLimitMs, name } = this.options;
    const timer = setTimeout(() => {
      if (slot.running?.id !== id) return;
      slot.running = undefined;
      void this.retire(slot);
      waiting.reject(
        new Problem(
          422,
          "time-limit",
          "Time limit exceeded",
          `the ${name} work did not finish within ${timeLimitMs} ms and was stopped; ${NOTHING_CHARGED}. Send less.`,
        ),
      );
      this.pump();
    }, timeLimitMs);
    slot.running = { id, waiting, timer };
    slot.worker.ref();
    slot.worker.postMessage({ id, task: waiting.task });
  }

  private onReply(slot: Slot<T, R>, reply: WorkerReply<R>): void {
    if (reply.type === "ready") {
      clearTimeout(slot.startTimer);
      this.noStartsUntil = 0;
      slot.ready = true;
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
    else if (reply.type === "problem") running.waiting.reject(revive(reply.problem));
    else running.waiting.reject(this.failed(reply.message));
    this.pump();
  }

  private failed(reason: string) {
    return new Problem(
      500,
      "worker-failed",
      "Internal error",
      `the ${this.options.name} work failed (${reason}); ${NOTHING_CHARGED}`,
    );
  }

  private fail(slot: Slot<T, R>, error: Error): void {
    if (!this.slots.has(slot)) return;
    const running = slot.running;
    slot.running = undefined;
    void this.retire(slot);
    if (running) {
      clearTimeout(running.timer);
      const outOfMemory = (error as NodeJS.ErrnoException).code === "ERR_WORKER_OUT_OF_MEMORY";
      running.waiting.reject(
        outOfMemory
          ? new Problem(
              422,
              "memory-limit",
              "Memory limit exceeded",
              `the ${this.options.name} work needed more than ${this.options.maxMemoryMb} MB and was stopped; ${NOTHING_CHARGED}`,
            )
          : this.failed(error.message),
      );
    } else if (!slot.ready) {
      this.startError = error;
      this.noStartsUntil = Date.now() + 5_000;
    }
    this.pump();
  }

  private async retire(slot: Slot<T, R>): Promise<void> {
    this.slots.delete(slot);
    clearTimeout(slot.startTimer);
    if (slot.running) clearTimeout(slot.running.timer);
    await slot.worker.terminate().catch(() => {});
  }
}

/**
 * The worker side: answers ready, then runs `handle` for each task. A thrown Problem goes back as
 * one (a 400 keeps its pointers); anything else is a failure (500, nothing charged).
 */
export async function serveWorker<T, R>(handle: (task: T) => R | Promise<R>): Promise<void> {
  const { parentPort } = await import("node:worker_threads");
  const port = parentPort;
  if (!port) throw new Error("this module must run in a worker thread");
  port.on("message", async ({ id, task }: { id: number; task: T }) => {
    let reply: WorkerReply<R>;
    try {
      reply = { type: "done", id, result: await handle(task) };
    } catch (error) {
      reply =
        error instanceof Problem
          ? { type: "problem", id, problem: serializeProblem(error) }
          : { type: "failed", id, message: error instanceof Error ? error.message : String(error) };
    }
    port.postMessage(reply);
  });
  port.postMessage({ type: "ready" } satisfies WorkerReply<R>);
}

/**
 * A request whose body is kept as bytes and checked in a worker: what the payment gate hashes to
 * recognise the same request again is its canonical digest (computed in the worker), not the
 * documents themselves, so nothing large is serialized on the main thread.
 */
export class OffThreadInput {
  constructor(
    readonly body: Uint8Array,
    readonly contentType: string | undefined,
    readonly query: Record<string, string[]>,
    /** sha256 of the RFC 8785 form of the validated request. */
    readonly digest: string,
  ) {}

  toJSON() {
    return { canonicalSha256: this.digest };
  }
}
