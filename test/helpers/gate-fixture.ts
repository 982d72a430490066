import type { x402ResourceServer } from "@x402/core/server";
import pino from "pino";
import { x402HttpAnswers } from "../../src/http/x402-answers.ts";
import { Metrics } from "../../src/metrics.ts";
import { csvCleanup } from "../../src/operations/csv-cleanup/index.ts";
import { PaymentGate } from "../../src/payments/resource-server/gate.ts";
import type { PaidRequest } from "../../src/payments/resource-server/paid-request.ts";
import type {
  AuthorizationChecker,
  AuthorizationOutcome,
} from "../../src/payments/settler/authorization-state.ts";
import { SqliteStore } from "../../src/store/sqlite/sqlite-store.ts";
import type { PaymentState } from "../../src/store/store.ts";
import { decoded, standInPayment, standInRequirements, standInTerms } from "./gate-stand-ins.ts";

/** A gate over an in-memory ledger and a stand-in resource server, for the gate's unit tests. */

export const TX = `0x${"ab".repeat(32)}` as const;

let nonce = 0;
/** A fresh stand-in payment (a new nonce each time). */
export const paymentHeader = () => standInPayment(++nonce);
/** The nonce of the last paymentHeader(). */
export const lastNonce = () => nonce;

/** A resource server that verifies everything and settles as told. */
export const resourceServer = (settle: () => Promise<unknown>) =>
  ({
    initialize: async () => {},
    findMatchingRequirements: () => standInRequirements,
    verifyPayment: async () => ({ isValid: true }),
    settlePayment: settle,
  }) as unknown as x402ResourceServer;

export const checker = (outcome: AuthorizationOutcome): AuthorizationChecker => ({
  check: async () => outcome,
});

/** A gate and a csv-cleanup call for it; its store goes into `stores` (the caller closes them). */
export function standInGate(
  options: { settle: () => Promise<unknown>; authorizations?: AuthorizationChecker; now?: () => number },
  stores: SqliteStore[],
) {
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
    terms: standInTerms,
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
