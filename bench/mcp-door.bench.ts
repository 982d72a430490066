/**
 * Paid tool calls through the MCP door against paid HTTP calls of the same operation, in one run
 * (issue 19; goal: MCP ≥ 0.8 × HTTP calls/s).
 *
 * One local chain (anvil, real USDC) and one utility402 process (self mode against that chain, a fresh
 * settler account). The load comes from this process: HTTP calls with Node's fetch, each carrying its own
 * PAYMENT-SIGNATURE; MCP calls with the official SDK client (Client + StreamableHTTPClientTransport, a
 * few sessions), each carrying its own PaymentPayload in `_meta["x402/payment"]`. Every payment is signed
 * beforehand with the official x402 client, spread over many payer accounts. Rounds alternate between
 * the doors; every round is reconciled: delivered results = ledger settled rows = on-chain transfers.
 *
 * Run: npm run bench mcp-door (writes bench/results/mcp-door.json). BENCH_SCALE=0.2 for a quick check.
 */
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import type { Client } from "@modelcontextprotocol/sdk/client/index.js";
import type { PaymentPayload } from "@x402/core/types";
import { createPublicClient, http, parseEther } from "viem";
import { privateKeyToAccount } from "viem/accounts";
import { fundLocalAccounts, startLocalChain } from "../src/chain/local-chain.ts";
import { createPayer } from "../src/client/paying-fetch.ts";
import { createLogger } from "../src/log.ts";
import { jsonDiff } from "../src/operations/json-diff/index.ts";
import { freePort } from "../test/helpers/service.ts";
import { callTool, connectMcp, receiptOf, termsOf, toolPayer } from "../test/mcp/paying-mcp-client.ts";
import { type BenchRow, report } from "./lib.ts";
import { benchKey, signPayments, sqliteLedger, transfersTo } from "./load/paid-run.ts";
import { type ServerProcess, startServerProcess } from "./load/servers.ts";

const GOAL = 0.8;
const SCALE = Number(process.env.BENCH_SCALE ?? 1);
const CALLS = Math.max(32, Math.round(200 * SCALE));
const CONCURRENCY = [8, 32];
/** Rounds per concurrency, the doors taking turns and the first door alternating (a shared machine drifts). */
const ROUNDS = 4;
const SESSIONS = 4;
const PAYERS = 64;

const args = jsonDiff.example.input as Record<string, unknown>;
const body = JSON.stringify(args);
const route = "/v1/json-diff";
const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), "utility402-bench-mcp-"));
const chain = await startLocalChain({ port: await freePort(), log: createLogger("silent") });
let server: ServerProcess | undefined;
const clients: Client[] = [];

/** Runs `tasks` with at most `concurrency` at once; returns how many succeeded and the seconds taken. */
async function drive(tasks: (() => Promise<boolean>)[], concurrency: number) {
  let next = 0;
  let ok = 0;
  const started = process.hrtime.bigint();
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (next < tasks.length) {
        const task = tasks[next++] as () => Promise<boolean>;
        if (await task()) ok++;
      }
    }),
  );
  return { ok, seconds: Number(process.hrtime.bigint() - started) / 1e9 };
}

