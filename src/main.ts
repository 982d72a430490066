import "./gc-tuning.ts";
import { format } from "node:util";
import { serve } from "@hono/node-server";
import type { Logger } from "pino";
import { OPERATIONS } from "./catalog/registry.ts";
import { ConfigError, loadConfig } from "./config.ts";
import type { StartedOperation } from "./contract/operation.ts";
import { createWorker, jobHandlers } from "./jobs/run-workers.ts";
import { createLogger } from "./log.ts";
import {
  INGEST_USAGE,
  parseIngestArguments,
  runIngest,
} from "./operations/clinical-trials-query/ingest-command.ts";
import { searchName } from "./operations/research-brief/search.ts";
import { inProcessFacilitator } from "./payments/facilitator/facilitator.ts";
import { buildFacilitatorApp } from "./payments/facilitator/facilitator-server.ts";
import {
  formatFailedPaidJobs,
  formatPaymentStates,
  formatRevenueReport,
  formatUnbackedSettlements,
} from "./payments/ledger/ledger-report.ts";
import { formatChannelLedger, readChannelLedger } from "./payments/ledger/voucher-ledger.ts";
import { createSettlerSigner } from "./payments/settler/settler-signer.ts";
import { buildProductsCommand, prepareReleases } from "./products/cli.ts";
import { startService } from "./serve.ts";
import {
  databaseStartError,
  listenStartError,
  rpcStartError,
  StartupError,
  startupErrorLine,
} from "./startup-error.ts";
import { openStore } from "./store/open-store.ts";

const USAGE = `usage: utility402 <command>

commands:
  serve    run the HTTP service (default; local test chain unless payments are configured)
  build-products [slug ...]
           build the products' release archives into RELEASES_DIR (all five, or the named ones)
  worker   run a job worker (research briefs) against the same store as the API; run as many as you like
  ledger   print revenue from settled payments by operation and by day, payments by state, paid jobs
           that failed, settled payments whose transaction the chain lost, and per voucher channel what
           was charged, claimed, settled and is at risk (--json: the revenue; --channels --json: the channels)
  facilitator [--port N]
           run a standalone x402 facilitator (GET /supported, POST /verify, POST /settle) that settles
           with X402_SETTLER_PRIVATE_KEY over RPC_URL, for several API instances to share one key;
           FACILITATOR_AUTH_TOKEN, when set, is required as a bearer token
  ${INGEST_USAGE}
  help     show this text

Configuration comes from the environment; see docs/configuration.md.`;

async function serveCommand(): Promise<void> {
  const config = loadConfig();
  const log = createLogger(config.logLevel);
  // Libraries (the x402 SDK among them) write warnings with console.*: keep the output JSON lines.
  console.warn = (...args: unknown[]) => log.warn({ source: "console" }, format(...args));
  console.error = (...args: unknown[]) => log.error({ source: "console" }, format(...args));
  await prepareReleases(config, log);
  const service = await startService(config, log);
  const { search, llm } = config.research;
  const research = `search ${searchName(search)}, ${llm ? `model ${llm.model}` : "extractive (no model configured)"}`;
  // Wikipedia's and Crossref's API rules ask for a way to reach the operator in the User-Agent.
  const noContact =
    !search.contact && search.providers.some((name) => name === "wikipedia" || name === "crossref")
      ? "RESEARCH_CONTACT unset: the User-Agent sent to Wikipedia and Crossref names only this service and its base URL; set an email or URL"
      : undefined;
  log.info({ research, userAgent: search.userAgent }, "research sources");
  if (noContact) log.warn(noContact);
  if (service.localChain) {
    const banner = [
      "",
      "  utility402 is running on a LOCAL TEST CHAIN: payments here are test USDC, not real money.",
      `  base URL     ${service.url}`,
      `  chain RPC    ${service.localChain.rpcUrl} (anvil, chain id 8453, USDC at ${config.payment.asset})`,
      `  payTo        ${service.payTo} (anvil dev account #1)`,
      "  test payers  anvil dev accounts #2-#9 hold 1,000 test USDC each",
      `  demo         ${service.url === "http://127.0.0.1:8402" ? "" : `DEMO_BASE_URL=${service.url} `}npm run demo   (pays one call of every available operation with account #2)`,
      `  research     ${research}`,
      ...(noContact ? [`               ${noContact}`] : []),
      "",
    ].join("\n");
    process.stderr.write(`${banner}\n`);
  }
  stopOnSignals(log, () => service.stop());
}

/** SIGTERM/SIGINT: run `stop` once, then exit 0 (or 1 when it failed). */
function stopOnSignals(log: Logger, stop: () => Promise<unknown>): void {
  const shutdown = (signal: string) => {
    log.info({ signal }, "signal received");
    stop().then(
      () => process.exit(0),
      (error) => {
        log.error({ err: error }, "shutdown failed");
        process.exit(1);
      },
    );
  };
  process.once("SIGTERM", () => shutdown("SIGTERM"));
  process.once("SIGINT", () => shutdown("SIGINT"));
}

