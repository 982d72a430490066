import pino from "pino";
import { afterEach, describe, expect, it } from "vitest";
import {
  checker,
  paymentHeader,
  resourceServer,
  standInGate,
  TX,
} from "../../../test/helpers/gate-fixture.ts";
import {
  decoded,
  httpOutcome,
  standInRequirements,
  standInTerms,
} from "../../../test/helpers/gate-stand-ins.ts";
import { x402HttpAnswers } from "../../http/x402-answers.ts";
import { Metrics } from "../../metrics.ts";
import { csvCleanup } from "../../operations/csv-cleanup/index.ts";
import { SqliteStore } from "../../store/sqlite/sqlite-store.ts";
import { PaymentGate } from "./gate.ts";
import type { PaidRequest } from "./paid-request.ts";

const requirements = standInRequirements;
const terms = standInTerms;
const stores: SqliteStore[] = [];
afterEach(async () => {
  for (const store of stores.splice(0)) await store.close();
});
const setup = (options: Parameters<typeof standInGate>[0]) => standInGate(options, stores);

const refused = async () => ({
  success: false,
  errorReason: "invalid_exact_evm_transaction_failed",
  transaction: "",
});

describe("the paid-call pipeline around settlement", () => {
  it("drops what an unpaid payment paid for only after the ledger says so", async () => {
    const { gate, call, finals } = setup({ settle: refused });
    const outcome = await httpOutcome(gate, call(paymentHeader()));
    expect(outcome.status).toBe(402);
    expect(finals).toEqual([{ state: "failed", ledger: "failed" }]);
  });

  it("a settled sync payment has nothing to queue: onFinal is for jobs, whose payments are held", async () => {
    const { gate, call, finals } = setup({
      settle: async () => ({ success: true, transaction: TX, network: requirements.network }),
    });
    expect((await httpOutcome(gate, call(paymentHeader()))).status).toBe(200);
    expect(finals).toEqual([]);
  });

  it("a job's payment is held, not settled: the 202 has no receipt, the job is queued once the ledger says held", async () => {
    let settled = 0;
    const { gate, call, finals, store } = setup({
      settle: async () => {
        settled++;
        return { success: true, transaction: TX, network: requirements.network };
      },
    });
    const job = (header: string): PaidRequest => ({
      ...call(header),
      operation: { ...csvCleanup, kind: "async" },
      terms: { ...terms, requirements: { ...requirements, maxTimeoutSeconds: 1800 } },
      run: async () => ({ status: 202, body: { jobId: "j" } }),
    });
    const validFor = (seconds: number) => {
      const decoded = JSON.parse(Buffer.from(paymentHeader(), "base64").toString());
      decoded.payload.authorization.validBefore = String(Math.floor(Date.now() / 1000) + seconds);
      return Buffer.from(JSON.stringify(decoded)).toString("base64");
    };
    const outcome = await httpOutcome(gate, job(validFor(1800)));
    expect(outcome.status).toBe(202);
    expect(outcome.headers["PAYMENT-RESPONSE"]).toBeUndefined();
    expect(settled).toBe(0);
    expect(finals).toEqual([{ state: "held", ledger: "held" }]);
    const [heldKey] = await store.heldPaymentsToDecide({ expiringBefore: 0, limit: 10 });
    expect((await store.getPayment(heldKey as string))?.held?.payload.payload).toMatchObject({
      authorization: { from: "0x2222222222222222222222222222222222222222" },
    });

    // Too short to outlive a job, or longer than the terms allow: refused before any work.
    expect(JSON.parse((await httpOutcome(gate, job(validFor(60)))).body).reason).toBe(
      "authorization_too_short",
    );
    expect(JSON.parse((await httpOutcome(gate, job(validFor(86_400)))).body).reason).toBe(
      "authorization_too_long",
    );
    expect(finals).toHaveLength(1);
  });

  it("asks the token about a first-attempt refusal: a transfer that landed anyway is settled and delivered", async () => {
    const { gate, call, store } = setup({
      settle: refused,
      authorizations: checker({ state: "paid", transaction: TX }),
    });
    const header = paymentHeader();
    const outcome = await httpOutcome(gate, call(header));
    expect(outcome.status).toBe(200);
    expect(JSON.parse(outcome.body)).toEqual({ ok: true });
    const [record] = (await store.paymentCounts()).filter((row) => row.state === "settled");
    expect(record?.count).toBe(1);
  });

  it("keeps the refusal when the token shows the authorization unused", async () => {
    const { gate, call } = setup({ settle: refused, authorizations: checker({ state: "unused" }) });
    const outcome = await httpOutcome(gate, call(paymentHeader()));
    expect(outcome.status).toBe(402);
    expect(JSON.parse(outcome.body).reason).toBe("invalid_exact_evm_transaction_failed");
  });

  it("a store failure after settlement answers 503 'retry the same payment', and the retry delivers, charged once", async () => {
    const settle = async () => ({ success: true, transaction: TX, network: requirements.network });
    const { gate, call, store } = setup({
      settle,
      authorizations: checker({ state: "paid", transaction: TX }),
    });
    const complete = store.completePayment.bind(store);
    let failures = 1;
    store.completePayment = async (...args) => {
      if (failures-- > 0) throw new Error("connection reset");
      return complete(...args);
    };
    const header = paymentHeader();
    const first = await httpOutcome(gate, call(header));
    expect(first.status).toBe(503);
    const detail = JSON.parse(first.body).detail as string;
    expect(detail).toContain("charged at most once");
    expect(detail).not.toContain("nothing was charged");
    const retry = await httpOutcome(gate, call(header));
    expect(retry.status).toBe(200);
    expect(JSON.parse(retry.body)).toEqual({ ok: true });
    expect(await store.paymentCounts()).toEqual([{ operationId: "csv-cleanup", state: "settled", count: 1 }]);
  });

  it("an attempt that outlived its lease does not settle: the attempt that took the payment over does, once", async () => {
    const store = new SqliteStore(":memory:");
    stores.push(store);
    let clock = Date.now();
    let settlements = 0;
    const settle = async () => {
      settlements++;
      return { success: true, transaction: TX, network: requirements.network };
    };
    // Two instances on one store, one clock.
    const gate = () =>
      new PaymentGate({
        answers: x402HttpAnswers,
        resourceServer: resourceServer(settle),
        store,
        metrics: new Metrics(),
        authorizations: checker({ state: "unused" }),
        settlementTimeoutMs: 1000,
        now: () => clock,
      });
    const [slowInstance, otherInstance] = [gate(), gate()];
    let runStarted: () => void = () => {};
    let finishSlowRun: () => void = () => {};
    const started = new Promise<void>((resolve) => {
      runStarted = resolve;
    });
    const header = paymentHeader();
    const slow = httpOutcome(slowInstance, {
      operation: csvCleanup,
      terms,
      input: { rows: [{ id: "1" }] },
      payment: decoded(header),
      requestId: "slow",
      door: "http",
      log: pino({ level: "silent" }),
      run: () =>
        new Promise((resolve) => {
          finishSlowRun = () => resolve({ body: { by: "slow" } });
          runStarted();
        }),
    });
    await started;
    clock += 200_000; // past the slow attempt's lease (152 s), within the authorization's validity (600 s)
    const taken = await httpOutcome(otherInstance, {
      operation: csvCleanup,
      terms,
      input: { rows: [{ id: "1" }] },
      payment: decoded(header),
      requestId: "other",
      door: "http",
      log: pino({ level: "silent" }),
      run: async () => ({ body: { by: "other" } }),
    });
    expect(taken.status, taken.body).toBe(200);
    finishSlowRun();
    const late = await slow;
    expect(late.status).toBe(200);
    expect(JSON.parse(late.body)).toEqual({ by: "other" });
    expect(settlements).toBe(1);
  });
});
