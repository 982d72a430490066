/**
 * Scale-out: paid csv-cleanup calls per second on one API instance versus two instances on the same
 * PostgreSQL database (and one chain), measured in one run, rounds taking turns. Every run is
 * reconciled: 200s = settled ledger rows = on-chain transfers to payTo.
 *
 * Needs PostgreSQL: BENCH_DATABASE_URL or TEST_DATABASE_URL (`.ci/run` shows how to start the
 * machine's PostgreSQL); without one it says so and measures nothing.
 */
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { parseEther } from "viem";
import { privateKeyToAccount } from "viem/accounts";
import { fundLocalAccounts, startLocalChain } from "../src/chain/local-chain.ts";
import { createLogger } from "../src/log.ts";
import { csvCleanup } from "../src/operations/csv-cleanup/index.ts";
import { PostgresStore } from "../src/store/postgres/postgres-store.ts";
import { createTestDatabase } from "../test/helpers/postgres.ts";
import { freePort } from "../test/helpers/service.ts";
import { type BenchRow, report } from "./lib.ts";
import { benchKey, fundedPayers, type PaidRunResult, paidRun, signPayments } from "./load/paid-run.ts";
import { type ServerProcess, startServerProcess } from "./load/servers.ts";

const databaseUrl = process.env.BENCH_DATABASE_URL || process.env.TEST_DATABASE_URL;
if (!databaseUrl) {
  console.log("\nscale-out: skipped (set BENCH_DATABASE_URL or TEST_DATABASE_URL to a PostgreSQL database)");
  process.exit(0);
}
process.env.TEST_DATABASE_URL = databaseUrl;

const SCALE = Number(process.env.BENCH_SCALE ?? 1);
const REQUESTS = Math.max(64, Math.round(600 * SCALE));
const ROUNDS = 2;
const CONNECTIONS = 32;
const PAYERS = 64;
const route = "/v1/csv-cleanup";
const body = JSON.stringify(csvCleanup.example.input);

/** Busy and total CPU time of the whole machine so far (Linux /proc/stat, in clock ticks). */
function machineTicks(): { busy: number; total: number } {
  const fields = (fs.readFileSync("/proc/stat", "utf8").split("\n")[0] as string)
    .trim()
    .split(/\s+/)
    .slice(1)
    .map(Number);
  const total = fields.reduce((sum, value) => sum + value, 0);
  const idle = (fields[3] ?? 0) + (fields[4] ?? 0);
  return { busy: total - idle, total };
}

const dirs: string[] = [];
const servers: ServerProcess[] = [];
const chain = await startLocalChain({ port: await freePort(), log: createLogger("silent") });
const database = await createTestDatabase("bench_scale_out");
const ledger = await PostgresStore.open({ connectionString: database.url, poolSize: 1 });

try {
  const settlers = [benchKey("settler", 10), benchKey("settler", 11)];
  const payTo = privateKeyToAccount(benchKey("payto", 10)).address;
  await fundLocalAccounts(
    chain.rpcUrl,
    settlers.map((key) => ({ address: privateKeyToAccount(key).address, ether: parseEther("100") })),
  );
  const payers = await fundedPayers(chain.rpcUrl, PAYERS, 1_000_000_000n);

  // Two instances of one service: one database, one payTo, a settlement key each.
  for (const [i, settler] of settlers.entries()) {
    const port = await freePort();
    const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), "utility402-bench-scale-"));
    dirs.push(dataDir);
    servers.push(
      await startServerProcess({
        name: `instance ${i + 1}`,
        script: "bin/utility402.js",
        args: ["serve"],
        port,
        readyPath: "/readyz",
        env: {
          PORT: String(port),
          PAYMENT_MODE: "self",
          RPC_URL: chain.rpcUrl,
          X402_SETTLER_PRIVATE_KEY: settler,
          X402_PAY_TO: payTo,
          DATA_DIR: dataDir,
          DATABASE_URL: database.url,
          DATABASE_POOL_SIZE: "10",
          IN_PROCESS_WORKER: "false",
          LOG_LEVEL: "warn",
        },
      }),
    );
  }
  const settledRows = async () =>
    Number(
      (await ledger.pool.query<{ n: string }>("SELECT count(*) AS n FROM payments WHERE state = 'settled'"))
        .rows[0]?.n,
    );

  const run = async (instances: ServerProcess[], requests: number) => {
    const targets = instances.map((server) => server.url + route);
    const headers = await signPayments(targets[0] as string, body, payers, requests);
    const cpuBefore = instances.map((server) => server.cpuSeconds());
    const machineBefore = machineTicks();
    const result = await paidRun({
      targets,
      connections: CONNECTIONS,
      body,
      paymentHeaders: headers,
      rpcUrl: chain.rpcUrl,
      payTo,
      ledgerSettled: settledRows,
    });
    const cpuSeconds = instances.reduce(
      (sum, server, i) => sum + server.cpuSeconds() - (cpuBefore[i] as number),
      0,
    );
    const machineAfter = machineTicks();
    const machineBusy = (machineAfter.busy - machineBefore.busy) / (machineAfter.total - machineBefore.total);
    if (!result.reconciliation.balanced) {
      throw new Error(`reconciliation failed: ${JSON.stringify(result.reconciliation)}`);
    }
    return { ...result, cpuMsPerCall: (cpuSeconds * 1000) / Math.max(1, result.responses), machineBusy };
  };

  // Warm-up on both instances (reconciled, not reported).
  await run(servers, Math.max(64, Math.round(100 * SCALE)));
  type Run = PaidRunResult & { cpuMsPerCall: number; machineBusy: number };
  const one: Run[] = [];
  const two: Run[] = [];
  for (let round = 0; round < ROUNDS; round++) {
    one.push(await run(servers.slice(0, 1), REQUESTS));
    two.push(await run(servers, REQUESTS));
  }

  const median = (values: number[]) =>
    [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)] as number;
  const oneRate = median(one.map((result) => result.perSecond));
  const twoRate = median(two.map((result) => result.perSecond));
  const row = (name: string, results: typeof one): BenchRow => ({
    scenario: name,
    "calls/s (median)": Number(median(results.map((result) => result.perSecond)).toFixed(1)),
    "p50 ms": Math.round(median(results.map((result) => result.latencyMs.p50))),
    "p99 ms": Math.round(median(results.map((result) => result.latencyMs.p99))),
    "server CPU ms/call": Number(median(results.map((result) => result.cpuMsPerCall)).toFixed(1)),
    "machine CPU busy": `${Math.round(100 * median(results.map((result) => result.machineBusy)))} %`,
    "200s = ledger = transfers": results.every((result) => result.reconciliation.balanced) ? "yes" : "NO",
  });
  report(
    "scale-out",
    [
      row(`one instance, ${CONNECTIONS} conn`, one),
      row(`two instances, one database, ${CONNECTIONS} conn`, two),
      { scenario: "ratio two / one", "calls/s (median)": Number((twoRate / oneRate).toFixed(2)) },
    ],
    {
      requestsPerRun: REQUESTS,
      rounds: ROUNDS,
      cores: os.cpus().length,
      loadAverage: os.loadavg(),
      note:
        "Both instances, the load generator, anvil and PostgreSQL share this machine's cores: the ratio shows " +
        "what a second instance adds here, not what it adds on a machine of its own.",
      runs: { one, two },
    },
  );
} finally {
  for (const server of servers) await server.stop();
  await ledger.close();
  await database.dispose();
  await chain.stop();
  for (const dir of dirs) fs.rmSync(dir, { recursive: true, force: true });
}
