/**
 * The paid path against the official x402 stack, side by side in one run (issue 10).
 *
 * One local chain (anvil, real USDC); three servers, each a process of its own: utility402 (self
 * mode against that chain, a fresh settler account at nonce 0), the reference made of the official
 * packages only (bench/reference/official-server.ts, its own fresh settler), and bare Hono
 * (bench/reference/bare-hono.ts). Load comes from a separate process (autocannon); every paid
 * request carries its own payment, signed beforehand by one of many payer accounts; every paid run
 * is reconciled: 200s = ledger settled rows = on-chain transfers. Server CPU comes from
 * /proc/<pid>/stat; the profile from a run with V8's sampling profiler switched on in our server.
 *
 * Run: npm run bench paid-path (writes bench/results/paid-path.json).
 */
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { parseEther } from "viem";
import { privateKeyToAccount } from "viem/accounts";
import { fundLocalAccounts, startLocalChain } from "../src/chain/local-chain.ts";
import { createLogger } from "../src/log.ts";
import { csvCleanup } from "../src/operations/csv-cleanup/index.ts";
import { freePort } from "../test/helpers/service.ts";
import { type BenchRow, report } from "./lib.ts";
import { summariseProfile } from "./load/cpu-profile.ts";
import { runLoad } from "./load/load.ts";
import {
  benchKey,
  fundedPayers,
  type PaidRunResult,
  paidRun,
  signPayments,
  sqliteLedger,
} from "./load/paid-run.ts";
import { type ServerProcess, startServerProcess } from "./load/servers.ts";

const TARGETS = { paidThroughput32: 2.0, paidP99At8: 0.2, challenge: 0.8 };
const PAYERS = 64;
/** Paid requests per run, by connections: long enough for a steady state on a shared machine. */
/** BENCH_SCALE=0.2 shortens every run (a quick check of the harness, not a measurement). */
const SCALE = Number(process.env.BENCH_SCALE ?? 1);
const scaled = (count: number) => Math.max(32, Math.round(count * SCALE));
const PAID_RUNS: [connections: number, requests: number][] = [
  [1, scaled(100)],
  [8, scaled(400)],
  [32, scaled(1000)],
];
const WARMUP_PAYMENTS = scaled(60);
const PROFILE_PAYMENTS = scaled(400);
/** 402 rounds per server after the warm-up round; five, since one round of bare Hono can be half another's. */
const CHALLENGE_ROUNDS = 5;
const CHALLENGE_SECONDS = Math.max(1, Math.round(3 * SCALE));

const body = JSON.stringify(csvCleanup.example.input);
const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), "utility402-bench-"));
const servers: ServerProcess[] = [];
const chain = await startLocalChain({ port: await freePort(), log: createLogger("silent") });

