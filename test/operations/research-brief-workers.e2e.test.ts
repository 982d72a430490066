import { type ChildProcess, execFile, spawn } from "node:child_process";
import os from "node:os";
import path from "node:path";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { devPrivateKey } from "../../src/chain/dev-accounts.ts";
import { createPayer } from "../../src/client/paying-fetch.ts";
import { researchBrief } from "../../src/operations/research-brief/index.ts";
import { openStore } from "../../src/store/open-store.ts";
import { until } from "../helpers/processes.ts";
import {
  databaseUrlOf,
  jsonPost,
  startTestService,
  type TestService,
  usdcBalances,
} from "../helpers/service.ts";
import { QUESTION, researchEnv, type StandIns, startStandIns } from "./research-brief-standins.ts";

const PRICE = 5_000_000n;
const BIN = path.resolve("bin/utility402.js");
/** Short, so a killed worker's job is retaken soon; long enough that a busy machine's timers keep a live worker alive. */
const LEASE_SECONDS = "5";

describe("research workers as separate processes", () => {
  let standIns: StandIns;
  let service: TestService;
  let workerEnv: Record<string, string>;
  const workers: ChildProcess[] = [];
  const output = new Map<ChildProcess, string>();
  const payer = createPayer(devPrivateKey(7));
  let balanceOf: ReturnType<typeof usdcBalances>;

  const research = () => researchEnv(standIns, { leaseSeconds: LEASE_SECONDS });

  function startWorker(): ChildProcess {
    const child = spawn(process.execPath, [BIN, "worker"], {
      env: workerEnv,
      stdio: ["ignore", "pipe", "pipe"],
    });
    output.set(child, "");
    child.stdout?.on("data", (chunk) => output.set(child, output.get(child) + chunk));
    child.stderr?.on("data", (chunk) => output.set(child, output.get(child) + chunk));
    workers.push(child);
    return child;
  }
  const exited = (child: ChildProcess) =>
    child.exitCode !== null || child.signalCode !== null
      ? Promise.resolve()
      : new Promise<void>((resolve) => child.once("exit", () => resolve()));
  const post = (body: unknown, headers: Record<string, string> = {}) =>
    fetch(`${service.url}/v1/research-brief`, jsonPost(body, headers));
  const job = async (id: string) => (await fetch(`${service.url}/v1/jobs/${id}`)).json();

  beforeAll(async () => {
    standIns = await startStandIns();
    service = await startTestService(
      { ...research(), IN_PROCESS_WORKER: "false" },
      { operations: [researchBrief] },
    );
    balanceOf = usdcBalances(service.localChain?.rpcUrl as string);
    // A clean environment: the worker reads the same settings and the same store as the API.
    workerEnv = {
      PATH: process.env.PATH ?? "",
      HOME: process.env.HOME ?? os.tmpdir(),
      DATA_DIR: service.dataDir,
      DATABASE_URL: databaseUrlOf(service.config),
      LOCAL_CHAIN_STATE: "none",
      LOG_LEVEL: "info",
      ...research(),
    };
  });
  afterAll(async () => {
    for (const child of workers)
      if (child.exitCode === null && child.signalCode === null) child.kill("SIGKILL");
    await Promise.all(workers.map(exited));
    await service?.stop();
    await standIns?.stop();
  });

  it("no live worker: 503 before and after a payment is offered, nothing charged; a worker killed mid-job: the job completes on another worker, once", async () => {
    const before = await balanceOf(payer.address);
    const refused = await post({ question: QUESTION });
    expect(refused.status).toBe(503);
    expect((await refused.json()).detail).toBe("no research worker is running; no payment was taken");
    expect(refused.headers.get("retry-after")).toBe("30");

    const first = startWorker();
    const challenge = await until("the API to see the worker", async () => {
      const response = await post({ question: `${QUESTION} (second)` });
      return response.status === 402 ? response : undefined;
    });
    // Signed now, sent once no worker is alive any more.
    const laterPayment = await payer.signPayment(challenge);

    standIns.hangModel = 1;
    const modelCalled = standIns.nextModelRequest();
    const accepted = await payer.fetch(`${service.url}/v1/research-brief`, jsonPost({ question: QUESTION }));
    expect(accepted.status).toBe(202);
    const { jobId } = await accepted.json();
    // Accepted, not charged: the payment is held until the brief is ready.
    expect(await balanceOf(payer.address)).toBe(before);
    await modelCalled;
    expect(await job(jobId)).toMatchObject({
      status: "running",
      progress: { stage: "writing", fraction: 0.7 },
    });

    // The worker dies mid-job, the hard way.
    process.kill(first.pid as number, "SIGKILL");
    await exited(first);
    expect(first.signalCode).toBe("SIGKILL");

    // Nobody is alive now: a paid request is refused with 503 and its payment released, not taken.
    await until("the API to notice the dead worker", async () =>
      (await post({ question: QUESTION })).status === 503 ? true : undefined,
    );
    const whileDead = await post({ question: `${QUESTION} (second)` }, laterPayment);
    expect(whileDead.status).toBe(503);
    expect(whileDead.headers.get("PAYMENT-RESPONSE")).toBeNull();
    expect(await balanceOf(payer.address)).toBe(before);
    expect(await job(jobId)).toMatchObject({ status: "running", payment: { state: "held" } });

    const second = startWorker();
    const finished = await until("the job to finish", async () => {
      const current = await job(jobId);
      return ["succeeded", "failed"].includes(current.status) ? current : undefined;
    });
    expect(finished.status).toBe("succeeded");
    expect(finished.payment).toMatchObject({
      state: "settled",
      transaction: expect.stringMatching(/^0x[0-9a-f]{64}$/),
    });
    expect(finished.expiresAt).toBeUndefined();
    expect(finished.result.sources.length).toBeGreaterThanOrEqual(3);
    expect(standIns.modelRequests).toHaveLength(2);

    // Once: two attempts recorded, one result, and nothing runs it again after another lease.
    await new Promise((resolve) => setTimeout(resolve, Number(LEASE_SECONDS) * 1000 + 500));
    expect(await job(jobId)).toEqual(finished);
    expect(standIns.modelRequests).toHaveLength(2);
    const store = await openStore(service.config.database);
    try {
      const stored = await store.jobs.get(jobId);
      expect(stored).toMatchObject({ state: "succeeded", attempts: 2, leaseOwner: null });
      const payment = await store.getPayment(stored?.paymentKey as string);
      expect(payment?.state).toBe("settled");
    } finally {
      await store.close();
    }
    expect(await balanceOf(payer.address)).toBe(before - PRICE);
    expect(output.get(second)).toContain('"msg":"job done"');
  }, 180_000);

  it("a model that stays down: retried with backoff, then the job fails with a clear error, and its held payment is released: nothing charged", async () => {
    standIns.failModel = 3;
    const before = await balanceOf(payer.address);
    const requestsBefore = standIns.modelRequests.length;
    const accepted = await payer.fetch(`${service.url}/v1/research-brief`, jsonPost({ question: QUESTION }));
    expect(accepted.status).toBe(202);
    const { jobId } = await accepted.json();
    const failed = await until("the job to fail", async () => {
      const current = await job(jobId);
      return ["succeeded", "failed"].includes(current.status) ? current : undefined;
    });
    expect(failed.status).toBe("failed");
    expect(failed.result).toBeUndefined();
    expect(failed.error.code).toBe("provider_failed");
    expect(failed.error.message).toMatch(
      /^the model \(standin-model-1\) failed after retries: model standin-model-1: answered 500/,
    );
    expect(standIns.modelRequests.length - requestsBefore).toBe(3);

    await until("the held payment to be released", async () =>
      (await job(jobId)).payment.state === "released" ? true : undefined,
    );
    expect(await balanceOf(payer.address)).toBe(before);

    const { stdout } = await promisify(execFile)(process.execPath, [BIN, "ledger"], { env: workerEnv });
    expect(stdout).not.toContain(jobId);
    expect(stdout).toMatch(/research-brief\s+released\s+\d+/);
  }, 120_000);

  it("a worker stopped with SIGTERM leaves cleanly; then no worker is alive and requests are refused", async () => {
    for (const child of workers.filter((worker) => worker.exitCode === null && worker.signalCode === null)) {
      child.kill("SIGTERM");
      await exited(child);
      expect(child.exitCode).toBe(0);
    }
    // A clean stop removes the worker's row at once: no lease to wait for.
    expect((await post({ question: QUESTION })).status).toBe(503);
  });
});
