import os from "node:os";
import { Worker } from "node:worker_threads";
import type { RequestBody } from "../catalog/operation.ts";
import { Problem, type ProblemBody, type ProblemType } from "../problem.ts";

/**
 * A small pool of worker threads for an operation's heavy input work (parsing and checking a large
 * body before payment, running the operation after it), so no request keeps the event loop busy.
 * Used by openapi-audit, json-diff and csv-cleanup: workers start on demand and are reused, one task at a
 * time each; a task over its time or memory limit stops its worker; a full queue is refused at
 * once. Every failure is a Problem (status ≥ 400), so nothing is charged. Idle workers do not keep
 * the process alive.
 *
 * Fair share: a task may name its client (the payer). Waiting tasks are kept in one queue per client,
 * served round-robin, and a client may have at most `maxRunningPerClient` tasks running and
 * `maxQueuedPerClient` waiting, so one client's slow tasks cannot hold every worker while another
 * client's work waits. Tasks that name no client share one queue without those caps (the behaviour
 * of a pool that never names clients: one FIFO queue).
 *
 * A worker module answers { type: "ready" } once, then one reply per { id, task }: { type: "done",
 * id, result } or { type: "problem", id, problem } (a Problem it threw: a 400 names the field), or
 * { type: "failed", id, message } (or a reply type of the pool's own, see `WorkerPoolVariant`).
 */
export interface WorkerPoolOptions {
  /** Names the work in messages ("json-diff"). */
  name: string;
  workerUrl: URL;
  /** Worker threads, started on demand and kept for the next tasks. */
  size: number;
  /** Tasks waiting for a worker beyond this are refused at once (503). */
  maxQueued: number;
  /** One task's run time in its worker; over it the worker is stopped and the task is a 422. */
  timeLimitMs: number;
  /** Longest wait for a free worker before the task is refused (503). */
  queueTimeoutMs: number;
  /** Longest start of a worker (tsx and the worker's modules load in it). */
  startTimeoutMs: number;
  /** V8 old-generation heap of each worker; a task that needs more is a 422. */
  maxMemoryMb: number;
  /** Tasks one named client may have running at once; its next tasks wait (default: no cap). */
  maxRunningPerClient?: number;
  /** Tasks one named client may have waiting; beyond it that client is refused at once (503; default: maxQueued). */
  maxQueuedPerClient?: number;
}

export type WorkerRequest<T> = { id: number; task: T };

export type WorkerReply<R> =
  | { type: "ready" }
  | { type: "done"; id: number; result: R }
  | { type: "problem"; id: number; problem: SerializedProblem }
  | { type: "failed"; id: number; message: string };

