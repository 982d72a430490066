import { afterEach, describe, expect, it } from "vitest";
import { withTestDeadlines } from "../../../test/helpers/pool-deadlines.ts";
import { sampleContract } from "../../../test/helpers/sample-openapi-contract.ts";
import { Problem } from "../../problem.ts";
import { type AuditJob, auditDocument } from "./audit.ts";
import type { ContractDocument } from "./contract.ts";
import { openapiAudit, runAudit } from "./index.ts";
import { AuditPool, type AuditPoolOptions, closeSharedAuditPool, sharedAuditPool } from "./pool.ts";
import { OpenApiAuditRequest } from "./schema.ts";

const FAKE_WORKER = new URL("../../../test/helpers/audit-workers/fake-worker.mjs", import.meta.url);
const BROKEN_WORKER = new URL("../../../test/helpers/audit-workers/broken-worker.mjs", import.meta.url);

const pools: AuditPool[] = [];
const pool = (options: Partial<AuditPoolOptions> = {}) => {
  const created = withTestDeadlines(() => new AuditPool(options));
  pools.push(created);
  return created;
};
afterEach(async () => {
  await Promise.all(pools.splice(0).map((p) => p.close()));
});

const job = (document: ContractDocument, ruleset: AuditJob["ruleset"] = "recommended"): AuditJob => ({
  document,
  openapi: "3.1.0",
  ruleset,
  maxFindings: 100,
});
const fake = (test?: string, extra: Record<string, unknown> = {}) =>
  job({ openapi: "3.1.0", ...(test ? { "x-test": test } : {}), ...extra });

/** The Problem a run is rejected with (fails the test if it succeeds or rejects with something else). */
async function problemOf(promise: Promise<unknown>): Promise<Problem> {
  const error = await promise.then(
    () => new Error("expected the audit to fail"),
    (rejection: unknown) => rejection,
  );
  if (!(error instanceof Problem)) throw error;
  return error;
}

describe("AuditPool with the real audit worker", () => {
  it("answers exactly what the in-process audit answers, in both rulesets", async () => {
    const workers = pool({ size: 1 });
    const contract = sampleContract(12);
    for (const ruleset of ["recommended", "strict"] as const) {
      expect(await workers.run(job(contract, ruleset))).toEqual(await auditDocument(job(contract, ruleset)));
    }
  });

  it("reuses its workers: many audits, at most `size` worker starts", async () => {
    const workers = pool({ size: 2 });
    const contract = sampleContract(2);
    for (let i = 0; i < 3; i++) await workers.run(job(contract));
    expect(workers.startedWorkers).toBe(1);
    await Promise.all(Array.from({ length: 6 }, () => workers.run(job(contract))));
    expect(workers.startedWorkers).toBe(2);
    expect(workers.stats).toEqual({ workers: 2, busy: 0, queued: 0, startedWorkers: 2 });
  });

  it("stops an audit over its time limit with a 422 (nothing charged) and the worker with it", async () => {
    const workers = pool({ size: 1, timeLimitMs: 25 });
    await workers.warm();
    const problem = await problemOf(workers.run(job(sampleContract(400))));
    expect(problem.status).toBe(422);
    expect(problem.slug).toBe("audit-time-limit");
    expect(problem.detail).toMatch(
      /^the audit did not finish within 25 ms and was stopped; nothing was charged/,
    );
    expect(workers.stats.workers).toBe(0);
  });

  it("runs the operation's handler through the shared pool", async () => {
    withTestDeadlines(sharedAuditPool);
    try {
      const input = OpenApiAuditRequest.parse(openapiAudit.example.input);
      expect(await runAudit(input)).toEqual(openapiAudit.example.output);
      const handler = openapiAudit.handler as NonNullable<typeof openapiAudit.handler>;
      const answer = await handler(input, {} as Parameters<typeof handler>[1]);
      expect(answer).toEqual({ body: openapiAudit.example.output });
    } finally {
      await closeSharedAuditPool();
    }
  });
});