async function ledgerCommand(args: string[]): Promise<void> {
  const config = loadConfig();
  // An operator's report over the whole ledger: not held to a request's statement timeout.
  const database =
    config.database.kind === "postgres" ? { ...config.database, statementTimeoutMs: 0 } : config.database;
  const store = await openStore(database).catch((error) => {
    throw databaseStartError(error, config.database);
  });
  try {
    const rows = await store.revenueByOperationAndDay();
    const failedJobs = await store.jobs.failedPaidJobs();
    const states = await store.paymentCounts();
    const transactions = await store.settlementTransactions();
    // Vouchers' claims and withdrawals are on chain: RPC_URL, or the local chain while it runs.
    const rpcUrl =
      config.payment.rpcUrl ??
      (config.payment.mode === "local" ? `http://127.0.0.1:${config.localChain.port}` : undefined);
    const channels = await readChannelLedger(await store.vouchers.channels(), rpcUrl);
    const json = args.includes("--json");
    process.stdout.write(
      json && args.includes("--channels")
        ? `${JSON.stringify(channels, null, 2)}\n`
        : json
          ? `${JSON.stringify(rows, null, 2)}\n`
          : formatRevenueReport(rows) +
            formatPaymentStates(states) +
            formatFailedPaidJobs(failedJobs) +
            formatUnbackedSettlements(transactions) +
            formatChannelLedger(channels),
    );
  } finally {
    await store.close();
  }
}

/**
 * A worker process: the asynchronous operations whose providers are configured, run from the
 * shared store until SIGTERM/SIGINT (running jobs get SHUTDOWN_TIMEOUT_MS to finish; a killed
 * worker's jobs are taken again by another worker once their leases run out).
 */
async function workerCommand(): Promise<void> {
  const config = loadConfig();
  const log = createLogger(config.logLevel);
  const store = await openStore(config.database).catch((error) => {
    throw databaseStartError(error, config.database);
  });
  const now = () => new Date();
  const started = new Map<string, StartedOperation<unknown, unknown>>();
  for (const operation of OPERATIONS) {
    if (operation.kind === "async" && operation.start) {
      started.set(operation.id, await operation.start({ config, log, now, store }));
    }
  }
  const handlers = jobHandlers(started);
  const worker = createWorker(config, store.jobs, handlers, log);
  await worker.start();
  stopOnSignals(log, async () => {
    await worker.stop(config.shutdownTimeoutMs);
    await Promise.all([...started.values()].map((operation) => operation.close?.()));
    await store.close();
  });
}

async function facilitatorCommand(args: string[]): Promise<void> {
  const config = loadConfig(process.env, "facilitator");
  const { network, chainId } = config.payment;
  const portIndex = args.indexOf("--port");
  const port = portIndex >= 0 ? Number(args[portIndex + 1]) : 8403;
  if (!Number.isInteger(port) || port < 1 || port > 65535) {
    throw new ConfigError([`--port: invalid port "${args[portIndex + 1]}"`]);
  }
  const authToken = process.env.FACILITATOR_AUTH_TOKEN || undefined;
  if (!authToken && !isLoopback(config.host)) {
    throw new ConfigError([
      `FACILITATOR_AUTH_TOKEN: required when listening on ${config.host}: an open facilitator relays anyone's payments at your gas cost`,
    ]);
  }
  const log = createLogger(config.logLevel);
  const signer = createSettlerSigner({
    privateKey: config.payment.settlerPrivateKey as `0x${string}`,
    rpcUrl: config.payment.rpcUrl as string,
    chainId,
    pollingIntervalMs: 250,
    confirmationTimeoutMs: config.payment.settlementTimeoutMs,
  });
  // It settles over RPC_URL: one that does not answer is a reason not to start, said in one line.
  await Promise.race([
    signer.blockNumber(),
    new Promise<never>((_, reject) =>
      setTimeout(() => reject(new Error("no answer within 10 s")), 10_000).unref(),
    ),
  ]).catch((error) => {
    throw rpcStartError(error, config.payment.rpcUrl as string);
  });
  const app = buildFacilitatorApp(inProcessFacilitator(signer, network), { authToken });
  const server = await new Promise<ReturnType<typeof serve>>((resolve, reject) => {
    const created = serve({ fetch: app.fetch, port, hostname: config.host }, () => resolve(created));
    created.once("error", (error) => reject(listenStartError(error, config.host, port, "--port")));
  });
  log.info({ port, network, settler: signer.address }, "facilitator listening");
  const shutdown = () => server.close(() => process.exit(0));
  process.once("SIGTERM", shutdown);
  process.once("SIGINT", shutdown);
}

const isLoopback = (host: string) => host === "localhost" || host === "::1" || host.startsWith("127.");

async function main(argv: string[]): Promise<void> {
  const [command = "serve", ...args] = argv;
  switch (command) {
    case "serve":
      return serveCommand();
    case "build-products":
      process.exitCode = await buildProductsCommand(loadConfig(), args);
      return;
    case "worker":
      return workerCommand();
    case "ledger":
      return ledgerCommand(args);
    case "facilitator":
      return facilitatorCommand(args);
    case "ingest":
      return runIngest(loadConfig(), parseIngestArguments(args), process.stderr);
    case "help":
    case "--help":
    case "-h":
      process.stdout.write(`${USAGE}\n`);
      return;
    default:
      process.stderr.write(`unknown command "${command}"\n\n${USAGE}\n`);
      process.exitCode = 2;
  }
}

/** Commands that start something long-running: their failures are start-up failures. */
const STARTING = new Set(["serve", "worker", "facilitator", undefined]);

main(process.argv.slice(2)).catch((error) => {
  const command = process.argv[2];
  if (error instanceof ConfigError) {
    for (const problem of error.problems) process.stderr.write(`config error: ${problem}\n`);
  } else if (error instanceof StartupError || STARTING.has(command)) {
    // One line naming the setting to change; the stack only when asked for (LOG_LEVEL=debug or trace).
    process.stderr.write(`${startupErrorLine(error)}\n`);
    if (/^(debug|trace)$/.test(process.env.LOG_LEVEL ?? "") && error instanceof Error && error.stack) {
      process.stderr.write(`${error.stack}\n`);
    }
  } else {
    process.stderr.write(
      `utility402: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`,
    );
  }
  process.exit(1);
});
