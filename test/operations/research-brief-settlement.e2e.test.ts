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

async function pollUntilFinished(statusUrl: string) {
  for (let i = 0; i < 600; i++) {
    const body = await (await fetch(statusUrl)).json();
    if (body.status === "succeeded" || body.status === "failed") return body;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  throw new Error(`${statusUrl} did not finish`);
}

describe("a research payment whose settlement outcome is unknown", () => {
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

  it("keeps the job awaiting payment (not run), and the retry that finds the transfer queues it once", async () => {
    const balanceOf = usdcBalances(chain.rpcUrl);
    const payer = createPayer(devPrivateKey(8));
    const url = `${service.url}/v1/research-brief`;
    const request = { question: QUESTION, requiredSources: 2, maxWords: 300 };
    const payment = await payer.signPayment(await fetch(url, jsonPost(request)));
    const before = await balanceOf(payer.address);

    rpc.goDarkAfterNextBroadcast();
    const lost = await fetch(url, jsonPost(request, payment));
    expect(lost.status).toBe(503);
    expect((await lost.json()).detail).toContain("retry the same request with the same payment");
    expect(await balanceOf(payer.address)).toBe(before - PRICE);

    const store = await openStore(service.config.database);
    try {
      const key = paymentKeyOf(payment);
      const waiting = await store.jobs.getByPayment(key);
      expect(waiting?.state).toBe("awaiting_payment");
      // The worker is alive and idle, yet never starts a job whose payment is not known to be settled.
      await new Promise((resolve) => setTimeout(resolve, 1500));
      expect((await store.jobs.get(waiting?.id as string))?.state).toBe("awaiting_payment");
      expect(standIns.searches).toHaveLength(0);

      rpc.heal();
      const retried = await fetch(url, jsonPost(request, payment));
      expect(retried.status).toBe(202);
      const accepted = await retried.json();
      expect(accepted.jobId).toBe(waiting?.id);
      expect(retried.headers.get("location")).toBe(accepted.statusUrl);
      expect(paymentReceipt(retried)?.success).toBe(true);

      const job = await pollUntilFinished(accepted.statusUrl);
      expect(job.status).toBe("succeeded");
      expect(standIns.modelRequests).toHaveLength(1);
      expect(await store.jobs.get(accepted.jobId)).toMatchObject({ attempts: 1, paymentKey: key });
      expect((await store.getPayment(key))?.state).toBe("settled");
      // And again: the same job, not another one.
      const again = await fetch(url, jsonPost(request, payment));
      expect((await again.json()).jobId).toBe(accepted.jobId);
    } finally {
      await store.close();
    }
    expect(await balanceOf(payer.address)).toBe(before - PRICE);
  });
});

describe("a research payment whose settlement is refused", () => {
  let standIns: StandIns;
  let service: TestService;
  let spend: () => Promise<void> = async () => {};

  // The payer spends the authorization's nonce elsewhere while the job is being recorded.
  const spendsFirst = defineOperation({
    ...researchBrief,
    start: async (env) => {
      const started = await (researchBrief.start as NonNullable<typeof researchBrief.start>)(env);
      return {
        ...started,
        handle: async (input, ctx) => {
          await spend();
          return started.handle(input, ctx);
        },
      };
    },
  });

  beforeAll(async () => {
    standIns = await startStandIns();
    service = await startTestService(researchEnv(standIns), { operations: [spendsFirst] });
  });
  afterAll(async () => {
    await service?.stop();
    await standIns?.stop();
  });

  it("drops the job and answers 402: no job id, nothing charged, nothing run", async () => {
    const rpcUrl = service.localChain?.rpcUrl as string;
    const balanceOf = usdcBalances(rpcUrl);
    const payer = createPayer(devPrivateKey(9));
    const url = `${service.url}/v1/research-brief`;
    const payment = await payer.signPayment(await fetch(url, jsonPost({ question: QUESTION })));
    const { nonce } = JSON.parse(Buffer.from(Object.values(payment)[0] as string, "base64").toString())
      .payload.authorization;
    spend = () => spendNonceElsewhere(rpcUrl, devPrivateKey(9), nonce);
    const payToBefore = await balanceOf(service.payTo);

    const response = await fetch(url, jsonPost({ question: QUESTION }, payment));
    expect(response.status).toBe(402);
    const problem = await response.json();
    expect(problem.jobId).toBeUndefined();
    expect(response.headers.get("location")).toBeNull();
    expect(response.headers.get("PAYMENT-RESPONSE")).toBeNull();
    expect(await balanceOf(service.payTo)).toBe(payToBefore);

    const store = await openStore(service.config.database);
    try {
      const key = paymentKeyOf(payment);
      expect((await store.getPayment(key))?.state).toBe("failed");
      expect(await store.jobs.getByPayment(key)).toBeUndefined();
    } finally {
      await store.close();
    }
    await new Promise((resolve) => setTimeout(resolve, 1000));
    expect(standIns.searches).toHaveLength(0);
  });
});
