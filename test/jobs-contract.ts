import { randomUUID } from "node:crypto";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import type { JobQueue } from "../src/jobs/queue.ts";
import type { HeldAuthorization, PaymentState, Store } from "../src/store/store.ts";

/** A store under test on a clock the suite moves (epoch ms). */
export interface ContractSubject {
  store: Store;
  cleanup(): Promise<void>;
}
export type SubjectFactory = (now: () => number) => Promise<ContractSubject>;

const LEASE = 10_000;
/** A held payment's kept authorization; the queue never reads it, the settler does. */
const HELD_AUTHORIZATION = {
  payload: { x402Version: 2, payload: { signature: "0x00" } },
  requirements: {
    scheme: "exact",
    network: "eip155:8453",
    asset: "0xasset",
    amount: "5000000",
    payTo: "0xpayto",
    maxTimeoutSeconds: 1800,
    extra: {},
  },
} as unknown as HeldAuthorization;
const DAY = 86_400_000;

/**
 * The behaviour every JobQueue must have, whatever the engine: run it with a factory for each
 * implementation (SQLite in test/jobs.sqlite.test.ts; PostgreSQL when it is built).
 */
export function jobQueueContract(name: string, factory: SubjectFactory): void {
  describe(`JobQueue contract: ${name}`, () => {
    let clock = Date.parse("2026-01-01T00:00:00Z");
    let subject: ContractSubject;
    let queue: JobQueue;
    let store: Store;

    beforeEach(async () => {
      clock = Date.parse("2026-01-01T00:00:00Z");
      subject = await factory(() => clock);
      store = subject.store;
      queue = store.jobs;
    });
    afterEach(async () => {
      await subject.cleanup();
    });

    /** A ledger row for a job's payment, in the given final state (or still verified). */
    async function payment(
      state: PaymentState,
      { payer = "0xpayer", validBefore = 0 }: { payer?: string; validBefore?: number } = {},
    ): Promise<string> {
      const paymentKey = `eip155:8453:0xasset:${payer}:${randomUUID()}`;
      await store.reservePayment({
        paymentKey,
        payloadHash: "p",
        requestHash: "r",
        operationId: "research-brief",
        network: "eip155:8453",
        asset: "0xasset",
        amount: "5000000",
        payer,
        payTo: "0xpayto",
        nonce: paymentKey.slice(-36),
        validBefore,
        requestId: "req",
        leaseUntil: 0,
      });
      if (state === "held") {
        await store.holdPayment(paymentKey, {
          outcome: { status: 202, headers: {}, body: "{}" },
          held: HELD_AUTHORIZATION,
        });
      } else if (state !== "verified") {
        await store.completePayment(paymentKey, {
          state,
          outcome: { status: 202, headers: {}, body: "{}" },
          txHash: state === "settled" ? "0xtx" : null,
        });
      }
      return paymentKey;
    }

    const newJob = (paymentKey: string | null = null, maxAttempts = 3) => ({
      id: randomUUID(),
      type: "research-brief",
      input: { question: "why is the sky blue?" },
      paymentKey,
      maxAttempts,
    });

    it("a job awaiting payment is invisible to workers until it is marked paid, then runs", async () => {
      const key = await payment("verified");
      const created = await queue.create(newJob(key));
      expect(created).toMatchObject({
        state: "awaiting_payment",
        attempts: 0,
        paymentKey: key,
        result: null,
      });
      expect(await queue.getByPayment(key)).toMatchObject({ id: created.id });
      expect(await queue.claim("w1", ["research-brief"], LEASE)).toBeUndefined();

      expect(await queue.markPaid(created.id)).toBe(true);
      expect(await queue.markPaid(created.id)).toBe(false);
      expect(await queue.drop(created.id)).toBe(false);
      expect((await queue.get(created.id))?.state).toBe("queued");

      const claimed = await queue.claim("w1", ["research-brief"], LEASE);
      expect(claimed).toMatchObject({ id: created.id, state: "running", attempts: 1, leaseOwner: "w1" });
      expect(claimed?.leaseUntil).toBe(clock + LEASE);
      expect(claimed?.startedAt).toBe(new Date(clock).toISOString());
      expect(claimed?.input).toEqual({ question: "why is the sky blue?" });
      expect(await queue.claim("w2", ["research-brief"], LEASE)).toBeUndefined();
    });

    it("depth counts the jobs in each unfinished state, 0 for an empty one, never the finished ones", async () => {
      const empty = { awaiting_payment: 0, queued: 0, running: 0, ready: 0 };
      expect(await queue.depth()).toEqual(empty);
      await queue.create(newJob(await payment("verified")));
      const unpaid = await queue.create(newJob(), { queued: true });
      await queue.claim("w1", ["research-brief"], LEASE);
      expect(await queue.complete(unpaid.id, "w1", { answer: 1 })).toBe(true);
      const paid = await queue.create(newJob(await payment("held")));
      expect(await queue.markPaid(paid.id)).toBe(true);
      await queue.claim("w2", ["research-brief"], LEASE);
      expect(await queue.complete(paid.id, "w2", { answer: 2 })).toBe(true);
      await queue.create(newJob(), { queued: true });
      await queue.create(newJob(), { queued: true });
      await queue.claim("w3", ["research-brief"], LEASE);
      expect(await queue.depth()).toEqual({ awaiting_payment: 1, queued: 1, running: 1, ready: 1 });
    });

    it("dropping removes a job still awaiting payment, and only such a job", async () => {
      const job = await queue.create(newJob(await payment("verified")));
      expect(await queue.drop(job.id)).toBe(true);
      expect(await queue.get(job.id)).toBeUndefined();
      expect(await queue.markPaid(job.id)).toBe(false);
    });

    it("concurrent claims hand a job to exactly one worker", async () => {
      const job = await queue.create(newJob(), { queued: true });
      const claims = await Promise.all(
        Array.from({ length: 8 }, (_, i) => queue.claim(`w${i}`, ["research-brief"], LEASE)),
      );
      const winners = claims.filter((claim) => claim !== undefined);
      expect(winners).toHaveLength(1);
      expect(winners[0]?.id).toBe(job.id);
    });

    it("a worker only takes the types it runs, oldest first", async () => {
      const other = await queue.create({ ...newJob(), type: "other" }, { queued: true });
      const first = await queue.create(newJob(), { queued: true });
      clock += 1000;
      const second = await queue.create(newJob(), { queued: true });
      expect(await queue.claim("w1", [], LEASE)).toBeUndefined();
      expect((await queue.claim("w1", ["research-brief"], LEASE))?.id).toBe(first.id);
      expect((await queue.claim("w1", ["research-brief"], LEASE))?.id).toBe(second.id);
      expect(await queue.claim("w1", ["research-brief"], LEASE)).toBeUndefined();
      expect((await queue.claim("w1", ["other"], LEASE))?.id).toBe(other.id);
    });

    it("heartbeats keep the lease; an expired lease passes the job to another worker, and only the holder finishes it", async () => {
      const job = await queue.create(newJob(), { queued: true });
      await queue.claim("w1", ["research-brief"], LEASE);
      clock += LEASE - 1;
      expect(await queue.heartbeat(job.id, "w1", LEASE, { stage: "searching", fraction: 0.2 })).toBe(true);
      clock += LEASE - 1;
      expect(await queue.claim("w2", ["research-brief"], LEASE)).toBeUndefined();
      expect((await queue.get(job.id))?.progress).toEqual({ stage: "searching", fraction: 0.2 });

      clock += 2; // w1 stopped renewing: its lease is over
      const retaken = await queue.claim("w2", ["research-brief"], LEASE);
      expect(retaken).toMatchObject({ id: job.id, attempts: 2, leaseOwner: "w2" });
      expect(await queue.heartbeat(job.id, "w1", LEASE)).toBe(false);
      expect(await queue.complete(job.id, "w1", { stale: true })).toBe(false);
      expect(await queue.fail(job.id, "w1", { code: "x", message: "stale" })).toBe(false);

      expect(await queue.complete(job.id, "w2", { answer: 42 })).toBe(true);
      expect(await queue.complete(job.id, "w2", { answer: 43 })).toBe(false);
      const done = await queue.get(job.id);
      expect(done).toMatchObject({
        state: "succeeded",
        result: { answer: 42 },
        error: null,
        attempts: 2,
        leaseOwner: null,
        progress: null,
        finishedAt: new Date(clock).toISOString(),
      });
      expect(await queue.claim("w3", ["research-brief"], LEASE)).toBeUndefined();
    });

    it("attempts are bounded: a job whose workers keep dying fails with the reason", async () => {
      const job = await queue.create(newJob(null, 2), { queued: true });
      expect((await queue.claim("w1", ["research-brief"], LEASE))?.attempts).toBe(1);
      clock += LEASE;
      expect((await queue.claim("w2", ["research-brief"], LEASE))?.attempts).toBe(2);
      clock += LEASE;
      expect(await queue.claim("w3", ["research-brief"], LEASE)).toBeUndefined();
      const failed = await queue.get(job.id);
      expect(failed?.state).toBe("failed");
      expect(failed?.error?.code).toBe("attempts_exhausted");
      expect(failed?.error?.message).toContain("2 times");
    });

    it("a worker fails a job with a clear error", async () => {
      const job = await queue.create(newJob(), { queued: true });
      await queue.claim("w1", ["research-brief"], LEASE);
      const error = { code: "provider_failed", message: "search provider answered 500 three times" };
      expect(await queue.fail(job.id, "w1", error)).toBe(true);
      expect(await queue.get(job.id)).toMatchObject({ state: "failed", error, result: null });
    });

    it("worker liveness is reported, read and forgotten through the store", async () => {
      await queue.reportWorker({ id: "w1", types: ["research-brief"], host: "h", pid: 1, startedAt: "t" });
      clock += 5000;
      await queue.reportWorker({ id: "w2", types: [], host: "h", pid: 2, startedAt: "t" });
      expect((await queue.liveWorkers(clock - 10_000)).map((w) => w.id)).toEqual(["w1", "w2"]);
      expect(await queue.liveWorkers(clock - 1000)).toEqual([
        { id: "w2", types: [], host: "h", pid: 2, startedAt: "t", lastSeen: clock },
      ]);
      await queue.removeWorker("w2");
      expect(await queue.liveWorkers(clock - 10_000)).toHaveLength(1);
      const report = await queue.maintain({ purgeBefore: 0, forgetWorkersBefore: clock - 1000 });
      expect(report.forgottenWorkers).toBe(1);
      expect(await queue.liveWorkers(0)).toEqual([]);
    });

    it("a paid job's result waits in ready until its payment settles (delivered) or is refused (withheld)", async () => {
      const key = await payment("held");
      const job = await queue.create(newJob(key));
      expect(await queue.markPaid(job.id)).toBe(true);
      await queue.claim("w1", ["research-brief"], LEASE);
      expect(await queue.readyJobs()).toEqual([]);
      expect(await queue.deliver(job.id)).toBe(false);
      expect(await queue.complete(job.id, "w1", { answer: 42 })).toBe(true);
      const ready = await queue.get(job.id);
      expect(ready).toMatchObject({
        state: "ready",
        result: { answer: 42 },
        leaseOwner: null,
        finishedAt: null,
      });
      expect((await queue.readyJobs()).map((j) => j.id)).toEqual([job.id]);
      expect(await queue.claim("w2", ["research-brief"], LEASE)).toBeUndefined();
      expect(await queue.expire(job.id, { code: "deadline_passed", message: "late" })).toBe(false);
      clock += 1000;
      expect(await queue.deliver(job.id)).toBe(true);
      expect(await queue.deliver(job.id)).toBe(false);
      expect(await queue.withhold(job.id, { code: "payment_failed", message: "x" })).toBe(false);
      expect(await queue.get(job.id)).toMatchObject({
        state: "succeeded",
        result: { answer: 42 },
        progress: null,
        finishedAt: new Date(clock).toISOString(),
      });

      const refused = await queue.create(newJob(await payment("held")), { queued: true });
      await queue.claim("w1", ["research-brief"], LEASE);
      await queue.complete(refused.id, "w1", { answer: 1 });
      const error = { code: "payment_failed", message: "insufficient funds" };
      expect(await queue.withhold(refused.id, error)).toBe(true);
      expect(await queue.get(refused.id)).toMatchObject({ state: "failed", result: { answer: 1 }, error });
    });

    it("a job without payment succeeds at once; expiring fails a job wherever it is before ready", async () => {
      const free = await queue.create(newJob(), { queued: true });
      await queue.claim("w1", ["research-brief"], LEASE);
      await queue.complete(free.id, "w1", {});
      expect((await queue.get(free.id))?.state).toBe("succeeded");

      const error = { code: "deadline_passed", message: "too late" };
      const waiting = await queue.create(newJob(await payment("held")));
      const queued = await queue.create(newJob(await payment("held")), { queued: true });
      const running = await queue.create(newJob(await payment("held")), { queued: true });
      await queue.claim("w1", ["research-brief"], LEASE);
      const claimedRunning = (await queue.get(running.id))?.state === "running" ? running : queued;
      for (const job of [waiting, queued, running]) expect(await queue.expire(job.id, error)).toBe(true);
      for (const job of [waiting, queued, running]) {
        expect(await queue.get(job.id)).toMatchObject({ state: "failed", error, leaseOwner: null });
      }
      // The worker that still runs it can no longer finish it.
      expect(await queue.complete(claimedRunning.id, "w1", {})).toBe(false);
      expect(await queue.expire(queued.id, error)).toBe(false);
    });

    it("claims fairly by payer: a waiting payer's job goes before another job of a payer already running one", async () => {
      const greedy = [];
      for (let i = 0; i < 3; i++) {
        greedy.push(
          await queue.create(newJob(await payment("held", { payer: "0xgreedy" })), { queued: true }),
        );
        clock += 1;
      }
      const other = await queue.create(newJob(await payment("held", { payer: "0xother" })), { queued: true });
      const claimed = [];
      for (let i = 0; i < 4; i++) claimed.push((await queue.claim(`w${i}`, ["research-brief"], LEASE))?.id);
      expect(claimed).toEqual([greedy[0]?.id, other.id, greedy[1]?.id, greedy[2]?.id]);
      // A running job whose lease ran out no longer counts for its payer.
      // An older job of a payer running one waits behind a newer one of a payer running none.
      await queue.create(newJob(await payment("held", { payer: "0xother" })), { queued: true });
      const fresh = await queue.create(newJob(await payment("held", { payer: "0xthird" })), { queued: true });
      expect((await queue.claim("w5", ["research-brief"], LEASE))?.id).toBe(fresh.id);
      clock += LEASE + 1;
      expect((await queue.claim("w6", ["research-brief"], LEASE))?.id).toBe(greedy[0]?.id);
    });

    it("lists only the held payments that need a look, oldest first, bounded", async () => {
      const far = Math.floor(clock / 1000) + 3600;
      const awaiting = await payment("held", { validBefore: far });
      await queue.create(newJob(awaiting));
      clock += 1;
      const running = await payment("held", { validBefore: far });
      await queue.create(newJob(running), { queued: true });
      clock += 1;
      const expiring = await payment("held", { validBefore: far - 3000 });
      await queue.create(newJob(expiring), { queued: true });
      const orphan = await payment("held", { validBefore: far });
      const failed = await payment("held", { validBefore: far });
      const failedJob = await queue.create(newJob(failed), { queued: true });
      await queue.expire(failedJob.id, { code: "x", message: "x" });
      const settled = await payment("settled", { validBefore: far });
      await queue.create(newJob(settled));
      const due = await store.heldPaymentsToDecide({ expiringBefore: far - 1000, limit: 10 });
      expect(new Set(due)).toEqual(new Set([awaiting, expiring, orphan, failed]));
      expect(due).not.toContain(running);
      expect(await store.heldPaymentsToDecide({ expiringBefore: far + 1, limit: 10 })).toContain(running);
      expect(await store.heldPaymentsToDecide({ expiringBefore: far - 1000, limit: 2 })).toHaveLength(2);
    });

    it("a held payment lists, takes a lease, and ends final; the ledger keeps its authorization", async () => {
      const key = await payment("verified");
      expect(
        await store.holdPayment(key, {
          outcome: { status: 202, headers: {}, body: "{}" },
          held: HELD_AUTHORIZATION,
        }),
      ).toBe(true);
      expect(
        await store.holdPayment(key, {
          outcome: { status: 202, headers: {}, body: "{}" },
          held: HELD_AUTHORIZATION,
        }),
      ).toBe(false);
      const held = await store.getPayment(key);
      expect(held).toMatchObject({
        state: "held",
        leaseUntil: 0,
        outcome: { status: 202 },
        held: HELD_AUTHORIZATION,
      });
      expect(await store.heldPaymentsToDecide({ expiringBefore: 0, limit: 10 })).toEqual([key]);
      expect(await store.takeOverPayment(key, clock, clock + LEASE)).toBe(true);
      expect(await store.takeOverPayment(key, clock, clock + LEASE)).toBe(false);
      await store.releaseLease(key);
      expect(
        await store.completePayment(key, {
          state: "settled",
          txHash: "0xtx",
          outcome: held?.outcome as never,
        }),
      ).toBe(true);
      expect(await store.heldPaymentsToDecide({ expiringBefore: 0, limit: 10 })).toEqual([]);
      expect(await store.getPayment(key)).toMatchObject({
        state: "settled",
        txHash: "0xtx",
        held: HELD_AUTHORIZATION,
      });
    });

    it("maintenance queues jobs whose payment settled, drops unpaid ones, purges old results but keeps failed paid jobs", async () => {
      const settled = await queue.create(newJob(await payment("settled")));
      const heldJob = await queue.create(newJob(await payment("held")));
      const released = await queue.create(newJob(await payment("released")));
      const refused = await queue.create(newJob(await payment("failed")));
      const pending = await queue.create(newJob(await payment("verified")));
      const first = await queue.maintain({ purgeBefore: 0, forgetWorkersBefore: 0 });
      expect(first).toMatchObject({ promoted: 2, dropped: 2, purged: 0 });
      expect((await queue.get(settled.id))?.state).toBe("queued");
      expect((await queue.get(heldJob.id))?.state).toBe("queued");
      await queue.expire(heldJob.id, { code: "deadline_passed", message: "not part of this case" });
      expect(await queue.get(released.id)).toBeUndefined();
      expect(await queue.get(refused.id)).toBeUndefined();
      expect((await queue.get(pending.id))?.state).toBe("awaiting_payment");

      // One paid job fails, one unpaid job succeeds, both a week and a day ago; one succeeds today.
      const paidKey = (await queue.get(settled.id))?.paymentKey as string;
      await queue.claim("w1", ["research-brief"], LEASE);
      await queue.fail(settled.id, "w1", { code: "provider_failed", message: "model down" });
      const old = await queue.create(newJob(), { queued: true });
      await queue.claim("w1", ["research-brief"], LEASE);
      await queue.complete(old.id, "w1", {});
      clock += 8 * DAY;
      const fresh = await queue.create(newJob(), { queued: true });
      await queue.claim("w1", ["research-brief"], LEASE);
      await queue.complete(fresh.id, "w1", {});

      const second = await queue.maintain({ purgeBefore: clock - 7 * DAY, forgetWorkersBefore: 0 });
      expect(second.purged).toBe(2);
      expect(await queue.get(old.id)).toBeUndefined();
      expect(await queue.get(heldJob.id)).toBeUndefined();
      expect((await queue.get(fresh.id))?.state).toBe("succeeded");
      expect((await queue.get(settled.id))?.state).toBe("failed");
      expect(await queue.failedPaidJobs()).toEqual([
        {
          jobId: settled.id,
          type: "research-brief",
          error: { code: "provider_failed", message: "model down" },
          finishedAt: new Date(clock - 8 * DAY).toISOString(),
          paymentKey: paidKey,
          payer: "0xpayer",
          amount: "5000000",
          txHash: "0xtx",
        },
      ]);
    });
  });
}
