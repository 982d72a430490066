import { randomUUID } from "node:crypto";
import type { x402ResourceServer } from "@x402/core/server";
import { SettleError } from "@x402/core/types";
import pino from "pino";
import { afterEach, describe, expect, it } from "vitest";
import { x402HttpAnswers } from "../../http/x402-answers.ts";
import { Metrics } from "../../metrics.ts";
import { SqliteStore } from "../../store/sqlite/sqlite-store.ts";
import type { Store } from "../../store/store.ts";
import type { AuthorizationChecker, AuthorizationOutcome } from "../settler/authorization-state.ts";
import { HeldPaymentSettler } from "./held-payment-settler.ts";
import { jobDeadline } from "./job-payment.ts";

/**
 * The settler's decisions on a real store (SQLite in memory), with the facilitator and the token's
 * authorization state played by the test: every case asks what the ledger and the job say afterwards.
 */

const SETTLE_MS = 30_000;
const log = pino({ level: "silent" });
const stores: SqliteStore[] = [];
afterEach(async () => {
  for (const store of stores.splice(0)) await store.close();
});

interface Chain {
  /** What settlePayment answers (or throws) each time it is called. */
  settle: () => Promise<unknown>;
  verify?: () => Promise<unknown>;
  state: AuthorizationOutcome;
}

/** A held payment with a running job whose authorization expires `validForSeconds` from `now`. */
async function heldJob(now: number, validForSeconds = 1800) {
  const store = new SqliteStore(":memory:", { now: () => now });
  stores.push(store);
  const nonce = `0x${randomUUID().replaceAll("-", "")}`;
  const key = `eip155:8453:0xasset:0xpayer:${nonce}`;
  const validBefore = Math.floor(now / 1000) + validForSeconds;
  await store.reservePayment({
    paymentKey: key,
    payloadHash: "p",
    requestHash: "r",
    operationId: "research-brief",
    network: "eip155:8453",
    asset: "0xasset",
    amount: "5000000",
    payer: "0xpayer",
    payTo: "0xpayto",
    nonce,
    validBefore,
    requestId: "req",
    leaseUntil: now + 60_000,
  });
  const job = await store.jobs.create({
    id: randomUUID(),
    type: "research-brief",
    input: {},
    paymentKey: key,
    maxAttempts: 3,
  });
  await store.holdPayment(key, {
    outcome: { status: 202, headers: {}, body: "{}" },
    held: {
      payload: { x402Version: 2 },
      requirements: { asset: "0xasset", payTo: "0xpayto", amount: "5000000", network: "eip155:8453" },
    } as never,
  });
  await store.jobs.markPaid(job.id);
  await store.jobs.claim("w1", ["research-brief"], 60_000);
  return { store, key, jobId: job.id, validBefore };
}

function settlerFor(store: Store, chain: Chain, now: () => number) {
  const calls = { settle: 0, verify: 0 };
  const resourceServer = {
    verifyPayment: async () => {
      calls.verify++;
      return chain.verify ? chain.verify() : { isValid: true };
    },
    settlePayment: async () => {
      calls.settle++;
      return chain.settle();
    },
  } as unknown as x402ResourceServer;
  const authorizations: AuthorizationChecker = { check: async () => chain.state };
  const settler = new HeldPaymentSettler({
    answers: x402HttpAnswers,
    store,
    resourceServer,
    authorizations,
    metrics: new Metrics(),
    log,
    settlementTimeoutMs: SETTLE_MS,
    now,
  });
  return { settler, calls };
}

const paid = { success: true, transaction: "0xtransfer", network: "eip155:8453", payer: "0xpayer" };