export interface SerializedProblem {
  status: number;
  slug: ProblemType;
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

/**
 * How a pool names its work and its problems, and the reply types of its own protocol. Every field
 * has a generic default built from `WorkerPoolOptions.name`.
 */
export interface WorkerPoolVariant {
  /** The work in details: "the json-diff work", "the audit". */
  theWork?: string;
  /** Tasks waiting for a worker: "3 json-diff tasks", "3 audits". */
  tasks?: (count: number) => string;
  /** One worker in a failure's reason: "a worker", "an audit worker". */
  aWorker?: string;
  /** Each problem's type (its status and title are the catalogue's, src/problem.ts). */
  slugs?: Partial<Record<PoolProblem, ProblemType>>;
  /** What a time or memory limit's detail advises after "nothing was charged" (". Send less."). */
  advice?: Partial<Record<"timeLimit" | "memoryLimit", string>>;
  /** A reply of the pool's own type (not done, problem or failed) as the Problem its task fails with. */
  replyProblem?: (type: string, message: string) => Problem | undefined;
}

type PoolProblem = "busy" | "unavailable" | "timeLimit" | "memoryLimit" | "failed";

const GENERIC_SLUGS: Record<PoolProblem, ProblemType> = {
  busy: "worker-busy",
  unavailable: "worker-unavailable",
  timeLimit: "time-limit",
  memoryLimit: "memory-limit",
  failed: "worker-failed",
};
const RETRY_AFTER: Partial<Record<PoolProblem, string>> = { busy: "2", unavailable: "5" };

/**
 * Tests only: the service's own deadlines (`serviceDeadlines`) are multiplied by this while it is above 1.
 * Several test files at once on a small machine starve the workers (they run below the event loop's
 * priority) far beyond what the limits are meant for on a served machine, and an end-to-end test of an
 * operation asserts its answer, not its limits (pool.test.ts asserts those, with limits of its own).
 */
let deadlineStretch = 1;

/** Stretches the service's deadlines of the pools created from now on (tests only); returns the undo. */
export function stretchWorkerPoolDeadlines(factor: number): () => void {
  const before = deadlineStretch;
  deadlineStretch = factor;
  return () => {
    deadlineStretch = before;
  };
}

type Deadlines = Pick<WorkerPoolOptions, "timeLimitMs" | "queueTimeoutMs" | "startTimeoutMs">;

/** A pool's default deadlines, read when the pool is created (stretched in tests: stretchWorkerPoolDeadlines). */
export function serviceDeadlines(deadlines: Deadlines): Deadlines {
  return {
    timeLimitMs: deadlines.timeLimitMs * deadlineStretch,
    queueTimeoutMs: deadlines.queueTimeoutMs * deadlineStretch,
    startTimeoutMs: deadlines.startTimeoutMs * deadlineStretch,
  };
}

/** Defaults: at most half the CPUs (at least one), the rest stay free for the event loop and settlement. */
export const defaultPoolSize = () => Math.max(1, Math.min(4, Math.floor(os.availableParallelism() / 2)));

interface Waiting<T, R> {
  task: T;
  /** The client the task was run for; undefined: no client named (no per-client caps). */
  client: string | undefined;
  resolve: (result: R) => void;
  reject: (problem: Problem) => void;
  queueTimer?: NodeJS.Timeout;
}

interface Slot<T, R> {
  worker: Worker;
  ready: boolean;
  started: Promise<void>;
  markStarted: (error?: Error) => void;
  startTimer: NodeJS.Timeout;
  running?: { id: number; waiting: Waiting<T, R>; timer: NodeJS.Timeout };
}

const NOTHING_CHARGED = "nothing was charged";

/** The queue of tasks that name no client. */
const ANONYMOUS = Symbol("no client");
type ClientKey = string | typeof ANONYMOUS;

export class WorkerPool<T, R> {
  private readonly slots = new Set<Slot<T, R>>();
  /**
   * Waiting tasks, one FIFO queue per client; the map's order is the round-robin order (a client
   * served moves to the end). Only clients with waiting tasks are in it.
   */
  private readonly queues = new Map<ClientKey, Waiting<T, R>[]>();
  private queued = 0;
  /** Running tasks per named client. */
  private readonly runningByClient = new Map<string, number>();
  private nextId = 1;
  private closed = false;
  /** After a worker failed to start, no new start before this time (no tight restart loop). */
  private noStartsUntil = 0;
  private startError?: Error;
  /** Workers started over the pool's life (a test of reuse). */
  startedWorkers = 0;

  constructor(
    readonly options: WorkerPoolOptions,
    private readonly variant: WorkerPoolVariant = {},
  ) {}

  private problem(kind: PoolProblem, detail: string) {
    const slug = this.variant.slugs?.[kind] ?? GENERIC_SLUGS[kind];
    const retryAfter = RETRY_AFTER[kind];
    return Problem.of(slug, detail, {
      headers: retryAfter ? { "retry-after": retryAfter } : {},
    });
  }

  private get theWork() {
    return this.variant.theWork ?? `the ${this.options.name} work`;
  }

  private busy(why: string) {
    return this.problem("busy", `${why}; retry shortly; ${NOTHING_CHARGED}`);
  }

  private unavailable(why: string) {
    return this.problem("unavailable", `${why}; ${NOTHING_CHARGED}`);
  }

  private failed(reason: string) {
    return this.problem("failed", `${this.theWork} failed (${reason}); ${NOTHING_CHARGED}`);
  }

  private tasks(count: number) {
    return this.variant.tasks?.(count) ?? `${count} ${this.options.name} tasks`;
  }

  /**
   * Runs a task in a worker. `client` (e.g. the payer's address) names whose task it is: each client's
   * tasks wait in their own queue, clients are served in turn, and the per-client caps apply.
   */
  run(task: T, client?: string): Promise<R> {
    const { name, maxQueued, queueTimeoutMs } = this.options;
    if (this.closed) return Promise.reject(this.unavailable("the service is shutting down"));
    if (this.queued >= maxQueued) {
      return Promise.reject(this.busy(`${this.tasks(this.queued)} are already waiting for a worker`));
    }
    const key: ClientKey = client ?? ANONYMOUS;
    const ownQueue = this.queues.get(key);
    const perClient = this.options.maxQueuedPerClient ?? maxQueued;
    if (client !== undefined && (ownQueue?.length ?? 0) >= perClient) {
      const mine = this.tasks(ownQueue?.length ?? 0);
      return Promise.reject(this.busy(`${mine} of this client are already waiting for a worker`));
    }
    return new Promise((resolve, reject) => {
      const waiting: Waiting<T, R> = { task, client, resolve, reject };
      waiting.queueTimer = setTimeout(() => {
        if (!this.unqueue(waiting)) return;
        reject(this.busy(`no ${name} worker was free within ${queueTimeoutMs} ms`));
      }, queueTimeoutMs).unref();
      const queue = this.queues.get(key);
      if (queue) queue.push(waiting);
      else this.queues.set(key, [waiting]);
      this.queued++;
      this.pump();
    });
  }

