import net from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { devPrivateKey } from "../../src/chain/dev-accounts.ts";
import { createPayer, paymentReceipt } from "../../src/client/paying-fetch.ts";
import { researchBrief } from "../../src/operations/research-brief/index.ts";
import { openStore } from "../../src/store/open-store.ts";
import { jsonPost, startTestService, type TestService, usdcBalances } from "../helpers/service.ts";
import { QUESTION, researchEnv, type StandIns, startStandIns } from "./research-brief-standins.ts";

/**
 * The research brief's failure matrix, each case read from the local chain's balances: the payer is
 * charged only for a delivered brief. A job's payment is held at 202 and settled when its brief is
 * ready; whatever stops the brief before that (a provider down before or after acceptance, a model
 * refusing the request, the deadline) leaves the payer's balance as it was and the ledger row released.
 */

const PRICE = 5_000_000n;

async function pollUntilFinished(statusUrl: string, timeoutMs = 60_000) {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    const body = await (await fetch(statusUrl)).json();
    if (body.status === "succeeded" || body.status === "failed") {
      // The ledger follows the job within one sweep of the held-payment settler.
      if (body.payment?.state !== "held") return body;
    }
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  throw new Error(`${statusUrl} did not finish`);
}

/** A port where nothing listens (a search provider that is down before the call). */
async function closedPort(): Promise<number> {
  const server = net.createServer();
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as net.AddressInfo;
  await new Promise((resolve) => server.close(resolve));
  return port;
}

