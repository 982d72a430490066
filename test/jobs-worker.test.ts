import { randomUUID } from "node:crypto";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import pino from "pino";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import type { Job } from "../src/jobs/queue.ts";
import { JobFailure, type JobHandler, JobWorker } from "../src/jobs/worker.ts";
import { SqliteStore } from "../src/store/sqlite/sqlite-store.ts";

/** Long enough that a busy machine's timers cannot miss a heartbeat (one every third of it). */
const LEASE_MS = 3000;

describe("the job worker", () => {
  let dir: string;
  let store: SqliteStore;
  let offset = 0;
  const workers: JobWorker[] = [];

  beforeEach(() => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), "utility402-worker-"));
    offset = 0;
    store = new SqliteStore(path.join(dir, "jobs.sqlite"), { now: () => Date.now() + offset });
  });
  afterEach(async () => {
    await Promise.all(workers.splice(0).map((worker) => worker.stop(0)));
    await store.close();
    fs.rmSync(dir, { recursive: true, force: true });
  });

  const worker = (handlers: Record<string, JobHandler>) => {
    const created = new JobWorker({
      queue: store.jobs,
      handlers: new Map(Object.entries(handlers)),
      log: pino({ level: "silent" }),
      leaseMs: LEASE_MS,
      concurrency: 2,
      retentionMs: 7 * 86_400_000,
      pollMs: 20,
    });
    workers.push(created);
    return created;
  };
  const queued = (type: string) =>
    store.jobs.create(
      { id: randomUUID(), type, input: { n: 1 }, paymentKey: null, maxAttempts: 3 },
      { queued: true },
    );
  const until = async (id: string, predicate: (job: Job) => boolean) => {
    for (let i = 0; i < 200; i++) {
      const job = (await store.jobs.get(id)) as Job;
      if (predicate(job)) return job;
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
    throw new Error(`job ${id} never reached the expected state`);
  };

  it("runs jobs of its types, records progress, and fails them with the handler's reason (internals kept out)", async () => {
    let sawProgress: unknown;
    const w = worker({
      ok: async (input, context) => {
        await context.progress({ stage: "halfway", fraction: 0.5 });
        sawProgress = (await store.jobs.get(context.job.id))?.progress;
        return { echoed: input };
      },
      refused: async () => {
        throw new JobFailure("provider_failed", "the search provider answered 500 three times");
      },
      broken: async () => {
        throw new Error("ENOENT /srv/secret/path");
      },
    });
    await w.start();
    expect((await store.jobs.liveWorkers(0)).map((record) => record.id)).toEqual([w.id]);
    const [ok, refused, broken, foreign] = [
      await queued("ok"),
      await queued("refused"),
      await queued("broken"),
      await queued("other"),
    ];
    expect(await until(ok.id, (job) => job.state === "succeeded")).toMatchObject({
      result: { echoed: { n: 1 } },
    });
    expect(sawProgress).toEqual({ stage: "halfway", fraction: 0.5 });
    expect((await until(refused.id, (job) => job.state === "failed")).error).toEqual({
      code: "provider_failed",
      message: "the search provider answered 500 three times",
    });
    expect((await until(broken.id, (job) => job.state === "failed")).error).toEqual({
      code: "internal_error",
      message: "the job failed unexpectedly",
    });
    expect((await store.jobs.get(foreign.id))?.state).toBe("queued");
  });

  it("heartbeats keep a long job; a worker that lost its lease aborts and cannot overwrite the new holder", async () => {
    let aborted = false;
    let release: () => void = () => {};
    const w = worker({
      slow: (_input, context) =>
        new Promise((resolve) => {
          context.signal.addEventListener("abort", () => {
            aborted = true;
          });
          release = () => resolve({ from: "first worker" });
        }),
    });
    await w.start();
    const job = await queued("slow");
    const started = await until(job.id, (current) => current.state === "running");
    // A heartbeat renews the lease while the handler runs: nobody else can take the job meanwhile.
    await until(job.id, (current) => (current.leaseUntil ?? 0) > (started.leaseUntil ?? 0));
    expect(await store.jobs.claim("intruder", ["slow"], LEASE_MS)).toBeUndefined();

    // The first worker stalls past its lease (the store's clock jumps): another takes the job.
    offset += LEASE_MS * 10;
    const retaken = await store.jobs.claim("second", ["slow"], 60_000);
    expect(retaken?.attempts).toBe(2);
    for (let i = 0; i < 200 && !aborted; i++) await new Promise((resolve) => setTimeout(resolve, 20));
    expect(aborted).toBe(true);
    release();
    expect(await store.jobs.complete(job.id, "second", { from: "second worker" })).toBe(true);
    await new Promise((resolve) => setTimeout(resolve, 100));
    expect((await store.jobs.get(job.id))?.result).toEqual({ from: "second worker" });
  });

  it("stop() lets a running job finish, then leaves the store's list of live workers", async () => {
    let release: () => void = () => {};
    const w = worker({
      slow: () =>
        new Promise((resolve) => {
          release = () => resolve("done");
        }),
    });
    await w.start();
    const job = await queued("slow");
    await until(job.id, (current) => current.state === "running");
    const stopping = w.stop(5000);
    setTimeout(() => release(), 100);
    await stopping;
    expect((await store.jobs.get(job.id))?.state).toBe("succeeded");
    expect(await store.jobs.liveWorkers(0)).toEqual([]);
  });
});
