import { generatePrivateKey } from "viem/accounts";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { devPrivateKey } from "../../src/chain/dev-accounts.ts";
import { fundLocalAccounts } from "../../src/chain/local-chain.ts";
import { createPayer, type Payer } from "../../src/client/paying-fetch.ts";
import { researchBrief } from "../../src/operations/research-brief/index.ts";
import { openStore } from "../../src/store/open-store.ts";
import { fireAtOnce, pollUntilFinished } from "../helpers/floods.ts";
import { paymentKeyOf } from "../helpers/payment-faults.ts";
import { until } from "../helpers/processes.ts";
import { startTestService, type TestService, usdcBalances, usdcSender } from "../helpers/service.ts";
import { type SourceStandIns, startSourceStandIns } from "./research-sources-standins.ts";

/**
 * Issue 33: an attacker with a few dollars fires briefs at once to farm unpaid work. Held payments are
 * admitted one payer at a time against the cap (JOB_MAX_HELD_PER_PAYER, 3) and the payer's balance, so
 * floods get at most what the payer can pay for, and a paying customer after them is served and charged
 * once. Money is read from the chain and the ledger, never from what the service says.
 *
 * The briefs are keyless (Wikipedia and Crossref stand-ins replaying recorded answers): holding the
 * stand-ins' answers keeps the workers busy on running jobs, the way a stalled upstream does.
 */

const PRICE = 5_000_000n;
const CAP = 3;
const WORKERS = 2;
const QUESTION = "What is the Python programming language used for in ecological research?";

describe("floods of held research payments", () => {
  let standIns: SourceStandIns;
  let service: TestService;
  let rpcUrl: string;
  let balanceOf: ReturnType<typeof usdcBalances>;
  let url: string;
  const request = { question: QUESTION, requiredSources: 2, maxWords: 300 };

  beforeAll(async () => {
    standIns = await startSourceStandIns();
    service = await startTestService(
      {
        RESEARCH_WIKIPEDIA_URL: standIns.wikipediaUrl,
        RESEARCH_CROSSREF_URL: standIns.crossrefUrl,
        JOB_MAX_HELD_PER_PAYER: String(CAP),
        WORKER_CONCURRENCY: String(WORKERS),
      },
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

  /** A fresh wallet holding `usdc` (atomic) and gas, unknown to every other test; `send` moves USDC on chain. */
  async function wallet(usdc: bigint) {
    const key = generatePrivateKey();
    const payer = createPayer(key);
    await fundLocalAccounts(rpcUrl, [{ address: payer.address, usdc, ether: 10n ** 18n }]);
    const send = usdcSender(rpcUrl, key);
    return Object.assign(payer, { send });
  }

  const flood = (payer: Payer, count: number) => fireAtOnce(url, request, payer, count);
  type Answers = Awaited<ReturnType<typeof flood>>;

  /** Waits for every accepted job; returns how many were delivered. */
  async function finish(answers: Answers) {
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

  it("two wallets passing the same 5 USDC on chain between floods of 30: one job runs, charged once; then a paying customer's brief is delivered and charged once", async () => {
    let ranBriefs = { requests: 0, briefs: 0 };
    // Every worker is kept busy on a running brief whose upstream holds its answers, so the floods' jobs
    // stay queued while the money moves, as they would behind a busy queue.
    const release = standIns.hold();
    try {
      const busy = await wallet(BigInt(WORKERS) * PRICE);
      const blockers = (await flood(busy, WORKERS)).filter((a) => a.status === 202);
      expect(blockers).toHaveLength(WORKERS);
      await until("every worker to run a held-up brief", async () => {
        const jobs = await Promise.all(blockers.map(async (a) => (await fetch(a.body.statusUrl)).json()));
        return jobs.every((job) => job.status === "running") && standIns.waiting > 0 ? true : undefined;
      });

      const [first, second] = [await wallet(PRICE), await wallet(0n)];
      const fromFirst = await flood(first, 30);
      await first.send(second.address, PRICE);
      const fromSecond = await flood(second, 30);
      await second.send(first.address, PRICE);
      const answers = [...fromFirst, ...fromSecond];
      expect(answers.filter((a) => a.status === 500)).toEqual([]);
      expect(answers.every((a) => [202, 402, 429].includes(a.status))).toBe(true);
      // Each wallet held the 5 USDC when it fired, so each gets one job accepted, never more: the service
      // cannot tell that the two wallets share their money, only the check before a job runs can.
      expect(fromFirst.filter((a) => a.status === 202)).toHaveLength(1);
      expect(fromSecond.filter((a) => a.status === 202)).toHaveLength(1);
      for (const a of answers.filter((a) => a.status === 202)) {
        expect((await (await fetch(a.body.statusUrl)).json()).status).toBe("queued");
      }

      const upstreamBefore = standIns.requests.length;
      release();
      expect(await finish(blockers)).toBe(WORKERS);
      // One of the floods' jobs ran: the one whose payer holds the money when it is claimed (the first
      // wallet, which got it back). The other, whose payer no longer covers it, is failed unrun.
      const jobs = await Promise.all(
        answers.filter((a) => a.status === 202).map((a) => pollUntilFinished(a.body.statusUrl)),
      );
      const delivered = jobs.filter((job) => job.status === "succeeded");
      expect(delivered).toHaveLength(1);
      for (const job of jobs.filter((job) => job.status !== "succeeded")) {
        expect(job.error?.code).toBe("payment_unpayable");
        expect(job.payment.state).toBe("released");
      }
      // On chain: what left the two wallets is exactly what was delivered, once.
      const spent = PRICE - (await balanceOf(first.address)) - (await balanceOf(second.address));
      expect(spent).toBe(BigInt(delivered.length) * PRICE);
      expect(await balanceOf(second.address)).toBe(0n);
      // In the ledger: the delivered job's payment settled, every other payment of the floods unused.
      const store = await openStore(service.config.database);
      try {
        let settled = 0;
        for (const a of answers) {
          const state = (await store.getPayment(paymentKeyOf(a.payment)))?.state;
          if (state === "settled") settled++;
          else expect(state === undefined || state === "released").toBe(true);
        }
        expect(settled).toBe(delivered.length);
      } finally {
        await store.close();
      }
      ranBriefs = { requests: standIns.requests.length - upstreamBefore, briefs: WORKERS + delivered.length };
    } finally {
      release();
    }

    const customer = createPayer(devPrivateKey(4));
    const upstreamBefore = standIns.requests.length;
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
    // The jobs failed as unpayable never reached the upstream: the requests made while the held-up briefs
    // and the floods' jobs ran are those of the briefs that ran, each asking what the customer's asked.
    const perBrief = standIns.requests.length - upstreamBefore;
    expect(perBrief).toBeGreaterThan(0);
    expect(ranBriefs.requests).toBe(ranBriefs.briefs * perBrief);
  });
});
