import type { Logger } from "pino";
import type { Config } from "../config.ts";
import type { StartedOperation } from "../contract/operation.ts";
import type { Job, JobQueue } from "./queue.ts";
import { type JobHandler, JobWorker, livenessSince } from "./worker.ts";

/** The job handlers the started operations bring (only those whose providers are configured). */
export function jobHandlers(started: ReadonlyMap<string, StartedOperation<unknown, unknown>>) {
  const handlers = new Map<string, JobHandler>();
  for (const [id, operation] of started) if (operation.jobHandler) handlers.set(id, operation.jobHandler);
  return handlers;
}

export function createWorker(
  config: Config,
  queue: JobQueue,
  handlers: ReadonlyMap<string, JobHandler>,
  log: Logger,
  now?: () => number,
  onJobFinished?: () => void,
  whyUnpayable?: (job: Job) => Promise<string | undefined>,
): JobWorker {
  return new JobWorker({
    onJobFinished,
    ...(whyUnpayable ? { whyUnpayable } : {}),
    queue,
    handlers,
    log: log.child({ component: "worker" }),
    leaseMs: config.jobs.leaseMs,
    concurrency: config.jobs.workerConcurrency,
    retentionMs: config.jobs.retentionMs,
    now,
  });
}

/** The /readyz line about workers: who is alive and what they run. */
export async function describeWorkers(queue: JobQueue, now: number, leaseMs: number): Promise<string> {
  const alive = await queue.liveWorkers(livenessSince(now, leaseMs));
  if (alive.length === 0) return "none alive (asynchronous operations answer 503)";
  const types = [...new Set(alive.flatMap((worker) => worker.types))];
  return `${alive.length} alive, running ${types.length > 0 ? types.join(", ") : "no job type (no provider configured)"}`;
}
