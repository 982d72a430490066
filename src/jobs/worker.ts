import { randomUUID } from "node:crypto";
import os from "node:os";
import type { Logger } from "pino";
import type { JobRun } from "../contract/operation.ts";
import type { Job, JobProgress, JobQueue } from "./queue.ts";

/** What the worker gives a handler: an operation's job run (the contract's JobRun), and the job itself. */
export interface JobContext extends JobRun {
  job: Job;
}

/** Runs one job of a type; resolves with the result, throws JobFailure (or anything) to fail it. */
export type JobHandler = (input: unknown, context: JobContext) => Promise<unknown>;

/** A job that cannot succeed (its providers kept failing, say), with a code the client can act on. */
export class JobFailure extends Error {
  constructor(
    readonly code: string,
    message: string,
  ) {
    super(message);
  }
}

/** A worker is alive while its last report is younger than a lease: it reports three times per lease. */
export const livenessSince = (now: number, leaseMs: number) => now - leaseMs;

const MAINTENANCE_INTERVAL_MS = 60_000;
/** Worker rows unseen for a day are deleted (they are only kept to show recent crashes). */
const FORGET_WORKERS_AFTER_MS = 86_400_000;

export interface WorkerOptions {
  queue: JobQueue;
  handlers: ReadonlyMap<string, JobHandler>;
  log: Logger;
  leaseMs: number;
  concurrency: number;
  retentionMs: number;
  /** How often an idle worker looks for work. */
  pollMs?: number;
  /** Why a claimed job's payment can no longer settle (the job is then failed, not run); undefined: run it. */
  whyUnpayable?: (job: Job) => Promise<string | undefined>;
  /** Told when a job ended here (its held payment can be settled or released now). */
  onJobFinished?: () => void;
  now?: () => number;
}

/**
 * Takes jobs from the queue and runs them: any number of workers, in any number of processes,
 * share one store. Liveness and leases are renewed every third of a lease; a worker that dies
 * simply stops renewing, and its jobs are taken again by another once their leases run out.
 */
export class JobWorker {
  readonly id = `${os.hostname()}:${process.pid}:${randomUUID().slice(0, 8)}`;
  private readonly running = new Map<string, { controller: AbortController; done: Promise<void> }>();
  private readonly timers: NodeJS.Timeout[] = [];
  private stopped = false;
  private wake: (() => void) | undefined;
  private stopListening: (() => void) | undefined;
  private loop: Promise<void> | undefined;
  private readonly now: () => number;
  private readonly types: string[];
  private readonly startedAt = new Date().toISOString();

  constructor(private readonly options: WorkerOptions) {
    this.now = options.now ?? Date.now;
    this.types = [...options.handlers.keys()];
  }

  /** Reports liveness (awaited: once this resolves the API sees the worker), then starts taking jobs. */
  async start(): Promise<void> {
    await this.reportLiveness();
    const beat = this.options.leaseMs / 3;
    this.timers.push(setInterval(() => this.reportLiveness().catch(() => {}), beat));
    this.timers.push(setInterval(() => this.maintain(), MAINTENANCE_INTERVAL_MS));
    for (const timer of this.timers) timer.unref();
    // A job queued by this process is taken at once, not at the next poll.
    this.stopListening = this.options.queue.runnable.listen(() => this.wake?.());
    this.maintain();
    this.loop = this.takeJobs();
    this.options.log.info({ worker: this.id, types: this.types }, "worker started");
  }

  /** Stops taking jobs, lets running ones finish for up to `graceMs`, then aborts them and leaves. */
  async stop(graceMs = 10_000): Promise<void> {
    if (this.stopped) return;
    this.stopped = true;
    this.stopListening?.();
    this.wake?.();
    for (const timer of this.timers) clearInterval(timer);
    await this.loop;
    const all = Promise.all([...this.running.values()].map((entry) => entry.done));
    const deadline = new Promise((resolve) => setTimeout(resolve, graceMs).unref());
    await Promise.race([all, deadline]);
    for (const entry of this.running.values()) entry.controller.abort(new Error("worker stopping"));
    await all;
    await this.options.queue.removeWorker(this.id).catch(() => {});
    this.options.log.info({ worker: this.id }, "worker stopped");
  }

  private reportLiveness(): Promise<void> {
    return this.options.queue.reportWorker({
      id: this.id,
      types: this.types,
      host: os.hostname(),
      pid: process.pid,
      startedAt: this.startedAt,
    });
  }

  private maintain(): void {
    const now = this.now();
    this.options.queue
      .maintain({
        purgeBefore: now - this.options.retentionMs,
        forgetWorkersBefore: now - FORGET_WORKERS_AFTER_MS,
      })
      .then((report) => {
        if (report.promoted + report.dropped + report.purged > 0) {
          this.options.log.info({ ...report }, "job maintenance");
        }
      })
      .catch((error) => this.options.log.warn({ err: error }, "job maintenance failed"));
  }

  private async takeJobs(): Promise<void> {
    const pollMs = this.options.pollMs ?? 500;
    while (!this.stopped) {
      let job: Job | undefined;
      if (this.running.size < this.options.concurrency) {
        try {
          job = await this.options.queue.claim(this.id, this.types, this.options.leaseMs);
        } catch (error) {
          this.options.log.warn({ err: error }, "could not take a job");
        }
      }
      if (job) {
        this.run(job);
        continue;
      }
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, pollMs);
        this.wake = () => {
          clearTimeout(timer);
          resolve();
        };
      });
    }
  }

  private run(job: Job): void {
    const { queue, leaseMs } = this.options;
    const log = this.options.log.child({ job: job.id, type: job.type, attempt: job.attempts });
    const controller = new AbortController();
    let latest: JobProgress | undefined;
    const renew = async () => {
      const held = await queue.heartbeat(job.id, this.id, leaseMs, latest);
      if (!held) controller.abort(new Error("the job's lease was lost to another worker"));
    };
    const heartbeat = setInterval(() => renew().catch(() => {}), leaseMs / 3);
    const handler = this.options.handlers.get(job.type);
    const entry = { controller, done: Promise.resolve() };
    this.running.set(job.id, entry);
    entry.done = (async () => {
      log.info("job started");
      try {
        if (!handler) throw new JobFailure("unsupported", `no handler for jobs of type ${job.type}`);
        const unpayable = await this.options.whyUnpayable?.(job);
        if (unpayable) {
          throw new JobFailure(
            "payment_unpayable",
            `${unpayable}: the job was not run and nothing was charged`,
          );
        }
        const result = await handler(job.input, {
          job,
          log,
          signal: controller.signal,
          progress: async (progress) => {
            latest = progress;
            await renew();
          },
        });
        if (controller.signal.aborted) return;
        if (await queue.complete(job.id, this.id, result)) log.info("job done");
        else log.warn("job finished after its lease was lost; the other worker's outcome stands");
      } catch (error) {
        if (controller.signal.aborted) {
          log.warn({ reason: String(controller.signal.reason) }, "job abandoned");
          return;
        }
        const failure =
          error instanceof JobFailure
            ? { code: error.code, message: error.message }
            : { code: "internal_error", message: "the job failed unexpectedly" };
        if (!(error instanceof JobFailure)) log.error({ err: error }, "job failed unexpectedly");
        if (await queue.fail(job.id, this.id, failure)) log.warn({ failure }, "job failed");
      } finally {
        clearInterval(heartbeat);
        this.running.delete(job.id);
        this.options.onJobFinished?.();
        this.wake?.();
      }
    })();
  }
}
