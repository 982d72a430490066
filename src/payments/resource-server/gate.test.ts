import type { x402ResourceServer } from "@x402/core/server";
import pino from "pino";
import { afterEach, describe, expect, it } from "vitest";
import {
  decoded,
  httpOutcome,
  standInPayment,
  standInPaymentKey,
  standInRequirements,
  standInTerms,
} from "../../../test/helpers/gate-stand-ins.ts";
import { x402HttpAnswers } from "../../http/x402-answers.ts";
import { Metrics } from "../../metrics.ts";
import { csvCleanup } from "../../operations/csv-cleanup/index.ts";
import { SqliteStore } from "../../store/sqlite/sqlite-store.ts";
import type { PaymentState } from "../../store/store.ts";
import type { AuthorizationChecker, AuthorizationOutcome } from "../settler/authorization-state.ts";
import { PaymentGate } from "./gate.ts";
import type { PaidRequest } from "./paid-request.ts";

const TX = `0x${"ab".repeat(32)}` as const;
const requirements = standInRequirements;
const terms = standInTerms;

let nonce = 0;
const paymentHeader = () => standInPayment(++nonce);

/** A resource server that verifies everything and settles as told. */
const resourceServer = (settle: () => Promise<unknown>) =>
  ({
    initialize: async () => {},
    findMatchingRequirements: () => requirements,
    verifyPayment: async () => ({ isValid: true }),
    settlePayment: settle,
  }) as unknown as x402ResourceServer;

const checker = (outcome: AuthorizationOutcome): AuthorizationChecker => ({ check: async () => outcome });

const stores: SqliteStore[] = [];
afterEach(async () => {
  for (const store of stores.splice(0)) await store.close();
});

function setup(options: {
  settle: () => Promise<unknown>;
  authorizations?: AuthorizationChecker;
  now?: () => number;
}) {
  const store = new SqliteStore(":memory:");
  stores.push(store);
  const gate = new PaymentGate({
    answers: x402HttpAnswers,
    resourceServer: resourceServer(options.settle),
    store,
    metrics: new Metrics(),
    authorizations: options.authorizations,
    settlementTimeoutMs: 1000,
    now: options.now,
  });
  const finals: { state: PaymentState; ledger: PaymentState | undefined }[] = [];
  const call = (header: string): PaidRequest => ({
    operation: csvCleanup,
    terms,
    input: { rows: [{ id: "1" }] },
    payment: decoded(header),
    requestId: "req",
    door: "http",
    log: pino({ level: "silent" }),
    run: async () => ({ body: { ok: true } }),
    onFinal: async (paymentKey, state) => {
      finals.push({ state, ledger: (await store.getPayment(paymentKey))?.state });
    },
  });
  return { store, gate, call, finals };
}

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
    expect((await store.heldPayments())[0]?.held?.payload.payload).toMatchObject({
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

describe("the money rules the end-to-end payment suites check, at the gate", () => {
  const settles = () => {
    const sent: string[] = [];
    const settle = async () => {
      sent.push("settle");
      return { success: true, transaction: TX, network: requirements.network };
    };
    return { sent, settle };
  };

  it("no payment: the route's terms, nothing run", async () => {
    const { gate, call } = setup(settles());
    const outcome = await gate.handle({ ...call(paymentHeader()), payment: undefined });
    expect(outcome).toEqual({ kind: "payment-required", terms });
  });

  it("an operation that fails after verification is not charged: released, never settled", async () => {
    const { sent, settle } = settles();
    const { gate, call, store } = setup({ settle });
    const header = paymentHeader();
    const outcome = await httpOutcome(gate, {
      ...call(header),
      run: async () => {
        throw new Error("boom");
      },
    });
    expect(outcome.status).toBe(500);
    expect(sent).toEqual([]);
    expect((await store.getPayment(standInPaymentKey(nonce)))?.state).toBe("released");
  });

  it("a success is settled once; its prompt retry is replayed, not settled again; after two minutes it is refused", async () => {
    const { sent, settle } = settles();
    let now = Date.now();
    const { gate, call } = setup({ settle, now: () => now });
    const header = paymentHeader();
    const first = await httpOutcome(gate, call(header));
    expect(first.status).toBe(200);
    expect(first.headers["PAYMENT-RESPONSE"]).toBeDefined();
    const retry = await httpOutcome(gate, call(header));
    expect(retry.headers["x-payment-replayed"]).toBe("true");
    expect(retry.body).toBe(first.body);
    expect(sent).toEqual(["settle"]);
    now += 121_000;
    const late = await httpOutcome(gate, call(header));
    expect(late.status).toBe(409);
    expect(sent).toEqual(["settle"]);
  });

  it("a payment is for its request only: another input is a 409; another signature over its nonce a 402", async () => {
    const { sent, settle } = settles();
    const { gate, call } = setup({ settle });
    const header = paymentHeader();
    expect((await httpOutcome(gate, call(header))).status).toBe(200);
    const other = await httpOutcome(gate, { ...call(header), input: { rows: [{ id: "2" }] } });
    expect(other.status).toBe(409);
    expect(JSON.parse(other.body).type).toMatch(/payment-already-used$/);
    const resigned = decoded(header);
    (resigned.payload as { signature: string }).signature = `0x${"22".repeat(65)}`;
    const forged = await httpOutcome(gate, { ...call(header), payment: resigned });
    expect(forged.status).toBe(402);
    expect(JSON.parse(forged.body).reason).toBe("nonce_already_used");
    expect(sent).toEqual(["settle"]);
  });
});