try {
  const settlerKey = benchKey("settler", 7);
  const payTo = privateKeyToAccount(benchKey("payto", 7)).address;
  await fundLocalAccounts(chain.rpcUrl, [
    { address: privateKeyToAccount(settlerKey).address, ether: parseEther("100") },
  ]);
  const keys = Array.from({ length: PAYERS }, (_, i) => benchKey("payer", i));
  await fundLocalAccounts(
    chain.rpcUrl,
    keys.map((key) => ({ address: privateKeyToAccount(key).address, usdc: 1_000_000_000n })),
  );
  const httpPayers = keys.map((key) => createPayer(key));
  const toolPayers = keys.map((key) => toolPayer(key));

  const port = await freePort();
  server = await startServerProcess({
    name: "utility402",
    script: "bin/utility402.js",
    args: ["serve"],
    port,
    readyPath: "/readyz",
    env: {
      PORT: String(port),
      PAYMENT_MODE: "self",
      RPC_URL: chain.rpcUrl,
      X402_SETTLER_PRIVATE_KEY: settlerKey,
      X402_PAY_TO: payTo,
      DATA_DIR: dataDir,
      LOG_LEVEL: "warn",
    },
  });
  const url = server.url;
  for (let i = 0; i < SESSIONS; i++) clients.push(await connectMcp(url));
  const ledger = sqliteLedger(dataDir);
  const rpc = createPublicClient({ transport: http(chain.rpcUrl) });

  const signTools = async (count: number): Promise<PaymentPayload[]> => {
    const terms = termsOf(await callTool(clients[0] as Client, jsonDiff.id, args));
    const payloads: PaymentPayload[] = [];
    for (let i = 0; i < count; i++)
      payloads.push(await (toolPayers[i % PAYERS] as ReturnType<typeof toolPayer>).sign(terms));
    return payloads;
  };
  const httpTasks = (headers: string[]) =>
    headers.map((header) => async () => {
      const response = await fetch(url + route, {
        method: "POST",
        headers: { "content-type": "application/json", "PAYMENT-SIGNATURE": header },
        body,
      });
      await response.arrayBuffer();
      return response.status === 200 && response.headers.get("payment-response") !== null;
    });
  const mcpTasks = (payloads: PaymentPayload[]) =>
    payloads.map((payment, i) => async () => {
      const result = await callTool(clients[i % SESSIONS] as Client, jsonDiff.id, args, payment);
      return !result.isError && receiptOf(result)?.success === true;
    });

  /** One reconciled round: delivered = ledger settled rows = on-chain transfers to payTo. */
  const round = async (door: "http" | "mcp", concurrency: number, calls: number) => {
    const tasks =
      door === "http"
        ? httpTasks(await signPayments(url + route, body, httpPayers, calls))
        : mcpTasks(await signTools(calls));
    const fromBlock = (await rpc.getBlockNumber({ cacheTime: 0 })) + 1n;
    const rowsBefore = ledger.settledRows();
    const cpuBefore = (server as ServerProcess).cpuSeconds();
    const clientCpuBefore = process.cpuUsage();
    const { ok, seconds } = await drive(tasks, concurrency);
    const cpuMsPerCall = (((server as ServerProcess).cpuSeconds() - cpuBefore) * 1000) / Math.max(1, ok);
    const clientCpu = process.cpuUsage(clientCpuBefore);
    const clientCpuMsPerCall = (clientCpu.user + clientCpu.system) / 1000 / Math.max(1, ok);
    const transfers = await transfersTo(
      chain.rpcUrl,
      payTo,
      fromBlock,
      await rpc.getBlockNumber({ cacheTime: 0 }),
    );
    const settled = ledger.settledRows() - rowsBefore;
    const balanced = ok === calls && settled === ok && transfers === ok;
    if (!balanced)
      console.error(`${door} at ${concurrency}: delivered ${ok}, settled ${settled}, transfers ${transfers}`);
    return { perSecond: ok / seconds, cpuMsPerCall, clientCpuMsPerCall, ok, settled, transfers, balanced };
  };

  // Warm both doors (JIT, pools, sessions); reconciled, not reported.
  await round("http", 8, 32);
  await round("mcp", 8, 32);

  const rows: BenchRow[] = [];
  const results: Record<string, unknown>[] = [];
  const mean = (values: number[]) => values.reduce((a, b) => a + b, 0) / values.length;
  for (const concurrency of CONCURRENCY) {
    const tally = () => ({
      perSecond: [] as number[],
      cpuMs: [] as number[],
      clientCpuMs: [] as number[],
      ok: 0,
      settled: 0,
      transfers: 0,
    });
    const doors = { http: tally(), mcp: tally() };
    let balanced = true;
    for (let r = 0; r < ROUNDS; r++) {
      for (const door of r % 2 === 0 ? (["http", "mcp"] as const) : (["mcp", "http"] as const)) {
        const result = await round(door, concurrency, CALLS);
        const seen = doors[door];
        seen.perSecond.push(result.perSecond);
        seen.cpuMs.push(result.cpuMsPerCall);
        seen.clientCpuMs.push(result.clientCpuMsPerCall);
        seen.ok += result.ok;
        seen.settled += result.settled;
        seen.transfers += result.transfers;
        balanced &&= result.balanced;
      }
    }
    const ratio = mean(doors.mcp.perSecond) / mean(doors.http.perSecond);
    rows.push(
      {
        scenario: `paid json-diff, ${concurrency} concurrent (calls/s)`,
        http: Number(mean(doors.http.perSecond).toFixed(1)),
        mcp: Number(mean(doors.mcp.perSecond).toFixed(1)),
        "ratio (mcp/http)": Number(ratio.toFixed(2)),
        goal: `≥ ${GOAL}`,
      },
      {
        scenario: "  server CPU per paid call (ms)",
        http: Number(mean(doors.http.cpuMs).toFixed(1)),
        mcp: Number(mean(doors.mcp.cpuMs).toFixed(1)),
        "ratio (mcp/http)": Number((mean(doors.mcp.cpuMs) / mean(doors.http.cpuMs)).toFixed(2)),
        goal: "",
      },
      {
        // The load comes from this process, on the same (shared) cores as the server.
        scenario: "  load generator CPU per call (ms)",
        http: Number(mean(doors.http.clientCpuMs).toFixed(1)),
        mcp: Number(mean(doors.mcp.clientCpuMs).toFixed(1)),
        "ratio (mcp/http)": Number((mean(doors.mcp.clientCpuMs) / mean(doors.http.clientCpuMs)).toFixed(2)),
        goal: "",
      },
      {
        scenario: "  delivered / ledger settled / transfers",
        http: `${doors.http.ok} / ${doors.http.settled} / ${doors.http.transfers}`,
        mcp: `${doors.mcp.ok} / ${doors.mcp.settled} / ${doors.mcp.transfers}`,
        "ratio (mcp/http)": balanced ? "balanced" : "NOT BALANCED",
        goal: "equal",
      },
    );
    results.push({ concurrency, http: doors.http.perSecond, mcp: doors.mcp.perSecond, ratio, balanced });
  }
  report("mcp-door", rows, {
    calls: CALLS,
    rounds: ROUNDS,
    sessions: SESSIONS,
    payers: PAYERS,
    cpus: os.cpus().length,
    results,
  });
  ledger.close();
} finally {
  await Promise.all(clients.map((client) => client.close().catch(() => undefined)));
  await server?.stop();
  await chain.stop();
  fs.rmSync(dataDir, { recursive: true, force: true });
}