describe("HeldPaymentSettler", () => {
  it("settles a ready job's payment after verifying it again, then shows the result", async () => {
    const now = Date.now();
    const { store, key, jobId } = await heldJob(now);
    await store.jobs.complete(jobId, "w1", { brief: "ready" });
    const { settler, calls } = settlerFor(
      store,
      { settle: async () => paid, state: { state: "unused" } },
      () => now,
    );
    expect(await settler.reconcile(key)).toBe("settled");
    expect(calls).toEqual({ verify: 1, settle: 1 });
    expect(await store.getPayment(key)).toMatchObject({ state: "settled", txHash: "0xtransfer" });
    expect(await store.jobs.get(jobId)).toMatchObject({ state: "succeeded", result: { brief: "ready" } });
  });

  it("a refusal while the authorization is valid is tried again with backoff, not final (funds may come back)", async () => {
    let clock = Date.now();
    const { store, key, jobId } = await heldJob(clock);
    await store.jobs.complete(jobId, "w1", { brief: "ready" });
    const chain: Chain = {
      settle: async () => paid,
      verify: async () => ({ isValid: false, invalidReason: "insufficient_funds" }),
      state: { state: "unused" },
    };
    const { settler, calls } = settlerFor(store, chain, () => clock);
    expect(await settler.reconcile(key)).toBe("open");
    expect(await settler.reconcile(key)).toBe("waiting"); // backing off
    expect(calls).toEqual({ verify: 1, settle: 0 });
    expect((await store.getPayment(key))?.state).toBe("held");
    expect((await store.jobs.get(jobId))?.state).toBe("ready");

    chain.verify = undefined; // the payer topped up
    clock += 2_001;
    expect(await settler.reconcile(key)).toBe("settled");
    expect((await store.jobs.get(jobId))?.state).toBe("succeeded");
  });

  it("a facilitator that broadcast and then answered 5xx: the token says paid, so it is settled, never sent twice", async () => {
    const now = Date.now();
    const { store, key, jobId } = await heldJob(now);
    await store.jobs.complete(jobId, "w1", { brief: "ready" });
    const chain: Chain = {
      settle: async () => {
        throw new SettleError(502, {
          success: false,
          errorReason: "unexpected_settle_error",
          transaction: "0xsent",
        } as never);
      },
      state: { state: "paid", transaction: "0xsent" },
    };
    const { settler, calls } = settlerFor(store, chain, () => now);
    expect(await settler.reconcile(key)).toBe("settled");
    expect(calls.settle).toBe(1);
    expect(await store.getPayment(key)).toMatchObject({ state: "settled", txHash: "0xsent" });
  });

  it("an authorization spent elsewhere fails the payment; the result is withheld (kept, not shown)", async () => {
    const now = Date.now();
    const { store, key, jobId } = await heldJob(now);
    await store.jobs.complete(jobId, "w1", { brief: "ready" });
    const chain: Chain = {
      settle: async () => ({ success: false, errorReason: "invalid_exact_evm_nonce_used" }),
      state: { state: "consumed" },
    };
    const { settler } = settlerFor(store, chain, () => now);
    expect(await settler.reconcile(key)).toBe("failed");
    expect((await store.getPayment(key))?.state).toBe("failed");
    expect(await store.jobs.get(jobId)).toMatchObject({
      state: "failed",
      error: { code: "payment_failed" },
      result: { brief: "ready" },
    });
  });

  it("unused at validBefore: waits out the 30 s clock skew before releasing (a late broadcast may still land)", async () => {
    let clock = Date.now();
    const { store, key, jobId, validBefore } = await heldJob(clock, 600);
    await store.jobs.complete(jobId, "w1", { brief: "ready" });
    const { settler, calls } = settlerFor(
      store,
      { settle: async () => paid, state: { state: "unused" } },
      () => clock,
    );
    clock = validBefore * 1000 + 1;
    expect(await settler.reconcile(key)).toBe("open");
    expect(calls.settle).toBe(0); // never sent after validBefore
    expect((await store.getPayment(key))?.state).toBe("held");
    clock = (validBefore + 31) * 1000;
    expect(await settler.reconcile(key)).toBe("released");
    expect(await store.jobs.get(jobId)).toMatchObject({
      state: "failed",
      error: { code: "payment_expired" },
    });
  });

  it("a job still running at its deadline is expired and its payment released; one the worker completed meanwhile is not", async () => {
    const now = Date.now();
    const late = await heldJob(now);
    const pastDeadline = jobDeadline({ validBefore: late.validBefore }, SETTLE_MS) + 1;
    const { settler } = settlerFor(
      late.store,
      { settle: async () => paid, state: { state: "unused" } },
      () => pastDeadline,
    );
    expect(await settler.reconcile(late.key)).toBe("released");
    expect(await late.store.jobs.get(late.jobId)).toMatchObject({
      state: "failed",
      error: { code: "deadline_passed" },
    });

    // The race: the settler read the job running, the worker completes it before expire() runs.
    const raced = await heldJob(now);
    const stale = await raced.store.jobs.get(raced.jobId);
    const jobs = Object.create(raced.store.jobs);
    jobs.getByPayment = async () => stale;
    const store = Object.create(raced.store);
    Object.defineProperty(store, "jobs", { value: jobs });
    await raced.store.jobs.complete(raced.jobId, "w1", { brief: "just in time" });
    const { settler: racing } = settlerFor(
      store,
      { settle: async () => paid, state: { state: "unused" } },
      () => pastDeadline,
    );
    expect(await racing.reconcile(raced.key)).toBe("open");
    expect((await raced.store.getPayment(raced.key))?.state).toBe("held");
    expect((await raced.store.jobs.get(raced.jobId))?.state).toBe("ready");
  });

  it("two settlers on one payment: the lease lets one settle; the other neither settles nor releases", async () => {
    const now = Date.now();
    const { store, key, jobId } = await heldJob(now);
    await store.jobs.complete(jobId, "w1", { brief: "ready" });
    let release: (value: unknown) => void = () => {};
    const slow: Chain = {
      settle: () => new Promise((resolve) => (release = resolve)),
      state: { state: "unused" },
    };
    const first = settlerFor(store, slow, () => now);
    const second = settlerFor(store, { settle: async () => paid, state: { state: "unused" } }, () => now);
    const settling = first.settler.reconcile(key);
    await new Promise((resolve) => setTimeout(resolve, 20));
    expect(await second.settler.reconcile(key)).toBe("waiting");
    expect(second.calls.settle).toBe(0);
    release(paid);
    expect(await settling).toBe("settled");
    expect((await store.jobs.get(jobId))?.state).toBe("succeeded");
  });

  it("a failed job releases its payment: nothing was sent", async () => {
    const now = Date.now();
    const { store, key, jobId } = await heldJob(now);
    await store.jobs.fail(jobId, "w1", { code: "provider_failed", message: "search down" });
    const { settler, calls } = settlerFor(
      store,
      { settle: async () => paid, state: { state: "unused" } },
      () => now,
    );
    expect(await settler.reconcile(key)).toBe("released");
    expect(calls).toEqual({ verify: 0, settle: 0 });
    expect(await store.getPayment(key)).toMatchObject({ state: "released", txHash: null });
    expect(await store.jobs.failedPaidJobs()).toEqual([]);
  });
});