  /** Takes a waiting task out of its queue; false if it is no longer waiting. */
  private unqueue(waiting: Waiting<T, R>): boolean {
    const key: ClientKey = waiting.client ?? ANONYMOUS;
    const queue = this.queues.get(key);
    const index = queue?.indexOf(waiting) ?? -1;
    if (!queue || index < 0) return false;
    queue.splice(index, 1);
    if (queue.length === 0) this.queues.delete(key);
    this.queued--;
    return true;
  }

  /** Every waiting task, taken out of the queues. */
  private drain(): Waiting<T, R>[] {
    const all = [...this.queues.values()].flat();
    this.queues.clear();
    this.queued = 0;
    return all;
  }

  /** How many more tasks this client may start now. */
  private room(key: ClientKey): number {
    if (key === ANONYMOUS) return Number.POSITIVE_INFINITY;
    const cap = this.options.maxRunningPerClient ?? Number.POSITIVE_INFINITY;
    return cap - (this.runningByClient.get(key) ?? 0);
  }

  /** The next task to start: the first client in turn with a task waiting and room to run it. */
  private next(): Waiting<T, R> | undefined {
    for (const [key, queue] of this.queues) {
      if (this.room(key) <= 0) continue;
      const waiting = queue.shift() as Waiting<T, R>;
      this.queued--;
      // Served: this client goes to the end of the turn (or leaves it, with nothing left waiting).
      this.queues.delete(key);
      if (queue.length > 0) this.queues.set(key, queue);
      return waiting;
    }
    return undefined;
  }

  /** Waiting tasks that could start now if there were workers (each client within its cap). */
  private startable(): number {
    let count = 0;
    for (const [key, queue] of this.queues) count += Math.min(queue.length, Math.max(0, this.room(key)));
    return count;
  }

  /** A task stopped running (answered, failed or stopped): its client has room again. */
  private finished(waiting: Waiting<T, R>): void {
    const { client } = waiting;
    if (client === undefined) return;
    const running = (this.runningByClient.get(client) ?? 1) - 1;
    if (running > 0) this.runningByClient.set(client, running);
    else this.runningByClient.delete(client);
  }

  /** Starts every worker now and waits until they are ready (benchmarks, tests). */
  async warm(): Promise<void> {
    while (this.slots.size < this.options.size) this.spawn();
    await Promise.all([...this.slots].map((slot) => slot.started));
  }

  get stats() {
    const slots = [...this.slots];
    return {
      workers: slots.length,
      busy: slots.filter((slot) => slot.running).length,
      queued: this.queued,
      startedWorkers: this.startedWorkers,
    };
  }

