import type { Job } from "./queue.ts";

/** Seconds a client should wait between polls of a job that is not finished. */
export const POLL_AFTER_SECONDS = 2;

/** A job as GET /v1/jobs/{id} shows it: no input, no payment, no worker names. */
export function jobView(job: Job) {
  return {
    id: job.id,
    type: job.type,
    status: job.state,
    createdAt: job.createdAt,
    ...(job.startedAt ? { startedAt: job.startedAt } : {}),
    ...(job.finishedAt ? { finishedAt: job.finishedAt } : {}),
    ...(job.progress ? { progress: job.progress } : {}),
    ...(job.state === "succeeded" ? { result: job.result } : {}),
    ...(job.error ? { error: job.error } : {}),
  };
}