try {
  const settlers = { ours: benchKey("settler", 0), reference: benchKey("settler", 1) };
  const payTo = {
    ours: privateKeyToAccount(benchKey("payto", 0)).address,
    reference: privateKeyToAccount(benchKey("payto", 1)).address,
  };
  await fundLocalAccounts(
    chain.rpcUrl,
    Object.values(settlers).map((key) => ({
      address: privateKeyToAccount(key).address,
      ether: parseEther("100"),
    })),
  );
  const payers = await fundedPayers(chain.rpcUrl, PAYERS, 1_000_000_000n);

  const route = "/v1/csv-cleanup";
  const ports = { ours: await freePort(), reference: await freePort(), bare: await freePort() };
  const ours = await startServerProcess({
    name: "utility402",
    script: "bench/load/profiled-serve.ts",
    args: ["serve"],
    port: ports.ours,
    readyPath: "/readyz",
    ipc: true,
    env: {
      PORT: String(ports.ours),
      PAYMENT_MODE: "self",
      RPC_URL: chain.rpcUrl,
      X402_SETTLER_PRIVATE_KEY: settlers.ours,
      X402_PAY_TO: payTo.ours,
      DATA_DIR: dataDir,
      LOG_LEVEL: "info",
    },
  });
  servers.push(ours);
  const reference = await startServerProcess({
    name: "reference (@x402/hono + @x402/evm)",
    script: "bench/reference/official-server.ts",
    port: ports.reference,
    readyPath: "/healthz",
    env: {
      PORT: String(ports.reference),
      RPC_URL: chain.rpcUrl,
      SETTLER_PRIVATE_KEY: settlers.reference,
      PAY_TO: payTo.reference,
    },
  });
  servers.push(reference);
  // Bare Hono also gets a verbatim copy of our 402 (headers and body), to show what its size alone costs.
  const challengeReply = await fetch(`${ours.url}${route}`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body,
  });
  const captured402 = path.join(dataDir, "captured-402.json");
  const capturedHeaders: Record<string, string> = {};
  for (const name of ["content-type", "payment-required", "cache-control"]) {
    capturedHeaders[name] = challengeReply.headers.get(name) ?? "";
  }
  const capturedBody = await challengeReply.text();
  fs.writeFileSync(captured402, JSON.stringify({ headers: capturedHeaders, body: capturedBody }));
  const bare = await startServerProcess({
    name: "bare Hono",
    script: "bench/reference/bare-hono.ts",
    port: ports.bare,
    readyPath: "/healthz",
    env: { PORT: String(ports.bare), STATIC_402_FILE: captured402 },
  });
  servers.push(bare);

  const ledger = sqliteLedger(dataDir);

  // Unpaid 402 challenges against bare Hono echoing the same body, rounds taking turns.
  const challenge = { ours: [] as number[], bare: [] as number[], bareSame402: [] as number[] };
  const challengeWarmUp = { ours: [] as number[], bare: [] as number[], bareSame402: [] as number[] };
  // Server CPU (/proc) and responses over the reported rounds: CPU per answer does not depend on how the
  // two cores were shared in a round, as requests per second do.
  const challengeCpu = { ours: { seconds: 0, responses: 0 }, bare: { seconds: 0, responses: 0 } };
  const challengeBytes =
    Buffer.byteLength(capturedBody) + Buffer.byteLength(capturedHeaders["payment-required"] ?? "");
  // Round 0 warms each server up (its code optimised, as the paid runs' warm-up does) and is not reported.
  for (let round = 0; round <= CHALLENGE_ROUNDS; round++) {
    for (const [name, server, url, expected] of [
      ["ours", ours, ours.url + route, "402"],
      ["bare", bare, bare.url + route, "200"],
      ["bareSame402", bare, `${bare.url}/static-402`, "402"],
    ] as const) {
      const cpuBefore = server.cpuSeconds();
      const result = await runLoad({
        targets: [url],
        connections: 32,
        method: "POST",
        body,
        durationSeconds: CHALLENGE_SECONDS,
      });
      if (result.statuses[expected] !== result.responses) {
        throw new Error(`${name}: expected only ${expected}s, got ${JSON.stringify(result.statuses)}`);
      }
      (round === 0 ? challengeWarmUp : challenge)[name].push(result.perSecond);
      if (round > 0 && name !== "bareSame402") {
        challengeCpu[name].seconds += server.cpuSeconds() - cpuBefore;
        challengeCpu[name].responses += result.responses;
      }
    }
  }

  const paid = async (server: ServerProcess, connections: number, requests: number) => {
    const headers = await signPayments(server.url + route, body, payers, requests);
    const cpuBefore = server.cpuSeconds();
    const result = await paidRun({
      targets: [server.url + route],
      connections,
      body,
      paymentHeaders: headers,
      rpcUrl: chain.rpcUrl,
      payTo: server === ours ? payTo.ours : payTo.reference,
      ledgerSettled: server === ours ? ledger.settledRows : undefined,
    });
    const cpuMsPerCall = ((server.cpuSeconds() - cpuBefore) * 1000) / Math.max(1, result.responses);
    if (!result.reconciliation.balanced) {
      console.error(`${server.name} at ${connections}: reconciliation failed`, result.reconciliation);
    }
    return { ...result, cpuMsPerCall };
  };

  // Warm both JITs and connection pools; reconciled like every paid run, not reported.
  for (const server of [ours, reference]) await paid(server, 4, WARMUP_PAYMENTS);

  const paidResults: {
    connections: number;
    ours: PaidRunResult & { cpuMsPerCall: number };
    reference: PaidRunResult & { cpuMsPerCall: number };
  }[] = [];
  for (const [connections, requests] of PAID_RUNS) {
    const oursResult = await paid(ours, connections, requests);
    const referenceResult = await paid(reference, connections, requests);
    paidResults.push({ connections, ours: oursResult, reference: referenceResult });
  }

  // Where our CPU goes: V8's sampling profiler over one paid run at 8 connections.
  const profileFile = path.join(dataDir, "paid.cpuprofile");
  const profileHeaders = await signPayments(ours.url + route, body, payers, PROFILE_PAYMENTS);
  await ours.request({ type: "profile-start" }, "profile-started");
  const profiled = await paidRun({
    targets: [ours.url + route],
    connections: 8,
    body,
    paymentHeaders: profileHeaders,
    rpcUrl: chain.rpcUrl,
    payTo: payTo.ours,
    ledgerSettled: ledger.settledRows,
  });
  await ours.request({ type: "profile-stop", path: profileFile }, "profile-written");
  const profile = summariseProfile(profileFile);

  // And where an unpaid 402 costs CPU: the same profiler over a challenge run.
  const challengeProfileFile = path.join(dataDir, "challenge.cpuprofile");
  await ours.request({ type: "profile-start" }, "profile-started");
  const challengeCpuBefore = ours.cpuSeconds();
  const challengeProfiled = await runLoad({
    targets: [ours.url + route],
    connections: 32,
    method: "POST",
    body,
    durationSeconds: CHALLENGE_SECONDS,
  });
  const challengeCpuUsPerRequest =
    ((ours.cpuSeconds() - challengeCpuBefore) * 1e6) / Math.max(1, challengeProfiled.responses);
  await ours.request({ type: "profile-stop", path: challengeProfileFile }, "profile-written");
  const challengeProfile = summariseProfile(challengeProfileFile);

  const median = (values: number[]) =>
    [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)] as number;
  const round1 = (value: number) => Number(value.toFixed(1));
  const cpuMicroseconds = ({ seconds, responses }: { seconds: number; responses: number }) =>
    (seconds * 1e6) / Math.max(1, responses);
  const round2 = (value: number) => Number(value.toFixed(2));
  const challengeRatio = median(challenge.ours) / median(challenge.bare);
  const rows: BenchRow[] = [
    {
      scenario: "unpaid 402 challenge, 32 conn (req/s)",
      ours: Math.round(median(challenge.ours)),
      baseline: Math.round(median(challenge.bare)),
      "ratio (ours/baseline)": round2(challengeRatio),
      target: `≥ ${TARGETS.challenge} × bare Hono`,
    },
    {
      scenario: `  bare Hono sending our ${(challengeBytes / 1024).toFixed(1)} KB 402 verbatim (req/s)`,
      ours: Math.round(median(challenge.ours)),
      baseline: Math.round(median(challenge.bareSame402)),
      "ratio (ours/baseline)": round2(median(challenge.ours) / median(challenge.bareSame402)),
      target: "",
    },
    {
      scenario: "  server CPU per unpaid answer, 32 conn (µs)",
      ours: Math.round(cpuMicroseconds(challengeCpu.ours)),
      baseline: Math.round(cpuMicroseconds(challengeCpu.bare)),
      "ratio (ours/baseline)": round2(
        cpuMicroseconds(challengeCpu.ours) / cpuMicroseconds(challengeCpu.bare),
      ),
      target: "reported",
    },
  ];
  for (const { connections, ours: o, reference: r } of paidResults) {
    rows.push({
      scenario: `paid csv-cleanup, ${connections} conn (calls/s)`,
      ours: round1(o.perSecond),
      baseline: round1(r.perSecond),
      "ratio (ours/baseline)": round2(o.perSecond / r.perSecond),
      target: connections === 32 ? `≥ ${TARGETS.paidThroughput32} × reference` : "",
    });
    rows.push({
      scenario: `  p50 / p99 latency, ${connections} conn (ms)`,
      ours: `${round1(o.latencyMs.p50)} / ${round1(o.latencyMs.p99)}`,
      baseline: `${round1(r.latencyMs.p50)} / ${round1(r.latencyMs.p99)}`,
      "ratio (ours/baseline)": round2(o.latencyMs.p99 / r.latencyMs.p99),
      target: connections === 8 ? `p99 ≤ ${TARGETS.paidP99At8} × reference` : "",
    });
    rows.push({
      scenario: `  server CPU per paid call, ${connections} conn (ms)`,
      ours: round2(o.cpuMsPerCall),
      baseline: round2(r.cpuMsPerCall),
      "ratio (ours/baseline)": round2(o.cpuMsPerCall / r.cpuMsPerCall),
      target: "",
    });
    rows.push({
      scenario: "  200s / ledger settled / transfers",
      ours: `${o.reconciliation.ok200} / ${o.reconciliation.ledgerSettled} / ${o.reconciliation.transfers}`,
      baseline: `${r.reconciliation.ok200} / - / ${r.reconciliation.transfers}`,
      "ratio (ours/baseline)": "",
      target: "equal",
    });
  }
  const at = (connections: number) =>
    paidResults.find((result) => result.connections === connections) as (typeof paidResults)[number];
  const throughputRatio = at(32).ours.perSecond / at(32).reference.perSecond;
  const p99Ratio = at(8).ours.latencyMs.p99 / at(8).reference.latencyMs.p99;
  const reconciled = [...paidResults.flatMap((r) => [r.ours, r.reference]), profiled].every(
    (result) => result.reconciliation.balanced,
  );
  const targets = {
    paidThroughputAt32: {
      ratio: round2(throughputRatio),
      target: TARGETS.paidThroughput32,
      met: throughputRatio >= TARGETS.paidThroughput32,
    },
    paidP99At8: { ratio: round2(p99Ratio), target: TARGETS.paidP99At8, met: p99Ratio <= TARGETS.paidP99At8 },
    challenge: {
      ratio: round2(challengeRatio),
      target: TARGETS.challenge,
      met: challengeRatio >= TARGETS.challenge,
    },
    reconciled,
  };
  report("paid-path", rows, {
    command: "npm run bench paid-path",
    cpus: os.availableParallelism(),
    loadAverageAtEnd: os.loadavg().map((load) => round2(load)),
    payers: PAYERS,
    targets,
    paidRuns: paidResults,
    challengeRuns: challenge,
    challengeWarmUpRuns: challengeWarmUp,
    challengeCpu,
    profile: {
      connections: 8,
      payments: PROFILE_PAYMENTS,
      reconciliation: profiled.reconciliation,
      ...profile,
    },
    challengeProfile: {
      connections: 32,
      seconds: CHALLENGE_SECONDS,
      cpuMicrosecondsPerRequest: Math.round(challengeCpuUsPerRequest),
      ...challengeProfile,
    },
  });
  console.log("\nwhere utility402's CPU goes in a paid run (self time, V8 sampling profiler)");
  console.table(profile.byPlace);
  console.table(profile.topFunctions);
  console.log(
    `\nwhere utility402's CPU goes in an unpaid 402 run (self time; ${Math.round(challengeCpuUsPerRequest)} µs of CPU per 402)`,
  );
  console.table(challengeProfile.byPlace);
  console.table(challengeProfile.topFunctions);
  console.log(
    `paid calls/s at 32 connections: ${round2(throughputRatio)}× the reference (target ≥ ${TARGETS.paidThroughput32}: ${targets.paidThroughputAt32.met ? "met" : "missed"})\n` +
      `paid p99 at 8 connections: ${round2(p99Ratio)}× the reference's (target ≤ ${TARGETS.paidP99At8}: ${targets.paidP99At8.met ? "met" : "missed"})\n` +
      `unpaid 402 challenges/s: ${round2(challengeRatio)}× bare Hono (target ≥ ${TARGETS.challenge}: ${targets.challenge.met ? "met" : "missed"})\n` +
      `reconciliation (200s = ledger settled rows = transfers) in every paid run: ${reconciled ? "yes" : "NO"}`,
  );
  ledger.close();
  if (!reconciled) process.exitCode = 1;
} finally {
  for (const server of servers) await server.stop();
  await chain.stop();
  fs.rmSync(dataDir, { recursive: true, force: true });
}
