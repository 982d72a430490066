import { encodePaymentSignatureHeader } from "@x402/core/http";
import type { x402ResourceServer } from "@x402/core/server";
import type { PaymentPayload, PaymentRequirements } from "@x402/core/types";
import pino from "pino";
import { afterEach, describe, expect, it } from "vitest";
import { BASE_NETWORK, BASE_USDC_ADDRESS } from "../../src/config.ts";
import { Metrics } from "../../src/metrics.ts";
import { csvCleanup } from "../../src/operations/csv-cleanup/index.ts";
import { LEASE_TTL_MS, STALE_LEASE_MS } from "../../src/payments/lease-keeper.ts";
import { type PaidCall, PaymentGate } from "../../src/payments/paid-call.ts";
import type { PaymentTerms } from "../../src/payments/terms.ts";
import { SqliteStore } from "../../src/store/sqlite/sqlite-store.ts";

const requirements: PaymentRequirements = {
  scheme: "exact",
  network: BASE_NETWORK as `${string}:${string}`,
  asset: BASE_USDC_ADDRESS,
  amount: "2000000",
  payTo: "0x1111111111111111111111111111111111111111",
  maxTimeoutSeconds: 120,
  extra: { name: "USD Coin", version: "2" },
};
const terms = {
  requirements,
  paymentRequired: { x402Version: 2, resource: { url: "http://x/v1/csv-cleanup" }, accepts: [requirements] },
  header: "terms",
} as unknown as PaymentTerms;
const header = encodePaymentSignatureHeader({
  x402Version: 2,
  accepted: requirements,
  payload: {
    signature: `0x${"11".repeat(65)}`,
    authorization: {
      from: "0x2222222222222222222222222222222222222222",
      to: requirements.payTo,
      value: requirements.amount,
      validAfter: "0",
      validBefore: String(Math.floor(Date.now() / 1000) + 600),
      nonce: `0x${"09".repeat(32)}`,
    },
  },
} as PaymentPayload);

/** Verifies everything, settles everything; the chain says the authorization is unused. */
const resourceServer = {
  initialize: async () => {},
  findMatchingRequirements: () => requirements,
  verifyPayment: async () => ({ isValid: true }),
  settlePayment: async () => ({
    success: true,
    transaction: `0x${"cd".repeat(32)}`,
    network: requirements.network,
    payer: "0x2222222222222222222222222222222222222222",
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

const call = (run: PaidCall["run"]): PaidCall => ({
  operation: csvCleanup,
  terms,
  input: { rows: [{ id: "1" }] },
  paymentHeader: header,
  requestId: "req",
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
    const retry = await survivor.handle(call(async () => ({ body: { rows: 1 } })));
    expect(retry.status).toBe(409);
    expect(JSON.parse(retry.body).type).toMatch(/payment-in-progress$/);
    const retryAfter = Number(retry.headers["retry-after"]);
    expect(retryAfter).toBeGreaterThan(0);
    expect(retryAfter).toBeLessThanOrEqual(STALE_LEASE_MS / 1000);

    // After the lease: the retry takes the payment over, runs it and settles it once.
    offset = LEASE_TTL_MS + 1_000;
    const resumed = await survivor.handle(call(async () => ({ body: { rows: 1 } })));
    expect(resumed.status).toBe(200);
    expect(JSON.parse(resumed.body)).toEqual({ rows: 1 });
    const record = await store.getPayment(
      `${requirements.network}:${requirements.asset}:0x2222222222222222222222222222222222222222:0x${"09".repeat(32)}`.toLowerCase(),
    );
    expect(record?.state).toBe("settled");
  });
});