  /** Refuses new tasks, fails the waiting ones and stops every worker. */
  async close(): Promise<void> {
    this.closed = true;
    for (const waiting of this.drain()) {
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
    while (this.queued > 0) {
      const idle = [...this.slots].find((slot) => slot.ready && !slot.running);
      if (!idle) break;
      const waiting = this.next();
      if (!waiting) break;
      this.dispatch(idle, waiting);
    }
    if (Date.now() >= this.noStartsUntil) {
      const starting = [...this.slots].filter((slot) => !slot.ready).length;
      let wanted = Math.min(this.startable() - starting, this.options.size - this.slots.size);
      while (wanted-- > 0) this.spawn();
    } else if (this.slots.size === 0) {
      // No worker could start a moment ago and none is left: fail now rather than let tasks wait.
      const reason = this.startError?.message ?? "unknown error";
      for (const waiting of this.drain()) {
        clearTimeout(waiting.queueTimer);
        waiting.reject(this.unavailable(`the ${this.options.name} workers could not start (${reason})`));
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
    const aWorker = this.variant.aWorker ?? "a worker";
    const slot: Slot<T, R> = {
      worker,
      ready: false,
      started,
      markStarted,
      startTimer: setTimeout(
        () => this.fail(slot, new Error(`${aWorker} did not start within ${this.options.startTimeoutMs} ms`)),
        this.options.startTimeoutMs,
      ).unref(),
    };
    worker.on("message", (reply: WorkerReply<R>) => this.onReply(slot, reply));
    worker.on("error", (error) => this.fail(slot, error));
    worker.on("exit", (code) => this.fail(slot, new Error(`${aWorker} exited (code ${code})`)));
    this.slots.add(slot);
    this.startedWorkers++;
  }

  private dispatch(slot: Slot<T, R>, waiting: Waiting<T, R>): void {
    clearTimeout(waiting.queueTimer);
    const id = this.nextId++;
    const { timeLimitMs } = this.options;
    const timer = setTimeout(() => {
      if (slot.running?.id !== id) return;
      slot.running = undefined;
      this.finished(waiting);
      void this.retire(slot);
      const advice = this.variant.advice?.timeLimit ?? ". Send less.";
      const stopped = `did not finish within ${timeLimitMs} ms and was stopped`;
      waiting.reject(this.problem("timeLimit", `${this.theWork} ${stopped}; ${NOTHING_CHARGED}${advice}`));
      this.pump();
    }, timeLimitMs);
    slot.running = { id, waiting, timer };
    if (waiting.client !== undefined) {
      this.runningByClient.set(waiting.client, (this.runningByClient.get(waiting.client) ?? 0) + 1);
    }
    slot.worker.ref(); // A running task keeps the process alive; an idle worker does not.
    slot.worker.postMessage({ id, task: waiting.task } satisfies WorkerRequest<T>);
  }

  private onReply(slot: Slot<T, R>, reply: WorkerReply<R>): void {
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
    this.finished(running.waiting);
    slot.worker.unref();
    if (reply.type === "done") running.waiting.resolve(reply.result);
    else if (reply.type === "problem") running.waiting.reject(revive(reply.problem));
    else {
      // "failed", or a reply type of the pool's own protocol.
      const own = this.variant.replyProblem?.(reply.type, reply.message);
      running.waiting.reject(own ?? this.failed(reply.message));
    }
    this.pump();
  }

  /** A worker died (crash, out of memory, failed start): its task fails, the pool carries on. */
  private fail(slot: Slot<T, R>, error: Error): void {
    if (!this.slots.has(slot)) return;
    const running = slot.running;
    slot.running = undefined;
    void this.retire(slot);
    slot.markStarted(error);
    if (running) {
      clearTimeout(running.timer);
      this.finished(running.waiting);
      const outOfMemory = (error as NodeJS.ErrnoException).code === "ERR_WORKER_OUT_OF_MEMORY";
      const advice = this.variant.advice?.memoryLimit ?? "";
      const needed = `needed more than ${this.options.maxMemoryMb} MB and was stopped`;
      running.waiting.reject(
        outOfMemory
          ? this.problem("memoryLimit", `${this.theWork} ${needed}; ${NOTHING_CHARGED}${advice}`)
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
 * The module a worker thread starts from, beside the module asking (`from`, its import.meta.url). Built
 * JavaScript (dist/, production) starts the worker's own compiled module, `<worker>.js`; the TypeScript
 * sources (development, tests) start `shim`, a plain module that registers the tsx loader first, since
 * a worker thread does not inherit it.
 */
export function workerModule(from: string, worker: string, shim: string): URL {
  return new URL(from.endsWith(".ts") ? shim : `${worker}.js`, from);
}

/** Nice value of a worker thread: under contention the event loop (nice 0) gets about 9 times its CPU share. */
const WORKER_NICE = 10;

/**
 * Lowers the calling worker thread's CPU priority (Linux keeps a nice value per thread), so heavy
 * input work on every core never delays the event loop's answers (/healthz, 402s, reads) by more
 * than a scheduler slice. Where the priority cannot be set, the thread runs as it was.
 */
export function runBelowTheEventLoop(): void {
  try {
    os.setPriority(0, Math.max(os.getPriority(0), WORKER_NICE));
  } catch {}
}

/**
 * The worker side: answers ready, then runs `handle` for each task. A thrown Problem goes back as
 * one (a 400 keeps its pointers); anything else is a failure (500, nothing charged).
 */
export async function serveWorker<T, R>(handle: (task: T) => R | Promise<R>): Promise<void> {
  const { parentPort } = await import("node:worker_threads");
  const port = parentPort;
  if (!port) throw new Error("this module must run in a worker thread");
  runBelowTheEventLoop();
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
 * A request whose body is kept as it came (text or bytes) and checked in a worker: what the payment gate hashes to
 * recognise the same request again is its canonical digest (computed in the worker), not the
 * documents themselves, so nothing large is serialized on the main thread.
 */
export class OffThreadInput {
  constructor(
    readonly body: RequestBody,
    readonly contentType: string | undefined,
    readonly query: Record<string, string[]>,
    /** sha256 of the RFC 8785 form of the validated request. */
    readonly digest: string,
  ) {}

  toJSON() {
    return { canonicalSha256: this.digest };
  }
}
