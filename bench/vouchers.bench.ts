/**
 * Vouchers (x402 `batch-settlement`, issue #35) against the `exact` paths, in one run on one machine.
 *
 * One local chain (anvil, real USDC, our settlement contract); two servers, each a process of its own:
 * utility402 (self mode, vouchers on) and the reference made of the official packages only
 * (bench/reference/official-server.ts: `@x402/hono` + the `@x402/evm` exact facilitator). The route is
 * csv-cleanup (USD 2.00) on both. Measured:
 * - our unpaid 402s/s (autocannon, and the in-order driver the voucher runs use);
 * - our exact-paid calls/s and p99 (a fresh EIP-3009 payment per request, as bench/paid-path.bench.ts);
 * - the official stack's exact-paid calls/s and p99;
 * - voucher-paid calls/s and p99: one channel per connection, opened beforehand by @x402/fetch with
 *   @x402/evm's batch-settlement client (one deposit each), every request carrying the next cumulative
 *   voucher signed beforehand by that official client, sent in order on its connection;
 * - gas per paid call of each scheme: exact, the run's transfers' gas over its 200s; vouchers, the
 *   deposits' gas plus the claim and settle at the graceful stop, over every voucher-paid call.
 * Every paid run is reconciled: exact, 200s = ledger settled rows = transfers; vouchers, 200s = voucher
 * ledger rows and no transaction during the run; after the stop, payTo's balance rose by exactly every
 * delivered charge. Where a voucher call's CPU goes: V8's sampling profiler over one voucher run.
 *
 * Run: npm run bench vouchers (writes bench/results/vouchers.json). BENCH_SCALE=0.2 checks the harness.
 */
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { decodePaymentRequiredHeader, decodePaymentResponseHeader } from "@x402/core/http";
import type { PaymentRequired } from "@x402/core/types";
import { toClientEvmSigner } from "@x402/evm";
import {
  BatchSettlementEvmScheme,
  InMemoryClientChannelStorage,
  updateChannelFromSettle,
} from "@x402/evm/batch-settlement/client";
import { wrapFetchWithPayment, x402Client, x402HTTPClient } from "@x402/fetch";
import Database from "better-sqlite3";
import { createPublicClient, type Hex, http, parseEther } from "viem";
import { privateKeyToAccount } from "viem/accounts";
import { fundLocalAccounts, startLocalChain } from "../src/chain/local-chain.ts";
import { createLogger } from "../src/log.ts";
import { csvCleanup } from "../src/operations/csv-cleanup/index.ts";
import { freePort, usdcBalances } from "../test/helpers/service.ts";
import { type BenchRow, report } from "./lib.ts";
import { summariseProfile } from "./load/cpu-profile.ts";
import type { LoadResult } from "./load/load.ts";
import { runLoad } from "./load/load.ts";
import { benchKey, fundedPayers, paidRun, signPayments, sqliteLedger } from "./load/paid-run.ts";
import { runSequences } from "./load/sequence-load.ts";
import { type ServerProcess, startServerProcess } from "./load/servers.ts";

const TARGETS = { voucherVsExact: 10, voucherVsUnpaid: 0.3, voucherP99VsOfficial: 0.1 };
const SCALE = Number(process.env.BENCH_SCALE ?? 1);
const scaled = (count: number) => Math.max(8, Math.round(count * SCALE));
const CONNECTIONS = [8, 32] as const;
/** Paid requests per run by connections: exact (ours), exact (official), vouchers per connection. */
const RUNS = {
  8: { ours: scaled(300), official: scaled(150), vouchersPerConnection: scaled(250) },
  32: { ours: scaled(600), official: scaled(300), vouchersPerConnection: scaled(100) },
};
const WARMUP = { exact: scaled(60), vouchersPerConnection: scaled(50) };
const PROFILE_PER_CONNECTION = scaled(100);
const EXACT_PAYERS = 64;
const CHANNELS = 32;
/** Each channel's one deposit: enough for every voucher the runs send on it (USD 2.00 a call). */
const DEPOSIT = 5_000_000_000n;
const UNPAID_ROUNDS = 3;
const UNPAID_SECONDS = Math.max(1, Math.round(3 * SCALE));

const route = "/v1/csv-cleanup";
const body = JSON.stringify(csvCleanup.example.input);
const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), "utility402-bench-"));
const servers: ServerProcess[] = [];
const chain = await startLocalChain({ port: await freePort(), log: createLogger("silent") });
const rpc = createPublicClient({ transport: http(chain.rpcUrl), pollingInterval: 50 });
const block = () => rpc.getBlockNumber({ cacheTime: 0 });

