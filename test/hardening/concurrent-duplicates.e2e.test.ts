import type { x402ResourceServer } from "@x402/core/server";
import pino from "pino";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { devAccounts, devPrivateKey } from "../../src/chain/dev-accounts.ts";
import { type LocalChain, startLocalChain } from "../../src/chain/local-chain.ts";
import { createPayer, paymentReceipt } from "../../src/client/paying-fetch.ts";
import { x402HttpAnswers } from "../../src/http/x402-answers.ts";
import { Metrics } from "../../src/metrics.ts";
import { csvCleanup } from "../../src/operations/csv-cleanup/index.ts";
import { PaymentGate } from "../../src/payments/resource-server/gate.ts";
import { SqliteStore } from "../../src/store/sqlite/sqlite-store.ts";
import {
  decoded,
  httpOutcome,
  STAND_IN_PAYER,
  standInPayment,
  standInRequirements,
  standInTerms,
} from "../helpers/gate-stand-ins.ts";
import {
  databaseUrlOf,
  freePort,
  jsonPost,
  startTestService,
  type TestService,
  usdcBalances,
} from "../helpers/service.ts";

const PRICE = 2_000_000n;

/**
 * Finding 3 of the hardening review: the same payment sent many times at once (to two instances on one
 * store) got "402 Payment rejected" for some copies although it settled. A settlement landed between a
 * copy's store lookup and its verification, which then refused the spent nonce. A client believing
 * that 402 signs again and pays twice. Every copy must get the outcome or "in progress, retry".
 */
describe("the same payment sent 50 times at once to two instances", () => {
  let chain: LocalChain;
  let first: TestService;
  let second: TestService;

  beforeAll(async () => {
    chain = await startLocalChain({ port: await freePort(), log: pino({ level: "silent" }) });
    const self = (key: number) => ({
      PAYMENT_MODE: "self",
      X402_SETTLER_PRIVATE_KEY: devPrivateKey(key),
      RPC_URL: chain.rpcUrl,
      X402_PAY_TO: devAccounts().payTo.address,
    });
    first = await startTestService(self(0));
    second = await startTestService({ ...self(9), DATABASE_URL: databaseUrlOf(first.config) });
  }, 120_000);

  afterAll(async () => {
    await second?.stop();
    await first?.stop();
    await chain?.stop();
  });

  it("answers every copy with the one outcome or 'in progress, retry', never a rejection, and charges once", async () => {
    const payer = createPayer(devPrivateKey(4));
    const balanceOf = usdcBalances(chain.rpcUrl);
    const before = await balanceOf(payer.address);
    const request = { rows: [{ id: "1", name: " Ada " }] };
    const payment = await payer.signPayment(await fetch(`${first.url}/v1/csv-cleanup`, jsonPost(request)));

    const copies = Array.from({ length: 50 }, (_, i) => (i % 2 === 0 ? first.url : second.url));
    const responses = await Promise.all(
      copies.map((base) => fetch(`${base}/v1/csv-cleanup`, jsonPost(request, payment))),
    );
    const statuses = responses.map((response) => response.status);
    expect(statuses.filter((status) => status !== 200 && status !== 409)).toEqual([]);
    const bodies = await Promise.all(responses.map((response) => response.text()));
    const delivered = new Set(bodies.filter((_, i) => statuses[i] === 200));
    expect(delivered.size).toBe(1);
    for (const [i, response] of responses.entries()) {
      if (response.status !== 409) continue;
      expect(JSON.parse(bodies[i] as string).type).toMatch(/payment-in-progress$/);
      expect(Number(response.headers.get("retry-after"))).toBeGreaterThan(0);
    }
    const receipts = new Set(
      responses.map((response) => paymentReceipt(response)?.transaction).filter(Boolean),
    );
    expect(receipts.size).toBe(1);
    expect(await balanceOf(payer.address)).toBe(before - PRICE);
  });
});

describe("a copy whose verification is refused because a concurrent copy just settled the payment", () => {
  const requirements = standInRequirements;
  const terms = standInTerms;
  const header = standInPayment(7);

  it("gets the settled outcome, not a 402", async () => {
    const store = new SqliteStore(":memory:");
    // The slow copy's verification is answered only after the fast copy has settled: by then the chain
    // says the nonce is spent, as the reference facilitator does.
    let answerSlowCopy: () => void = () => undefined;
    const slowCopyVerified = new Promise<void>((resolve) => {
      answerSlowCopy = resolve;
    });
    let verifications = 0;
    const resourceServer = {
      initialize: async () => {},
      findMatchingRequirements: () => requirements,
      verifyPayment: async () => {
        verifications++;
        if (verifications === 1) {
          await slowCopyVerified;
          return { isValid: false, invalidReason: "invalid_exact_evm_payload_authorization_nonce_used" };
        }
        return { isValid: true };
      },
      settlePayment: async () => ({
        success: true,
        transaction: `0x${"ab".repeat(32)}`,
        network: requirements.network,
        payer: STAND_IN_PAYER,
      }),
    } as unknown as x402ResourceServer;
    const gate = new PaymentGate({
      answers: x402HttpAnswers,
      resourceServer,
      store,
      metrics: new Metrics(),
      settlementTimeoutMs: 1000,
    });
    const call = () => ({
      operation: csvCleanup,
      terms,
      input: { rows: [{ id: "1" }] },
      payment: decoded(header),
      requestId: "req",
      door: "http",
      log: pino({ level: "silent" }),
      run: async () => ({ body: { ok: true } }),
    });
    try {
      const slow = httpOutcome(gate, call());
      await new Promise((resolve) => setTimeout(resolve, 20));
      const fast = await httpOutcome(gate, call());
      expect(fast.status).toBe(200);
      answerSlowCopy();
      const late = await slow;
      expect(late.status).toBe(200);
      expect(late.body).toBe(fast.body);
      expect(late.headers["x-payment-replayed"]).toBe("true");
    } finally {
      gate.leases.stop();
      await store.close();
    }
  });
});
