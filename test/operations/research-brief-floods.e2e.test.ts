import { generatePrivateKey } from "viem/accounts";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { devPrivateKey } from "../../src/chain/dev-accounts.ts";
import { fundLocalAccounts } from "../../src/chain/local-chain.ts";
import { createPayer, type Payer } from "../../src/client/paying-fetch.ts";
import { researchBrief } from "../../src/operations/research-brief/index.ts";
import { openStore } from "../../src/store/open-store.ts";
import { paymentKeyOf } from "../helpers/payment-faults.ts";
import { jsonPost, startTestService, type TestService, usdcBalances } from "../helpers/service.ts";
import { QUESTION, researchEnv, type StandIns, startStandIns } from "./research-brief-standins.ts";

/**
 * Issue 33: an attacker with a few dollars fires briefs at once to farm unpaid work. Held payments are
 * admitted one payer at a time against the cap (JOB_MAX_HELD_PER_PAYER, 3) and the payer's balance, so
 * floods get at most what the payer can pay for, and a paying customer after them is served and charged
 * once. Money is read from the chain and the ledger, never from what the service says.
 */

const PRICE = 5_000_000n;
const CAP = 3;

async function pollUntilFinished(statusUrl: string) {
  for (let i = 0; i < 1200; i++) {
    const body = await (await fetch(statusUrl)).json();
    if (body.status === "succeeded" || body.status === "failed") return body;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  throw new Error(`${statusUrl} did not finish`);
}

describe("floods of held research payments", () => {
  let standIns: StandIns;
  let service: TestService;
  let rpcUrl: string;
  let balanceOf: ReturnType<typeof usdcBalances>;
  let url: string;
  const request = { question: QUESTION, requiredSources: 2, maxWords: 300 };

  beforeAll(async () => {
    standIns = await startStandIns();
    service = await startTestService(
      { ...researchEnv(standIns), JOB_MAX_HELD_PER_PAYER: String(CAP) },
      { operations: [researchBrief] },
    );
    rpcUrl = service.localChain?.rpcUrl as string;
    balanceOf = usdcBalances(rpcUrl);
    url = `${service.url}/v1/research-brief`;
  });
  afterAll(async () => {
    await service?.stop();
    await standIns?.stop();
  });

  /** A fresh wallet holding `usdc` (atomic), unknown to every other test. */
  async function wallet(usdc: bigint): Promise<Payer> {
    const payer = createPayer(generatePrivateKey());
    if (usdc > 0n) await fundLocalAccounts(rpcUrl, [{ address: payer.address, usdc }]);
    return payer;
  }

  /** `count` payments signed by `payer` (each its own nonce), sent at once; the answers with their payments. */
  async function flood(payer: Payer, count: number) {
    const terms = await fetch(url, jsonPost(request));
    const payments: Record<string, string>[] = [];
    for (let i = 0; i < count; i++) payments.push(await payer.signPayment(terms.clone()));
    const responses = await Promise.all(payments.map((payment) => fetch(url, jsonPost(request, payment))));
    return Promise.all(
      responses.map(async (response, i) => ({
        status: response.status,
        contentType: response.headers.get("content-type"),
        body: await response.json(),
        payment: payments[i] as Record<string, string>,
      })),
    );
  }

  /** Waits for every accepted job; returns how many were delivered. */
  async function finish(answers: Awaited<ReturnType<typeof flood>>) {
    const jobs = await Promise.all(
      answers.filter((a) => a.status === 202).map((a) => pollUntilFinished(a.body.statusUrl)),
    );
    return jobs.filter((job) => job.status === "succeeded").length;
  }

  it("a payer funded for one brief firing 12 at once gets exactly one accepted, delivered and charged once", async () => {
    const payer = await wallet(PRICE);
    const answers = await flood(payer, 12);
    expect(answers.filter((a) => a.status === 202)).toHaveLength(1);
    const refused = answers.filter((a) => a.status !== 202);
    expect(refused.every((a) => a.status === 402 || a.status === 429)).toBe(true);
    const shortfall = refused.find((a) => a.body.reason === "insufficient_funds");
    expect(shortfall?.contentType).toContain("application/problem+json");
    expect(shortfall?.body.detail).toContain("short by 5.00 USDC");
    expect(await finish(answers)).toBe(1);
    expect(await balanceOf(payer.address)).toBe(0n);
  });

  it("10 concurrent briefs of a well-funded payer get at most the cap; each delivered one is charged once", async () => {
    const payer = await wallet(100n * PRICE);
    const answers = await flood(payer, 10);
    const accepted = answers.filter((a) => a.status === 202).length;
    expect(accepted).toBeGreaterThanOrEqual(1);
    expect(accepted).toBeLessThanOrEqual(CAP);
    expect(answers.filter((a) => a.status === 429).length).toBeGreaterThanOrEqual(10 - CAP);
    const delivered = await finish(answers);
    expect(delivered).toBe(accepted);
    expect(await balanceOf(payer.address)).toBe(100n * PRICE - BigInt(delivered) * PRICE);
  });

  it("30 briefs from each of two wallets sharing 5 USDC, then a paying customer's brief: delivered, charged once", async () => {
    const [first, second] = [await wallet(PRICE), await wallet(0n)];
    const answers = (await Promise.all([flood(first, 30), flood(second, 30)])).flat();
    expect(answers.filter((a) => a.status === 202).length).toBeLessThanOrEqual(1);
    expect(answers.filter((a) => a.status === 500)).toEqual([]);

    const customer = createPayer(devPrivateKey(4));
    const before = await balanceOf(customer.address);
    const [answer] = await flood(customer, 1);
    expect(answer?.status).toBe(202);
    const job = await pollUntilFinished(answer?.body.statusUrl);
    expect(job.status).toBe("succeeded");
    expect(job.result.sources.length).toBeGreaterThanOrEqual(2);
    expect(await balanceOf(customer.address)).toBe(before - PRICE);
    const store = await openStore(service.config.database);
    try {
      expect((await store.getPayment(paymentKeyOf(answer?.payment as Record<string, string>)))?.state).toBe(
        "settled",
      );
    } finally {
      await store.close();
    }
    // The flood's one job, if any, was paid by the wallet that held the money; nothing else moved.
    await finish(answers);
    const spent = PRICE - (await balanceOf(first.address)) - (await balanceOf(second.address));
    expect(spent === 0n || spent === PRICE).toBe(true);
  });
});