/** The transactions mined in (from, to] and the gas they used. */
async function gasIn(from: bigint, to: bigint) {
  const hashes: Hex[] = [];
  for (let n = from + 1n; n <= to; n++) hashes.push(...(await rpc.getBlock({ blockNumber: n })).transactions);
  const receipts = await Promise.all(hashes.map((hash) => rpc.getTransactionReceipt({ hash })));
  return { transactions: receipts.length, gas: receipts.reduce((sum, receipt) => sum + receipt.gasUsed, 0n) };
}

try {
  const settlers = { ours: benchKey("settler", 0), official: benchKey("settler", 1) };
  const payTo = {
    ours: privateKeyToAccount(benchKey("payto", 0)).address,
    official: privateKeyToAccount(benchKey("payto", 1)).address,
  };
  await fundLocalAccounts(
    chain.rpcUrl,
    Object.values(settlers).map((key) => ({
      address: privateKeyToAccount(key).address,
      ether: parseEther("100"),
    })),
  );
  const exactPayers = await fundedPayers(chain.rpcUrl, EXACT_PAYERS, 1_000_000_000n);
  const channelKeys = Array.from({ length: CHANNELS }, (_, i) => benchKey("voucher payer", i));
  await fundLocalAccounts(
    chain.rpcUrl,
    channelKeys.map((key) => ({ address: privateKeyToAccount(key).address, usdc: DEPOSIT * 2n })),
  );

  const ports = { ours: await freePort(), official: await freePort() };
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
      X402_VOUCHERS: "on",
      X402_VOUCHER_MIN_DEPOSIT: String(DEPOSIT),
      // No claim during the runs (they count transactions): the graceful stop's claim is measured.
      X402_VOUCHER_CLAIM_INTERVAL_MS: String(24 * 3600 * 1000),
      DATA_DIR: dataDir,
      LOG_LEVEL: "warn",
    },
  });
  servers.push(ours);
  const official = await startServerProcess({
    name: "official (@x402/hono + @x402/evm)",
    script: "bench/reference/official-server.ts",
    port: ports.official,
    readyPath: "/healthz",
    env: {
      PORT: String(ports.official),
      RPC_URL: chain.rpcUrl,
      SETTLER_PRIVATE_KEY: settlers.official,
      PAY_TO: payTo.official,
    },
  });
  servers.push(official);
  const balanceOf = usdcBalances(chain.rpcUrl);
  const payToAtStart = await balanceOf(payTo.ours);
  const ledger = sqliteLedger(dataDir);
  const voucherRows = (() => {
    const db = new Database(path.join(dataDir, "utility402.sqlite"), { readonly: true });
    const count = db.prepare("SELECT count(*) AS n FROM voucher_charges");
    const sum = db.prepare("SELECT amount FROM voucher_charges");
    return {
      count: () => (count.get() as { n: number }).n,
      delivered: () =>
        (sum.all() as { amount: string }[]).reduce((total, row) => total + BigInt(row.amount), 0n),
      close: () => db.close(),
    };
  })();

  // Unpaid 402s: autocannon, and the in-order driver the voucher runs use (so their ratio compares like with like).
  const unpaid = { autocannon: [] as number[], inOrder: [] as number[] };
  for (let round = 0; round <= UNPAID_ROUNDS; round++) {
    const result = await runLoad({
      targets: [ours.url + route],
      connections: 32,
      method: "POST",
      body,
      durationSeconds: UNPAID_SECONDS,
    });
    if (result.statuses["402"] !== result.responses)
      throw new Error(`unpaid: ${JSON.stringify(result.statuses)}`);
    const inOrder = await runSequences({
      target: ours.url + route,
      method: "POST",
      body,
      sequences: Array.from({ length: 32 }, () => Array.from({ length: scaled(150) }, () => null)),
    });
    if (inOrder.statuses["402"] !== inOrder.responses)
      throw new Error(`unpaid: ${JSON.stringify(inOrder.statuses)}`);
    if (round === 0) continue; // the warm-up round
    unpaid.autocannon.push(result.perSecond);
    unpaid.inOrder.push(inOrder.perSecond);
  }

  // One channel per voucher payer, opened by the official client (its deposit), then its vouchers signed
  // by that client in order: each from its own channel state, advanced as a delivered answer advances it.
  const terms = decodePaymentRequiredHeader(
    (
      await fetch(ours.url + route, { method: "POST", headers: { "content-type": "application/json" }, body })
    ).headers.get("payment-required") as string,
  ) as PaymentRequired;
  const quote = terms.accepts.find((entry) => entry.scheme === "batch-settlement");
  if (!quote) throw new Error("no batch-settlement entry in our 402");
  const depositsFrom = await block();
  const channels = await Promise.all(
    channelKeys.map(async (key) => {
      const account = privateKeyToAccount(key);
      const storage = new InMemoryClientChannelStorage();
      const scheme = new BatchSettlementEvmScheme(toClientEvmSigner(account, rpc as never), { storage });
      // The route costs USD 2.00, past the official client's default cap of USD 1 a payment; its deposit
      // is capped at 5× the cap: USD 5,000, what every run here sends on one channel.
      const client = x402Client
        .fromConfig({ schemes: [], spendControls: { maxAmountPerPayment: "$1000" } })
        .register(quote.network, scheme);
      const opened = await wrapFetchWithPayment(fetch, client)(ours.url + route, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body,
      });
      if (opened.status !== 200)
        throw new Error(`opening a channel: ${opened.status} ${await opened.text()}`);
      const settled = decodePaymentResponseHeader(opened.headers.get("payment-response") as string);
      const channelId = (settled.extra as { channelState: { channelId: Hex } }).channelState.channelId;
      const encoder = new x402HTTPClient(client);
      return {
        async next(count: number): Promise<string[]> {
          const headers: string[] = [];
          for (let i = 0; i < count; i++) {
            const payment = await client.createPaymentPayload(terms);
            const voucher = (payment.payload as { voucher: { maxClaimableAmount: string } }).voucher;
            headers.push(encoder.encodePaymentSignatureHeader(payment)["PAYMENT-SIGNATURE"] as string);
            await updateChannelFromSettle(storage, {
              server: { chargedAmount: quote.amount, chargedCumulativeAmount: voucher.maxClaimableAmount },
              local: { channelId, requestAmount: quote.amount },
            });
          }
          return headers;
        },
      };
    }),
  );
  const deposits = await gasIn(depositsFrom, await block());
  if (deposits.transactions !== CHANNELS)
    throw new Error(`${deposits.transactions} deposits for ${CHANNELS} channels`);

  const exactRun = async (server: ServerProcess, connections: number, requests: number) => {
    const headers = await signPayments(server.url + route, body, exactPayers, requests);
    const from = await block();
    const cpuBefore = server.cpuSeconds();
    const result = await paidRun({
      targets: [server.url + route],
      connections,
      body,
      paymentHeaders: headers,
      rpcUrl: chain.rpcUrl,
      payTo: server === ours ? payTo.ours : payTo.official,
      ledgerSettled: server === ours ? ledger.settledRows : undefined,
    });
    const cpuMsPerCall = ((server.cpuSeconds() - cpuBefore) * 1000) / Math.max(1, result.responses);
    const gas = await gasIn(from, await block());
    if (!result.reconciliation.balanced)
      console.error(`${server.name} at ${connections}: not reconciled`, result.reconciliation);
    return {
      ...result,
      cpuMsPerCall,
      gasPerCall: Number(gas.gas) / Math.max(1, result.reconciliation.ok200),
    };
  };
  const voucherRun = async (connections: number, perConnection: number) => {
    const sequences = await Promise.all(
      channels.slice(0, connections).map((channel) => channel.next(perConnection)),
    );
    const from = await block();
    const rowsBefore = voucherRows.count();
    const cpuBefore = ours.cpuSeconds();
    const result: LoadResult = await runSequences({
      target: ours.url + route,
      method: "POST",
      body,
      sequences,
    });
    const cpuMsPerCall = ((ours.cpuSeconds() - cpuBefore) * 1000) / Math.max(1, result.responses);
    const ok200 = result.statuses["200"] ?? 0;
    const rows = voucherRows.count() - rowsBefore;
    const { transactions } = await gasIn(from, await block());
    const reconciliation = {
      ok200,
      ledgerRows: rows,
      transactions,
      balanced: ok200 === rows && rows === result.responses && transactions === 0,
    };
    if (!reconciliation.balanced)
      console.error(`vouchers at ${connections}: not reconciled`, result.statuses, reconciliation);
    return { ...result, cpuMsPerCall, reconciliation };
  };

  // Warm every path up (JITs, connection pools, the store's statements); reconciled, not reported.
  await exactRun(ours, 4, WARMUP.exact);
  await exactRun(official, 4, WARMUP.exact);
  await voucherRun(4, WARMUP.vouchersPerConnection);

  const runs: Record<
    number,
    {
      ours: Awaited<ReturnType<typeof exactRun>>;
      official: Awaited<ReturnType<typeof exactRun>>;
      vouchers: Awaited<ReturnType<typeof voucherRun>>;
    }
  > = {};
  for (const connections of CONNECTIONS) {
    const plan = RUNS[connections];
    runs[connections] = {
      vouchers: await voucherRun(connections, plan.vouchersPerConnection),
      ours: await exactRun(ours, connections, plan.ours),
      official: await exactRun(official, connections, plan.official),
    };
  }

  // Where a voucher call's CPU goes: the sampling profiler over one voucher run at 8 connections.
  const profileFile = path.join(dataDir, "vouchers.cpuprofile");
  await ours.request({ type: "profile-start" }, "profile-started");
  const profiled = await voucherRun(8, PROFILE_PER_CONNECTION);
  await ours.request({ type: "profile-stop", path: profileFile }, "profile-written");
  const profile = summariseProfile(profileFile, 25);

  // The graceful stop claims every channel's vouchers (one claim) and settles them to payTo (one settle).
  const voucherCalls = voucherRows.count();
  const delivered = voucherRows.delivered();
  const exactReceived = (await balanceOf(payTo.ours)) - payToAtStart;
  voucherRows.close();
  ledger.close();
  const claimFrom = await block();
  await ours.stop();
  servers.splice(servers.indexOf(ours), 1);
  const claimAndSettle = await gasIn(claimFrom, await block());
  const payToRose = (await balanceOf(payTo.ours)) - payToAtStart - exactReceived;
  const voucherGasPerCall = Number(deposits.gas + claimAndSettle.gas) / voucherCalls;

  const median = (values: number[]) =>
    [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)] as number;
  const round1 = (value: number) => Number(value.toFixed(1));
  const round2 = (value: number) => Number(value.toFixed(2));
  const unpaidRate = median(unpaid.inOrder);
  const rows: BenchRow[] = [
    {
      scenario: "unpaid 402s, 32 conn (req/s): in-order driver / autocannon",
      vouchers: "",
      "exact (ours)": "",
      official: "",
      value: `${Math.round(unpaidRate)} / ${Math.round(median(unpaid.autocannon))}`,
    },
  ];
  for (const connections of CONNECTIONS) {
    const { vouchers, ours: exact, official: reference } = runs[connections] as (typeof runs)[number];
    rows.push(
      {
        scenario: `paid csv-cleanup, ${connections} conn (calls/s)`,
        vouchers: round1(vouchers.perSecond),
        "exact (ours)": round1(exact.perSecond),
        official: round1(reference.perSecond),
        value: "",
      },
      {
        scenario: `  p50 / p99, ${connections} conn (ms)`,
        vouchers: `${round1(vouchers.latencyMs.p50)} / ${round1(vouchers.latencyMs.p99)}`,
        "exact (ours)": `${round1(exact.latencyMs.p50)} / ${round1(exact.latencyMs.p99)}`,
        official: `${round1(reference.latencyMs.p50)} / ${round1(reference.latencyMs.p99)}`,
        value: "",
      },
      {
        scenario: `  server CPU per paid call, ${connections} conn (ms)`,
        vouchers: round2(vouchers.cpuMsPerCall),
        "exact (ours)": round2(exact.cpuMsPerCall),
        official: round2(reference.cpuMsPerCall),
        value: "",
      },
      {
        scenario: "  200s / ledger rows / transactions in the run",
        vouchers: `${vouchers.reconciliation.ok200} / ${vouchers.reconciliation.ledgerRows} / ${vouchers.reconciliation.transactions}`,
        "exact (ours)": `${exact.reconciliation.ok200} / ${exact.reconciliation.ledgerSettled} / ${exact.reconciliation.transfers}`,
        official: `${reference.reconciliation.ok200} / - / ${reference.reconciliation.transfers}`,
        value: "",
      },
    );
  }
  rows.push({
    scenario: "gas per paid call",
    vouchers: Math.round(voucherGasPerCall),
    "exact (ours)": Math.round(runs[32]?.ours.gasPerCall ?? 0),
    official: Math.round(runs[32]?.official.gasPerCall ?? 0),
    value: `vouchers: ${CHANNELS} deposits ${deposits.gas} gas + claim and settle ${claimAndSettle.gas} gas (${claimAndSettle.transactions} tx) over ${voucherCalls} calls`,
  });
  const at32 = runs[32] as (typeof runs)[number];
  const at8 = runs[8] as (typeof runs)[number];
  const ratios = {
    voucherVsExact: at32.vouchers.perSecond / at32.ours.perSecond,
    voucherVsUnpaid: at32.vouchers.perSecond / unpaidRate,
    voucherP99VsOfficial8: at8.vouchers.latencyMs.p99 / at8.official.latencyMs.p99,
    voucherP99VsOfficial32: at32.vouchers.latencyMs.p99 / at32.official.latencyMs.p99,
  };
  const reconciled =
    Object.values(runs).every(
      (run) =>
        run.vouchers.reconciliation.balanced &&
        run.ours.reconciliation.balanced &&
        run.official.reconciliation.balanced,
    ) &&
    profiled.reconciliation.balanced &&
    payToRose === delivered;
  const targets = {
    voucherVsExactAt32: {
      ratio: round2(ratios.voucherVsExact),
      target: TARGETS.voucherVsExact,
      met: ratios.voucherVsExact >= TARGETS.voucherVsExact,
    },
    voucherVsUnpaidAt32: {
      ratio: round2(ratios.voucherVsUnpaid),
      target: TARGETS.voucherVsUnpaid,
      met: ratios.voucherVsUnpaid >= TARGETS.voucherVsUnpaid,
    },
    voucherP99VsOfficialAt8: {
      ratio: round2(ratios.voucherP99VsOfficial8),
      target: TARGETS.voucherP99VsOfficial,
      met: ratios.voucherP99VsOfficial8 <= TARGETS.voucherP99VsOfficial,
    },
    voucherP99VsOfficialAt32: {
      ratio: round2(ratios.voucherP99VsOfficial32),
      target: TARGETS.voucherP99VsOfficial,
      met: ratios.voucherP99VsOfficial32 <= TARGETS.voucherP99VsOfficial,
    },
    reconciled,
  };
  report("vouchers", rows, {
    command: "npm run bench vouchers",
    cpus: os.availableParallelism(),
    loadAverageAtEnd: os.loadavg().map(round2),
    scale: SCALE,
    targets,
    unpaid,
    runs,
    gas: {
      deposits: { channels: CHANNELS, gas: String(deposits.gas) },
      claimAndSettle: { transactions: claimAndSettle.transactions, gas: String(claimAndSettle.gas) },
      voucherCalls,
      voucherGasPerCall: Math.round(voucherGasPerCall),
      exactGasPerCall: Math.round(at32.ours.gasPerCall),
      officialGasPerCall: Math.round(at32.official.gasPerCall),
    },
    payTo: { voucherChargesDelivered: String(delivered), roseAfterClaimAndSettle: String(payToRose) },
    profile: {
      connections: 8,
      perConnection: PROFILE_PER_CONNECTION,
      reconciliation: profiled.reconciliation,
      ...profile,
    },
  });
  console.log("\nwhere utility402's CPU goes in a voucher-paid run (self time, V8 sampling profiler)");
  console.table(profile.byPlace);
  console.table(profile.topFunctions);
  console.log(
    `voucher calls/s at 32 conn: ${round2(ratios.voucherVsExact)}× our exact (target ≥ ${TARGETS.voucherVsExact}: ${targets.voucherVsExactAt32.met ? "met" : "missed"}), ` +
      `${round2(ratios.voucherVsUnpaid)}× our unpaid 402s (target ≥ ${TARGETS.voucherVsUnpaid}: ${targets.voucherVsUnpaidAt32.met ? "met" : "missed"})\n` +
      `voucher p99: ${round2(ratios.voucherP99VsOfficial8)}× the official stack's at 8 conn, ${round2(ratios.voucherP99VsOfficial32)}× at 32 (target ≤ ${TARGETS.voucherP99VsOfficial})\n` +
      `reconciled (every run; payTo rose by ${payToRose}, delivered ${delivered}): ${reconciled ? "yes" : "NO"}`,
  );
  if (!reconciled) process.exitCode = 1;
} finally {
  for (const server of servers) await server.stop();
  await chain.stop();
  fs.rmSync(dataDir, { recursive: true, force: true });
}
