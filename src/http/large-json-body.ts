import type { AnyOperation } from "../catalog/operation.ts";
import { defaultPoolSize, serviceDeadlines, WorkerPool, workerModule } from "../operations/worker-pool.ts";

/**
 * JSON bodies up to this size are decoded and checked on the main thread (a few ms at most). Larger
 * ones, sent before any payment by anyone (a 1 MB body costs the event loop ~6 ms of decoding,
 * scanning and JSON.parse, back to back under a flood), are parsed in a worker thread below the event
 * loop's priority: the main thread only receives the parsed value.
 */
export const INLINE_JSON_BODY_BYTES = 256 * 1024;

export type LargeJsonBodyTask = {
  body: Uint8Array;
  operation: Pick<AnyOperation, "bodyOptional" | "json">;
};

let pool: WorkerPool<LargeJsonBodyTask, unknown> | undefined;

/** The service's JSON body workers, started on the first large body. */
export const largeJsonBodyPool = () => {
  pool ??= new WorkerPool<LargeJsonBodyTask, unknown>({
    name: "JSON body",
    workerUrl: workerModule(import.meta.url, "./json-body-worker", "./json-body-worker-entry.mjs"),
    size: defaultPoolSize(),
    maxQueued: 32,
    ...serviceDeadlines({ timeLimitMs: 10_000, queueTimeoutMs: 10_000, startTimeoutMs: 30_000 }),
    maxMemoryMb: 512,
  });
  return pool;
};

export async function closeLargeJsonBodyPool(): Promise<void> {
  const closing = pool;
  pool = undefined;
  await closing?.close();
}

/** parseJsonBody's answer for a large body, computed in a worker (a 400 keeps its pointer). */
export const parseLargeJsonBody = (body: Uint8Array, operation: LargeJsonBodyTask["operation"]) =>
  largeJsonBodyPool().run({
    body,
    operation: { bodyOptional: operation.bodyOptional, json: operation.json },
  });