describe("AuditPool: limits and failures (stand-in worker)", () => {
  it("a time limit stops the worker; the next audit gets a new one", async () => {
    const workers = pool({ size: 1, timeLimitMs: 100, workerUrl: FAKE_WORKER });
    const problem = await problemOf(workers.run(fake("spin")));
    expect([problem.status, problem.slug]).toEqual([422, "audit-time-limit"]);
    expect(await workers.run(fake())).toMatchObject({ valid: true });
    expect(workers.startedWorkers).toBe(2);
  });

  it("the time limit counts the audit only, not the worker's start", async () => {
    const workers = pool({ size: 1, timeLimitMs: 150, workerUrl: FAKE_WORKER });
    // A cold start takes longer than 150 ms here only if the machine is slow; the audit itself takes 50.
    expect(await workers.run(fake(undefined, { "x-delay": 50 }))).toMatchObject({ valid: true });
  });

  it("a crashed or exited worker fails its audit with a 500 (nothing charged); the pool carries on", async () => {
    const workers = pool({ size: 1, workerUrl: FAKE_WORKER });
    for (const mode of ["crash", "exit"]) {
      const problem = await problemOf(workers.run(fake(mode)));
      expect([problem.status, problem.slug], mode).toEqual([500, "audit-failed"]);
      expect(problem.detail).toMatch(/nothing was charged$/);
    }
    expect((await problemOf(workers.run(fake("crash")))).detail).toContain("the worker crashed");
    expect(await workers.run(fake())).toMatchObject({ valid: true });
  });

  it("an audit that throws in the worker is a 500 with the reason; the worker is kept", async () => {
    const workers = pool({ size: 1, workerUrl: FAKE_WORKER });
    const problem = await problemOf(workers.run(fake("fail")));
    expect([problem.status, problem.detail]).toEqual([
      500,
      "the audit failed (the lint threw); nothing was charged",
    ]);
    await workers.run(fake());
    expect(workers.startedWorkers).toBe(1);
  });

  it("an audit over the memory limit is a 422", async () => {
    const workers = pool({ size: 1, maxMemoryMb: 32, workerUrl: FAKE_WORKER });
    const problem = await problemOf(workers.run(fake("oom")));
    expect([problem.status, problem.slug]).toEqual([422, "audit-memory-limit"]);
    expect(await workers.run(fake())).toMatchObject({ valid: true });
  });

  it("bounds concurrency: `size` audits run, `maxQueued` wait, the rest are refused at once (503)", async () => {
    const workers = pool({ size: 1, maxQueued: 2, workerUrl: FAKE_WORKER });
    const slow = () => workers.run(fake(undefined, { "x-delay": 100 }));
    const runs = [slow(), slow(), slow(), slow()].map((run) =>
      run.then(
        () => "done",
        (e: Problem) => e,
      ),
    );
    const [first, second, third, fourth] = await Promise.all(runs);
    expect([first, second]).toEqual(["done", "done"]);
    for (const refused of [third, fourth] as Problem[]) {
      expect([refused.status, refused.slug, refused.headers["retry-after"]]).toEqual([
        503,
        "audit-busy",
        "2",
      ]);
      expect(refused.detail).toBe(
        "2 audits are already waiting for a worker; retry shortly; nothing was charged",
      );
    }
    expect(workers.startedWorkers).toBe(1);
  });

  it("refuses an audit that waited too long for a free worker (503)", async () => {
    const workers = pool({ size: 1, queueTimeoutMs: 100, workerUrl: FAKE_WORKER });
    await workers.warm();
    const busy = workers.run(fake(undefined, { "x-delay": 600 }));
    const problem = await problemOf(workers.run(fake()));
    expect([problem.status, problem.detail]).toEqual([
      503,
      "no audit worker was free within 100 ms; retry shortly; nothing was charged",
    ]);
    await busy;
  });

  it("answers 503 at once when no worker can start, and does not retry in a loop", async () => {
    const workers = pool({ size: 2, workerUrl: BROKEN_WORKER });
    const problem = await problemOf(workers.run(fake()));
    expect([problem.status, problem.slug, problem.headers["retry-after"]]).toEqual([
      503,
      "audit-unavailable",
      "5",
    ]);
    expect(problem.detail).toContain("cannot load the audit engine");
    const again = await problemOf(workers.run(fake()));
    expect(again.slug).toBe("audit-unavailable");
    expect(workers.startedWorkers).toBe(1);
  });

  it("close() fails waiting audits, refuses new ones and stops the workers", async () => {
    const workers = pool({ size: 1, workerUrl: FAKE_WORKER });
    await workers.warm();
    const running = problemOf(workers.run(fake(undefined, { "x-delay": 1000 })));
    const waiting = problemOf(workers.run(fake()));
    await workers.close();
    for (const problem of [await running, await waiting, await problemOf(workers.run(fake()))]) {
      expect([problem.status, problem.slug]).toEqual([503, "audit-unavailable"]);
    }
    expect(workers.stats.workers).toBe(0);
  });
});