describe("research-brief: charged only for a delivered brief", () => {
  let standIns: StandIns;
  let service: TestService;
  let balanceOf: ReturnType<typeof usdcBalances>;
  let clockOffset = 0;
  const payer = createPayer(devPrivateKey(7));
  const url = () => `${service.url}/v1/research-brief`;

  beforeAll(async () => {
    standIns = await startStandIns();
    // A short lease: the worker reports its liveness every second, so it is seen alive soon after the
    // clock is moved.
    service = await startTestService(
      { ...researchEnv(standIns, { leaseSeconds: "3" }), JOB_MAX_HELD_PER_PAYER: "1" },
      {
        operations: [researchBrief],
        clock: () => Date.now() + clockOffset,
      },
    );
    balanceOf = usdcBalances(service.localChain?.rpcUrl as string);
  });
  afterAll(async () => {
    await service?.stop();
    await standIns?.stop();
  });

  /** Pays for a brief, expects the 202 and no charge at acceptance; returns the finished job. */
  async function paidJob(question = QUESTION) {
    const before = await balanceOf(payer.address);
    const accepted = await payer.fetch(url(), jsonPost({ question, requiredSources: 2, maxWords: 200 }));
    expect(accepted.status).toBe(202);
    expect(paymentReceipt(accepted)).toBeUndefined();
    expect(await balanceOf(payer.address)).toBe(before);
    const { jobId, statusUrl } = await accepted.json();
    return { before, jobId, statusUrl };
  }

  /**
   * Moves the clock past an open breaker (30 s) and returns the first unpaid answer that is not a 503
   * (the worker's next liveness report must be seen on the moved clock first).
   */
  async function afterBreakerCools(): Promise<number> {
    clockOffset += 31_000;
    const deadline = Date.now() + 10_000;
    let status = 0;
    while (Date.now() < deadline) {
      status = (await fetch(url(), jsonPost({ question: QUESTION }))).status;
      if (status !== 503) break;
      await new Promise((resolve) => setTimeout(resolve, 200));
    }
    return status;
  }

  async function ledgerState(jobId: string) {
    const store = await openStore(service.config.database);
    try {
      const job = await store.jobs.get(jobId);
      return { job, payment: await store.getPayment(job?.paymentKey as string) };
    } finally {
      await store.close();
    }
  }

  it("search failing after acceptance: the job fails provider_failed, the payer's balance is unchanged, the ledger row released", async () => {
    standIns.failSearch = 100;
    try {
      const { before, jobId, statusUrl } = await paidJob();
      const job = await pollUntilFinished(statusUrl);
      expect(job.status).toBe("failed");
      expect(job.error.code).toBe("provider_failed");
      expect(job.payment).toMatchObject({ state: "released" });
      expect(job.payment.transaction).toBeUndefined();
      expect(await balanceOf(payer.address)).toBe(before);
      const { payment } = await ledgerState(jobId);
      expect(payment).toMatchObject({ state: "released", txHash: null });
      expect(payment?.error).toContain("provider_failed");
    } finally {
      standIns.failSearch = 0;
    }
  });

  it("a search provider that kept failing is a 503 before the next payment: nothing asked, nothing charged", async () => {
    // The failed job above tripped the breaker (three failed calls in a row).
    const refused = await fetch(url(), jsonPost({ question: QUESTION }));
    expect(refused.status).toBe(503);
    expect(refused.headers.get("retry-after")).toBe("30");
    expect(refused.headers.get("PAYMENT-REQUIRED")).toBeNull();
    expect((await refused.json()).detail).toMatch(
      /^the search provider is not available: searxng failed \d+ times in a row .*; no payment was taken$/,
    );
    const ready = await (await fetch(`${service.url}/readyz`)).json();
    expect(ready.checks["research-brief"]).toContain("searxng circuit open");
    // The breaker lets a job through again after 30 s.
    expect(await afterBreakerCools()).toBe(402);
  });

  it("model failing after acceptance: the job fails, nothing charged", async () => {
    standIns.failModel = 3;
    const { before, jobId, statusUrl } = await paidJob();
    const job = await pollUntilFinished(statusUrl);
    expect(job.status).toBe("failed");
    expect(job.error.code).toBe("provider_failed");
    expect(job.payment.state).toBe("released");
    expect(await balanceOf(payer.address)).toBe(before);
    expect((await ledgerState(jobId)).payment?.state).toBe("released");
  });

  it("a reasoning model refusing max_tokens: retried with max_completion_tokens, the brief delivered, charged once", async () => {
    // The model failing three times above opened its breaker: jobs were refused meanwhile.
    expect((await fetch(url(), jsonPost({ question: QUESTION }))).status).toBe(503);
    expect(await afterBreakerCools()).toBe(402);
    standIns.refuseMaxTokens = true;
    try {
      const requestsBefore = standIns.modelRequests.length;
      const { before, statusUrl } = await paidJob();
      const job = await pollUntilFinished(statusUrl);
      expect(job.status).toBe("succeeded");
      expect(job.payment).toMatchObject({ state: "settled", transaction: expect.stringMatching(/^0x/) });
      const sent = standIns.modelRequests.slice(requestsBefore) as unknown as Record<string, unknown>[];
      expect(sent.map((body) => "max_tokens" in body)).toEqual([true, false]);
      expect(sent[1]).toHaveProperty("max_completion_tokens");
      expect(await balanceOf(payer.address)).toBe(before - PRICE);
    } finally {
      standIns.refuseMaxTokens = false;
    }
  });

  it("a job still running at its deadline is failed deadline_passed and its payment released, nothing charged", async () => {
    // Every attempt hangs: the moved clock also ends the worker's lease, and a retaken attempt must not finish.
    standIns.hangModel = 3;
    const modelCalled = standIns.nextModelRequest();
    const { before, jobId, statusUrl } = await paidJob();
    await modelCalled;
    const running = await (await fetch(statusUrl)).json();
    expect(running).toMatchObject({ status: "running", payment: { state: "held" } });
    // The authorization lasts X402_JOB_MAX_TIMEOUT_SECONDS (30 min): the deadline leaves time to settle.
    expect(Date.parse(running.expiresAt) - Date.now() - clockOffset).toBeGreaterThan(25 * 60_000);
    expect(Date.parse(running.expiresAt) - Date.now() - clockOffset).toBeLessThan(30 * 60_000);
    // One job per payer on a held payment here (JOB_MAX_HELD_PER_PAYER=1): a second is a 429, not charged.
    const second = await payer.fetch(url(), jsonPost({ question: QUESTION }));
    expect(second.status).toBe(429);
    expect(second.headers.get("retry-after")).toBe("30");
    expect((await second.json()).detail).toMatch(
      /^1 jobs of this payer are accepted or being accepted .*nothing was charged$/,
    );
    clockOffset += 30 * 60_000;
    const job = await pollUntilFinished(statusUrl);
    expect(job.status).toBe("failed");
    expect(job.error.code).toBe("deadline_passed");
    expect(job.payment.state).toBe("released");
    expect(await balanceOf(payer.address)).toBe(before);
    expect((await ledgerState(jobId)).payment?.state).toBe("released");
  });
});

