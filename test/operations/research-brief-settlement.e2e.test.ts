import pino from "pino";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { defineOperation } from "../../src/catalog/operation.ts";
import { devAccounts, devPrivateKey } from "../../src/chain/dev-accounts.ts";
import { type LocalChain, startLocalChain } from "../../src/chain/local-chain.ts";
import { createPayer, paymentReceipt } from "../../src/client/paying-fetch.ts";
import { researchBrief } from "../../src/operations/research-brief/index.ts";
import { openStore } from "../../src/store/open-store.ts";
import { paymentKeyOf, spendNonceElsewhere, startFlakyRpc } from "../helpers/payment-faults.ts";
import { freePort, jsonPost, startTestService, type TestService, usdcBalances } from "../helpers/service.ts";
import { QUESTION, researchEnv, type StandIns, startStandIns } from "./research-brief-standins.ts";

const PRICE = 5_000_000n;

async function until(condition: () => Promise<boolean>, timeoutMs = 30_000) {
  const deadline = Date.now() + timeoutMs;
  while (!(await condition())) {
    if (Date.now() > deadline) throw new Error("condition not met in time");
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

async function pollUntilFinished(statusUrl: string) {
  for (let i = 0; i < 600; i++) {
    const body = await (await fetch(statusUrl)).json();
    if (body.status === "succeeded" || body.status === "failed") return body;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  throw new Error(`${statusUrl} did not finish`);
}

describe("a held research payment whose settlement answer is lost at delivery", () => {
  let chain: LocalChain;
  let rpc: Awaited<ReturnType<typeof startFlakyRpc>>;
  let standIns: StandIns;
  let service: TestService;

  beforeAll(async () => {
    chain = await startLocalChain({ port: await freePort(), log: pino({ level: "silent" }) });
    rpc = await startFlakyRpc(chain.rpcUrl);
    standIns = await startStandIns();
    service = await startTestService(
      {
        X402_SETTLER_PRIVATE_KEY: devPrivateKey(0),
        RPC_URL: rpc.url,
        X402_PAY_TO: devAccounts().payTo.address,
        X402_SETTLEMENT_TIMEOUT_MS: "2000",
        ...researchEnv(standIns),
      },
      { operations: [researchBrief] },
    );
  });
  afterAll(async () => {
    await service?.stop();
    await standIns?.stop();
    await rpc?.stop();
    await chain?.stop();
  });

  it("holds the result (still running) until the chain says paid, then delivers it, charged once", async () => {
    const balanceOf = usdcBalances(chain.rpcUrl);
    const payer = createPayer(devPrivateKey(8));
    const url = `${service.url}/v1/research-brief`;
    const request = { question: QUESTION, requiredSources: 2, maxWords: 300 };
    const payment = await payer.signPayment(await fetch(url, jsonPost(request)));
    const before = await balanceOf(payer.address);

    // Accepting the job sends nothing: the first broadcast is the settlement at delivery, and its answer is lost.
    rpc.goDarkAfterNextBroadcast();
    const accepted = await fetch(url, jsonPost(request, payment));
    expect(accepted.status).toBe(202);
    expect(paymentReceipt(accepted)).toBeUndefined();
    const { jobId, statusUrl } = await accepted.json();

    const store = await openStore(service.config.database);
    try {
      const key = paymentKeyOf(payment);
      // The transfer landed, the service cannot see it: the brief waits, shown running, not delivered.
      await until(async () => (await balanceOf(payer.address)) === before - PRICE);
      await until(async () => (await store.jobs.get(jobId))?.state === "ready");
      await new Promise((resolve) => setTimeout(resolve, 1500));
      const waiting = await (await fetch(statusUrl)).json();
      expect(waiting).toMatchObject({
        status: "running",
        progress: { stage: "settling payment" },
        payment: { state: "held" },
      });
      expect(waiting.result).toBeUndefined();
      expect(typeof waiting.expiresAt).toBe("string");
      expect((await store.getPayment(key))?.state).toBe("held");

      rpc.heal();
      const job = await pollUntilFinished(statusUrl);
      expect(job.status).toBe("succeeded");
      expect(job.result.sources.length).toBeGreaterThanOrEqual(2);
      expect(job.payment).toMatchObject({
        state: "settled",
        transaction: expect.stringMatching(/^0x[0-9a-f]{64}$/),
      });
      expect(standIns.modelRequests).toHaveLength(1);
      expect(await store.jobs.get(jobId)).toMatchObject({ attempts: 1, paymentKey: key });
      expect((await store.getPayment(key))?.state).toBe("settled");
      // The same payment again starts no other job; once settled (public on chain) it no longer names this
      // one either: a 409 pointing to the payer's sign-in (test/sign-in.e2e.test.ts).
      const again = await fetch(url, jsonPost(request, payment));
      expect(again.status).toBe(409);
      expect(await again.text()).not.toContain(jobId);
      expect(await store.jobs.get(jobId)).toMatchObject({ attempts: 1, paymentKey: key });
    } finally {
      await store.close();
    }
    expect(await balanceOf(payer.address)).toBe(before - PRICE);
  });
});

describe("a held research payment whose authorization is spent elsewhere while the job runs", () => {
  let standIns: StandIns;
  let service: TestService;
  let spend: () => Promise<void> = async () => {};

  // The payer spends the authorization's nonce elsewhere after the job was accepted, before its brief is ready.
  const spendsWhileRunning = defineOperation({
    ...researchBrief,
    start: async (env) => {
      const started = await (researchBrief.start as NonNullable<typeof researchBrief.start>)(env);
      const run = started.jobHandler as NonNullable<typeof started.jobHandler>;
      return {
        ...started,
        jobHandler: async (input, context) => {
          await spend();
          return run(input, context);
        },
      };
    },
  });

  beforeAll(async () => {
    standIns = await startStandIns();
    service = await startTestService(researchEnv(standIns), { operations: [spendsWhileRunning] });
  });
  afterAll(async () => {
    await service?.stop();
    await standIns?.stop();
  });

  it("withholds the brief: the job fails payment_failed, nothing reaches payTo, the ledger says failed", async () => {
    const rpcUrl = service.localChain?.rpcUrl as string;
    const balanceOf = usdcBalances(rpcUrl);
    const payer = createPayer(devPrivateKey(9));
    const url = `${service.url}/v1/research-brief`;
    const payment = await payer.signPayment(await fetch(url, jsonPost({ question: QUESTION })));
    const { nonce } = JSON.parse(Buffer.from(Object.values(payment)[0] as string, "base64").toString())
      .payload.authorization;
    spend = () => spendNonceElsewhere(rpcUrl, devPrivateKey(9), nonce);
    const [payerBefore, payToBefore] = [await balanceOf(payer.address), await balanceOf(service.payTo)];

    const response = await fetch(url, jsonPost({ question: QUESTION }, payment));
    expect(response.status).toBe(202);
    const job = await pollUntilFinished((await response.json()).statusUrl);
    expect(job.status).toBe("failed");
    expect(job.result).toBeUndefined();
    expect(job.error.code).toBe("payment_failed");
    expect(job.error.message).toContain("cancelled or spent on another transfer");
    expect(job.payment.state).toBe("failed");
    expect(await balanceOf(service.payTo)).toBe(payToBefore);
    expect(await balanceOf(payer.address)).toBe(payerBefore);

    const store = await openStore(service.config.database);
    try {
      expect((await store.getPayment(paymentKeyOf(payment)))?.state).toBe("failed");
      expect(await store.jobs.failedPaidJobs()).toEqual([]);
    } finally {
      await store.close();
    }
  });
});
