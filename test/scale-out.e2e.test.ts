import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import pino from "pino";
import { createPublicClient, http, parseAbiItem } from "viem";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { devAccounts, devPrivateKey } from "../src/chain/dev-accounts.ts";
import { type LocalChain, startLocalChain } from "../src/chain/local-chain.ts";
import { createPayer, paymentReceipt } from "../src/client/paying-fetch.ts";
import { BASE_USDC_ADDRESS } from "../src/config.ts";
import { PostgresStore } from "../src/store/postgres/postgres-store.ts";
import { createTestDatabase, testDatabaseUrl } from "./helpers/postgres.ts";
import { type Spawned, spawnUtility402, until, waitFor } from "./helpers/processes.ts";
import { freePort, jsonPost, usdcBalances } from "./helpers/service.ts";
import { QUESTION, researchEnv, type StandIns, startStandIns } from "./operations/research-brief-standins.ts";

const CSV_CLEANUP_PRICE = 2_000_000n;

const databaseUrl = testDatabaseUrl();

const RESEARCH_PRICE = 5_000_000n;
const RESEARCH_JOBS = 50;

/**
 * Several `utility402 serve` processes and several `utility402 worker` processes on one PostgreSQL
 * database and one chain, as an operator runs them.
 */
describe.runIf(databaseUrl)("scale-out: API instances and workers sharing one PostgreSQL database", () => {
  const payTo = devAccounts().payTo.address;
  const processes: Spawned[] = [];
  const dirs: string[] = [];
  let chain: LocalChain;
  let instances: string[] = [];
  let database: Awaited<ReturnType<typeof createTestDatabase>>;
  let standIns: StandIns;
  const workers: Spawned[] = [];

  // Ten jobs per payer run at once here: more than the default cap of jobs on held payments per payer.
  const research = () => ({ ...researchEnv(standIns, { leaseSeconds: "5" }), JOB_MAX_HELD_PER_PAYER: "20" });
  const startWorker = () => {
    const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), "utility402-worker-"));
    dirs.push(dataDir);
    const worker = spawnUtility402(["worker"], {
      DATA_DIR: dataDir,
      DATABASE_URL: database.url,
      DATABASE_POOL_SIZE: "4",
      WORKER_CONCURRENCY: "2",
      LOG_LEVEL: "warn",
      ...research(),
    });
    processes.push(worker);
    workers.push(worker);
    return worker;
  };

  beforeAll(async () => {
    chain = await startLocalChain({ port: await freePort(), log: pino({ level: "silent" }) });
    database = await createTestDatabase("scale_out");
    standIns = await startStandIns();
    // One settlement key per instance (#0 and #9): nonces stay per key.
    instances = await Promise.all(
      [devPrivateKey(0), devPrivateKey(9)].map(async (settlerKey) => {
        const port = await freePort();
        const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), "utility402-scale-"));
        dirs.push(dataDir);
        const instance = spawnUtility402(["serve"], {
          PORT: String(port),
          DATA_DIR: dataDir,
          PAYMENT_MODE: "self",
          X402_SETTLER_PRIVATE_KEY: settlerKey,
          RPC_URL: chain.rpcUrl,
          X402_PAY_TO: payTo,
          DATABASE_URL: database.url,
          DATABASE_POOL_SIZE: "5",
          LOG_LEVEL: "warn",
          IN_PROCESS_WORKER: "false",
          ...research(),
        });
        processes.push(instance);
        const base = `http://127.0.0.1:${port}`;
        await waitFor(`${base}/readyz`, instance.child, instance.output, 60_000);
        return base;
      }),
    );
  }, 120_000);

  afterAll(async () => {
    await Promise.all(processes.map((instance) => instance.stop()));
    await chain?.stop();
    await standIns?.stop();
    for (const dir of dirs) fs.rmSync(dir, { recursive: true, force: true });
    await database?.dispose();
  });

  it("both instances report the shared PostgreSQL store as ready", async () => {
    for (const base of instances) {
      const ready = await (await fetch(`${base}/readyz`)).json();
      expect(ready.checks.store).toBe("ok (postgres)");
    }
  });

  it("runs a payment sent to both instances at once exactly once and charges it once", async () => {
    const [first, second] = instances as [string, string];
    const payer = createPayer(devPrivateKey(2));
    const balanceOf = usdcBalances(chain.rpcUrl);
    const before = await balanceOf(payer.address);
    const request = { rows: [{ id: "1", name: " Ada " }] };
    const payment = await payer.signPayment(await fetch(`${first}/v1/csv-cleanup`, jsonPost(request)));

    const responses = await Promise.all(
      [first, second].map((base) => fetch(`${base}/v1/csv-cleanup`, jsonPost(request, payment))),
    );
    expect(responses.map((response) => response.status)).toEqual([200, 200]);
    const bodies = await Promise.all(responses.map((response) => response.text()));
    expect(bodies[0]).toBe(bodies[1]);
    // One instance ran the operation; the other answered with the kept outcome.
    expect(responses.filter((response) => response.headers.get("x-payment-replayed")).length).toBe(1);
    const receipts = responses.map((response) => paymentReceipt(response)?.transaction);
    expect(receipts[0]).toMatch(/^0x[0-9a-f]{64}$/);
    expect(receipts[1]).toBe(receipts[0]);
    expect(await balanceOf(payer.address)).toBe(before - CSV_CLEANUP_PRICE);
  });

  it("runs 50 paid research jobs on two workers, each exactly once, also when a worker is killed mid-job", async () => {
    const [first, second] = [startWorker(), startWorker()];
    const store = await PostgresStore.open({ connectionString: database.url, poolSize: 2 });
    try {
      // Both workers alive, seen through the shared store by both API instances.
      await until("both workers to be seen", async () =>
        (await store.jobs.liveWorkers(Date.now() - 10_000)).length === 2 ? true : undefined,
      );
      const payers = [2, 3, 4, 5, 6].map((n) => createPayer(devPrivateKey(n)));
      const balanceOf = usdcBalances(chain.rpcUrl);
      const before = await Promise.all(payers.map((payer) => balanceOf(payer.address)));
      const submissions = Array.from({ length: RESEARCH_JOBS }, (_, i) => ({
        payer: payers[i % payers.length] as (typeof payers)[number],
        base: instances[i % 2] as string,
        question: `${QUESTION} (job ${i})`,
      }));
      standIns.hangModel = 1;
      const hungModelCall = standIns.nextModelRequest();
      const accepted = await Promise.all(
        submissions.map(({ payer, base, question }) =>
          payer.fetch(`${base}/v1/research-brief`, jsonPost({ question })),
        ),
      );
      expect(accepted.map((response) => response.status)).toEqual(submissions.map(() => 202));
      const jobIds = await Promise.all(
        accepted.map(async (response) => (await response.json()).jobId as string),
      );
      expect(new Set(jobIds).size).toBe(RESEARCH_JOBS);

      // The first model request never gets an answer: its job stays running on its worker. Kill that
      // worker the hard way, mid-job; then take stock of every job it held when it died.
      await hungModelCall;
      const hungJob = jobIds[Number(/\(job (\d+)\)/.exec(JSON.stringify(standIns.modelRequests[0]))?.[1])];
      expect(hungJob).toBeDefined();
      const victim = await until("the hung job's worker", async () => {
        const { rows } = await store.pool.query<{ lease_owner: string | null }>(
          "SELECT lease_owner FROM jobs WHERE id = $1 AND state = 'running'",
          [hungJob],
        );
        const pid = Number(rows[0]?.lease_owner?.split(":").at(-2));
        return [first, second].find((worker) => worker.child.pid === pid);
      });
      victim.child.kill("SIGKILL");
      await victim.stop();
      const held = await store.pool.query<{ id: string }>(
        "SELECT id FROM jobs WHERE state = 'running' AND lease_owner LIKE $1",
        [`%:${victim.child.pid}:%`],
      );
      expect(held.rows.map((row) => row.id)).toContain(hungJob);

      // Any instance answers any job's poll; every job ends succeeded.
      const finished = await until(
        "every job to finish",
        async () => {
          const states = await Promise.all(
            jobIds.map(
              async (id, i) => (await (await fetch(`${instances[(i + 1) % 2]}/v1/jobs/${id}`)).json()).status,
            ),
          );
          return states.every((status) => status === "succeeded" || status === "failed") ? states : undefined;
        },
        180_000,
      );
      expect(finished).toEqual(jobIds.map(() => "succeeded"));
      const { rows } = await store.pool.query<{ id: string; attempts: number; state: string }>(
        "SELECT id, attempts, state FROM jobs WHERE id = ANY($1::text[])",
        [jobIds],
      );
      expect(rows).toHaveLength(RESEARCH_JOBS);
      // The killed worker's jobs were taken again (a second attempt) and completed by the other one.
      const attempts = new Map(rows.map((row) => [row.id, row.attempts]));
      for (const { id } of held.rows) expect(attempts.get(id)).toBe(2);
      for (const [id, count] of attempts) if (!held.rows.some((row) => row.id === id)) expect(count).toBe(1);
      // Charged once per job.
      const after = await Promise.all(payers.map((payer) => balanceOf(payer.address)));
      const perPayer = (BigInt(RESEARCH_JOBS) / BigInt(payers.length)) * RESEARCH_PRICE;
      expect(after).toEqual(before.map((balance) => balance - perPayer));
    } finally {
      await store.close();
    }
  }, 300_000);

  it("keeps one ledger across instances: settled rows and totals equal the on-chain transfers", async () => {
    const payers = [3, 4, 5, 6].map((n) => createPayer(devPrivateKey(n)));
    const calls = payers.flatMap((payer, p) =>
      [0, 1, 2].map((i) => ({ payer, base: instances[(p + i) % 2] as string, rows: [{ p, i }] })),
    );
    const responses = await Promise.all(
      calls.map(({ payer, base, rows }) => payer.fetch(`${base}/v1/csv-cleanup`, jsonPost({ rows }))),
    );
    expect(responses.map((response) => response.status)).toEqual(calls.map(() => 200));

    const store = await PostgresStore.open({ connectionString: database.url, poolSize: 1 });
    try {
      const ledger = await store.revenueByOperationAndDay();
      const settledCount = ledger.reduce((sum, row) => sum + row.payments, 0);
      const settledAmount = ledger.reduce((sum, row) => sum + BigInt(row.atomicAmount), 0n);
      const client = createPublicClient({ transport: http(chain.rpcUrl) });
      const transfers = await client.getLogs({
        address: BASE_USDC_ADDRESS,
        event: parseAbiItem("event Transfer(address indexed from, address indexed to, uint256 value)"),
        args: { to: payTo },
        fromBlock: 0n,
        toBlock: "latest",
      });
      expect(settledCount).toBe(calls.length + 1 + RESEARCH_JOBS);
      expect(transfers.length).toBe(settledCount);
      expect(transfers.reduce((sum, log) => sum + (log.args.value as bigint), 0n)).toBe(settledAmount);
      expect(settledAmount).toBe(
        BigInt(calls.length + 1) * CSV_CLEANUP_PRICE + BigInt(RESEARCH_JOBS) * RESEARCH_PRICE,
      );
    } finally {
      await store.close();
    }
  });
});