describe("research-brief with its search provider down before the call", () => {
  let standIns: StandIns;
  let service: TestService;

  beforeAll(async () => {
    standIns = await startStandIns();
    service = await startTestService(
      {
        ...researchEnv(standIns),
        RESEARCH_SEARCH_URL: `http://127.0.0.1:${await closedPort()}`,
      },
      { operations: [researchBrief] },
    );
  });
  afterAll(async () => {
    await service?.stop();
    await standIns?.stop();
  });

  it("answers 503 naming the unreachable provider, three times in a row, before any payment: nothing charged", async () => {
    const payer = createPayer(devPrivateKey(7));
    const balanceOf = usdcBalances(service.localChain?.rpcUrl as string);
    const before = await balanceOf(payer.address);
    for (let i = 0; i < 3; i++) {
      // What an x402 client does: it pays only after a 402, and a 503 is not one.
      const response = await payer.fetch(
        `${service.url}/v1/research-brief`,
        jsonPost({ question: QUESTION }),
      );
      expect(response.status).toBe(503);
      expect(response.headers.get("retry-after")).toBe("30");
      expect((await response.json()).detail).toMatch(
        /^the search provider is not available: searxng is unreachable at 127\.0\.0\.1:\d+ \(connect ECONNREFUSED .*\); no payment was taken$/,
      );
    }
    expect(await balanceOf(payer.address)).toBe(before);
    const ready = await fetch(`${service.url}/readyz`);
    expect((await ready.json()).checks["research-brief"]).toMatch(/searxng unreachable/);
    expect(ready.status).toBe(200); // the other operations are still served
    const catalog = await (await fetch(`${service.url}/catalog.json`)).json();
    expect(catalog.operations.find((entry: { id: string }) => entry.id === "research-brief")).toMatchObject({
      available: false,
      unavailable: expect.stringMatching(/^not taking jobs while down: searxng unreachable/),
    });
    expect(standIns.searches).toHaveLength(0);
  });
});

describe("research-brief on a service that cannot read the chain (facilitator mode without RPC_URL)", () => {
  let service: TestService;

  beforeAll(async () => {
    service = await startTestService(
      {
        PAYMENT_MODE: "facilitator",
        X402_FACILITATOR_URL: `http://127.0.0.1:${await closedPort()}`,
        X402_PAY_TO: "0x70997970C51812dc3A010C7d01b50e0d17dc79C8",
      },
      { operations: [researchBrief] },
    );
  });
  afterAll(async () => {
    await service?.stop();
  });

  it("refuses jobs with a 503 before any payment: a held payment is never decided without the token's record", async () => {
    const response = await fetch(`${service.url}/v1/research-brief`, jsonPost({ question: QUESTION }));
    expect(response.status).toBe(503);
    expect(response.headers.get("PAYMENT-REQUIRED")).toBeNull();
    expect((await response.json()).detail).toBe(
      "this service has no chain access (set RPC_URL) to settle a job's held payment when its result is ready; no payment was taken",
    );
    const catalog = await (await fetch(`${service.url}/catalog.json`)).json();
    expect(catalog.operations.find((entry: { id: string }) => entry.id === "research-brief")).toMatchObject({
      available: false,
    });
  });
});
