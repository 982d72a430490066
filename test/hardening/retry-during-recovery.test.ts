import type { x402ResourceServer } from "@x402/core/server";
import pino from "pino";
import { afterEach, describe, expect, it } from "vitest";
import { x402HttpAnswers } from "../../src/http/x402-answers.ts";
import { Metrics } from "../../src/metrics.ts";
import { csvCleanup } from "../../src/operations/csv-cleanup/index.ts";
import { PaymentGate } from "../../src/payments/resource-server/gate.ts";
import { LEASE_TTL_MS, STALE_LEASE_MS } from "../../src/payments/resource-server/lease-keeper.ts";
import type { PaidRequest } from "../../src/payments/resource-server/paid-request.ts";
import { SqliteStore } from "../../src/store/sqlite/sqlite-store.ts";
import {
  decoded,
  httpOutcome,
  STAND_IN_PAYER,
  standInPayment,
  standInPaymentKey,
  standInRequirements,
  standInTerms,
} from "../helpers/gate-stand-ins.ts";

const requirements = standInRequirements;
const terms = standInTerms;
const NONCE = 9;
const header = standInPayment(NONCE);

/** Verifies everything, settles everything; the chain says the authorization is unused. */
const resourceServer = {
  initialize: async () => {},
  findMatchingRequirements: () => requirements,
  verifyPayment: async () => ({ isValid: true }),
  settlePayment: async () => ({
    success: true,
    transaction: `0x${"cd".repeat(32)}`,
    network: requirements.network,
    payer: STAND_IN_PAYER,
  }),
} as unknown as x402ResourceServer;

const stores: SqliteStore[] = [];
const gates: PaymentGate[] = [];
afterEach(async () => {
  for (const gate of gates.splice(0)) gate.leases.stop();
  for (const store of stores.splice(0)) await store.close();
});

function instance(store: SqliteStore, clock: () => number) {
  const gate = new PaymentGate({
    answers: x402HttpAnswers,
    resourceServer,
    store,
    metrics: new Metrics(),
    authorizations: { check: async () => ({ state: "unused" }) },
    settlementTimeoutMs: 1000,
    now: clock,
  });
  gates.push(gate);
  return gate;
}

const call = (run: PaidRequest["run"]): PaidRequest => ({
  operation: csvCleanup,
  terms,
  input: { rows: [{ id: "1" }] },
  payment: decoded(header),
  requestId: "req",
  door: "http",
  log: pino({ level: "silent" }),
  run,
});

/**
 * Finding 4 of the hardening review: after a crash, "a retry inside the lease hangs 60 s and gets 409".
 * An owner renews its lease while it works; a lease left to go stale is a stopped owner, and the retry
 * hears "in progress, retry after N s" at once, then takes the payment over when the lease has run out.
 */
describe("a retry of a payment whose owner stopped mid-call", () => {
  it("is told at once to retry after the lease, then resumes the payment and gets its result", async () => {
    const store = new SqliteStore(":memory:");
    stores.push(store);
    // The first instance starts the call and dies in the middle: its work never ends, its lease is not renewed.
    const dead = instance(store, Date.now);
    void dead.handle(call(() => new Promise(() => undefined)));
    await new Promise((resolve) => setTimeout(resolve, 50));
    dead.leases.stop();

    // Another instance, a few seconds later (its clock moved on): the lease has gone stale.
    let offset = LEASE_TTL_MS - STALE_LEASE_MS + 1_000;
    const survivor = instance(store, () => Date.now() + offset);
    const retry = await httpOutcome(
      survivor,
      call(async () => ({ body: { rows: 1 } })),
    );
    expect(retry.status).toBe(409);
    expect(JSON.parse(retry.body).type).toMatch(/payment-in-progress$/);
    const retryAfter = Number(retry.headers["retry-after"]);
    expect(retryAfter).toBeGreaterThan(0);
    expect(retryAfter).toBeLessThanOrEqual(STALE_LEASE_MS / 1000);

    // After the lease: the retry takes the payment over, runs it and settles it once.
    offset = LEASE_TTL_MS + 1_000;
    const resumed = await httpOutcome(
      survivor,
      call(async () => ({ body: { rows: 1 } })),
    );
    expect(resumed.status).toBe(200);
    expect(JSON.parse(resumed.body)).toEqual({ rows: 1 });
    const record = await store.getPayment(standInPaymentKey(NONCE));
    expect(record?.state).toBe("settled");
  });
});
