import type { Server } from "node:http";
import type { AddressInfo } from "node:net";
import { serve } from "@hono/node-server";
import { x402ResourceServer } from "@x402/core/server";
import { ExactEvmScheme } from "@x402/evm/exact/server";
import { bazaarResourceServerExtension } from "@x402/extensions/bazaar";
import type { Logger } from "pino";
import { privateKeyToAccount } from "viem/accounts";
import { buildApp, type Readiness } from "./app.ts";
import { buildAgentSkills } from "./catalog/agent-skills.ts";
import { buildCatalogDocument } from "./catalog/catalog-document.ts";
import { buildLlmsTxt } from "./catalog/llms-txt.ts";
import { buildOpenApiDocument } from "./catalog/openapi.ts";
import type { AnyOperation, StartedOperation } from "./catalog/operation.ts";
import { FREE_ROUTES, OPERATIONS } from "./catalog/registry.ts";
import { buildX402Manifest } from "./catalog/x402-manifest.ts";
import { devPrivateKey } from "./chain/dev-accounts.ts";
import { type LocalChain, startLocalChain } from "./chain/local-chain.ts";
import type { Config } from "./config.ts";
import { guardConnections, httpServerOptions, limitRequestsPerClient } from "./http/connection-limits.ts";
import { type HealthListener, startHealthListener } from "./http/health-listener.ts";
import { x402HttpAnswers } from "./http/x402-answers.ts";
import { createWorker, describeWorkers, jobHandlers } from "./jobs/run-workers.ts";
import type { JobWorker } from "./jobs/worker.ts";
import { McpSessions } from "./mcp/sessions.ts";
import { Metrics } from "./metrics.ts";
import { createPaymentBackend } from "./payments/facilitator/facilitator.ts";
import { PaymentGate } from "./payments/resource-server/gate.ts";
import { HeldPaymentSettler } from "./payments/resource-server/held-payment-settler.ts";
import { holdsPayment } from "./payments/resource-server/operation-kinds.ts";
import { RecoverySweeper } from "./payments/resource-server/recovery-sweeper.ts";
import { buildPaymentTerms, type PaymentTerms } from "./payments/resource-server/terms.ts";
import { createAuthorizationChecker } from "./payments/settler/authorization-state.ts";
import { journalSettlements } from "./payments/settler/settlement-journal.ts";
import { holdSettlerAccount, type SettlerHold } from "./payments/settler/settler-claim.ts";
import { Problem } from "./problem.ts";
import { databaseStartError, listenStartError, rpcStartError } from "./startup-error.ts";
import { openStore } from "./store/open-store.ts";

export interface RunningService {
  url: string;
  config: Config;
  localChain?: LocalChain;
  payTo: `0x${string}`;
  /** The port of the health listener (HEALTH_PORT), when there is one. */
  healthPort?: number;
  /** Stops accepting, finishes in-flight requests and settlements, stops the local chain, closes the store. */
  stop(): Promise<void>;
}

const PROBE_TIMEOUT_MS = 2000;
const RPC_START_TIMEOUT_MS = 10_000;

const withTimeout = <T>(promise: Promise<T>, ms: number) =>
  Promise.race([
    promise,
    new Promise<never>((_, reject) =>
      setTimeout(() => reject(new Error(`no answer within ${ms} ms`)), ms).unref(),
    ),
  ]);

const NO_CHAIN_ACCESS =
  "this service has no chain access (set RPC_URL) to settle a job's held payment when its result is ready";

const refuse = async (): Promise<never> => {
  throw Problem.of("chain-not-configured", `${NO_CHAIN_ACCESS}; no payment was taken`);
};

/** An async operation on a service that cannot settle held payments: refused before any payment. */
function withoutChainAccess(
  operation: StartedOperation<unknown, unknown>,
): StartedOperation<unknown, unknown> {
  return {
    ...operation,
    available: false,
    catalogDetails: { ...operation.catalogDetails, unavailable: NO_CHAIN_ACCESS },
    jobHandler: undefined,
    admit: refuse,
    handle: refuse,
  };
}

/** The composition root: chain, store, payments, documents, HTTP server. */
export async function startService(
  config: Config,
  log: Logger,
  options: { operations?: readonly AnyOperation[]; clock?: () => number } = {},
): Promise<RunningService> {
  const operations = options.operations ?? OPERATIONS;
  const payment = config.payment;
  let localChain: LocalChain | undefined;
  let payTo = payment.payTo;
  let inProcess: Parameters<typeof createPaymentBackend>[1];

  if (payment.mode === "local") {
    localChain = await startLocalChain({
      port: config.localChain.port,
      statePath: config.localChain.statePath,
      log,
      dataDir: config.dataDir,
    });
    payTo ??= localChain.accounts.payTo.address;
    inProcess = { privateKey: devPrivateKey(0), rpcUrl: localChain.rpcUrl, pollingIntervalMs: 50 };
  } else if (payment.mode === "self") {
    inProcess = {
      privateKey: payment.settlerPrivateKey as `0x${string}`,
      rpcUrl: payment.rpcUrl as string,
      pollingIntervalMs: 250,
    };
  }
  const store = await openStore(config.database, { now: options.clock }).catch(async (error) => {
    await localChain?.stop();
    throw databaseStartError(error, config.database);
  });
  let worker: JobWorker | undefined;
  let heldPayments: HeldPaymentSettler | undefined;
  let recovery: RecoverySweeper | undefined;
  let health: HealthListener | undefined;
  const started = new Map<string, StartedOperation<unknown, unknown>>();
  const closeOperations = () =>
    Promise.all([
      ...[...started.values()].map((operation) => operation.close?.()),
      ...operations.map((operation) => operation.close?.()),
    ]);
  let settlerHold: SettlerHold | undefined;
  // What the chain lost of the settler's transactions goes to the ledger, a metric and the log.
  const settlementJournal = journalSettlements(store, log, inProcess);
  try {
    if (payment.mode === "self") {
      const settler = privateKeyToAccount(payment.settlerPrivateKey as `0x${string}`).address;
      settlerHold = await holdSettlerAccount(store, payment.network, settler, log);
    }
    const now = options.clock ? () => new Date((options.clock as () => number)()) : () => new Date();
    for (const operation of operations) {
      if (operation.start) {
        started.set(operation.id, await operation.start({ config, log, now, store, localChain }));
      } else if (operation.handler) {
        started.set(operation.id, { handle: operation.handler });
      }
    }
    // Chain reads settle unknown outcomes from the token's own record (RPC_URL is optional in facilitator
    // mode). A job's held payment is never decided without them: without RPC_URL, async operations say so.
    const chainRpc = inProcess?.rpcUrl ?? payment.rpcUrl;
    if (!chainRpc) {
      for (const operation of operations.filter(holdsPayment)) {
        const held = started.get(operation.id);
        if (held) started.set(operation.id, withoutChainAccess(held));
      }
    }
    // `serve` runs a worker of its own unless told not to, when an asynchronous operation is served.
    if (config.jobs.inProcessWorker && operations.some((operation) => operation.kind === "async")) {
      worker = createWorker(config, store.jobs, jobHandlers(started), log, options.clock, () =>
        heldPayments?.wake(),
      );
      await worker.start();
    }
    const backend = createPaymentBackend(payment, inProcess, settlementJournal.journal);
    // Self mode settles over RPC_URL: one that does not answer is a reason not to start, said in one line.
    if (payment.mode === "self") {
      await withTimeout(backend.probe(), RPC_START_TIMEOUT_MS).catch((error) => {
        throw rpcStartError(error, payment.rpcUrl as string);
      });
    }
    const resourceServer = new x402ResourceServer(backend.facilitator)
      .register(payment.network, new ExactEvmScheme())
      .registerExtension(bazaarResourceServerExtension);

    const settings = { ...payment, payTo: payTo as `0x${string}` };
    // What each started operation says of itself (the dataset it loaded) is what its terms and documents say.
    const described = operations.map((operation) => {
      const own = started.get(operation.id)?.describe;
      return own ? { ...operation, ...own } : operation;
    });
    const termsById = new Map<string, PaymentTerms>();
    for (const operation of described) {
      termsById.set(
        operation.id,
        await buildPaymentTerms(operation, settings, config.baseUrl, resourceServer),
      );
    }
    const documents = {
      openapi: buildOpenApiDocument(described, FREE_ROUTES, termsById, config.baseUrl),
      catalog: buildCatalogDocument(
        described,
        FREE_ROUTES,
        termsById,
        config.baseUrl,
        {
          ...settings,
          mode: payment.mode,
        },
        started,
      ),
      x402: buildX402Manifest(described, termsById, config.baseUrl),
      agentSkills: buildAgentSkills(described, termsById, config.baseUrl),
      llmsTxt: buildLlmsTxt(described, FREE_ROUTES, config.baseUrl),
    };

    const metrics = new Metrics({ jobs: store.jobs });
    settlementJournal.registerMetrics(metrics.registry);
    const authorizations = chainRpc ? createAuthorizationChecker(chainRpc) : undefined;
    const gate = new PaymentGate({
      resourceServer,
      store,
      metrics,
      answers: x402HttpAnswers,
      authorizations,
      now: options.clock,
      settlementTimeoutMs: payment.settlementTimeoutMs,
      maxHeldPerPayer: config.jobs.maxHeldPerPayer,
      log: log.child({ component: "payments" }),
    });
    // Payments whose owner stopped (a crash) are resolved from the chain without waiting for the client.
    if (authorizations) {
      recovery = new RecoverySweeper({
        store,
        gate,
        metrics,
        log: log.child({ component: "payment-recovery" }),
        operations: new Map(
          operations.map((operation) => [
            operation.id,
            { operation, terms: termsById.get(operation.id) as PaymentTerms },
          ]),
        ),
        now: options.clock,
      });
      recovery.start();
    } else {
      log.warn(
        "without RPC_URL a payment left unfinished by a crash is resolved only when its client retries",
      );
    }
    // Jobs' payments are held until their result is ready: every API instance settles (or releases) them.
    if (authorizations && operations.some(holdsPayment)) {
      heldPayments = new HeldPaymentSettler({
        answers: x402HttpAnswers,
        store,
        resourceServer,
        metrics,
        authorizations,
        log: log.child({ component: "held-payments" }),
        settlementTimeoutMs: payment.settlementTimeoutMs,
        now: options.clock,
      });
      heldPayments.start();
    }
    let shuttingDown = false;
    const mcpSessions = new McpSessions(config.mcp, options.clock);

    const readiness = async (): Promise<Readiness> => {
      const checks: Record<string, string> = {};
      let ready = !shuttingDown;
      try {
        await withTimeout(store.ping(), PROBE_TIMEOUT_MS);
        checks.store = `ok (${store.kind})`;
      } catch (error) {
        ready = false;
        checks.store = `unavailable: ${(error as Error).message}`;
      }
      try {
        Object.assign(checks, await withTimeout(backend.probe(), PROBE_TIMEOUT_MS));
      } catch (error) {
        ready = false;
        checks[backend.mode === "facilitator" ? "facilitator" : "chain"] =
          `unavailable: ${(error as Error).message}`;
      }
      try {
        checks.worker = await describeWorkers(store.jobs, (options.clock ?? Date.now)(), config.jobs.leaseMs);
      } catch (error) {
        checks.worker = `unknown: ${(error as Error).message}`;
      }
      for (const [id, operation] of started) {
        if (!operation.probe) continue;
        try {
          checks[id] = await withTimeout(operation.probe(), PROBE_TIMEOUT_MS);
        } catch (error) {
          ready = false;
          checks[id] = `unavailable: ${(error as Error).message}`;
        }
      }
      if (settlerHold && !settlerHold.held()) {
        ready = false;
        checks.settler = "claim lost: another instance may hold this settlement key";
      }
      if (shuttingDown) checks.server = "shutting down";
      return { ready, checks };
    };

    const app = buildApp({
      operations,
      started,
      freeRoutes: FREE_ROUTES,
      termsById,
      documents,
      gate,
      store,
      metrics,
      log,
      readiness,
      isShuttingDown: () => shuttingDown,
      mcpSessions,
    });

    // The probes' own listener first: a port in use stops the start before the public port opens.
    if (config.healthPort !== undefined) {
      health = await startHealthListener(app.fetch, {
        host: config.host,
        port: config.healthPort,
        limits: config.http,
        log,
      });
    }
    // Connections capped in all and per client address, tight header/request/keep-alive timeouts, and
    // requests in flight capped per client (src/http/connection-limits.ts).
    const server = await new Promise<Server>((resolve, reject) => {
      const created = serve(
        {
          fetch: limitRequestsPerClient(app.fetch, config.http),
          port: config.port,
          hostname: config.host,
          serverOptions: httpServerOptions(config.http),
        },
        () => resolve(created as Server),
      ) as Server;
      guardConnections(created, config.http, log);
      created.once("error", (error) => reject(listenStartError(error, config.host, config.port)));
    });
    const { port } = server.address() as AddressInfo;
    const url = config.baseUrl;

    // Learn the facilitator's capabilities now; a facilitator that is down at start is retried per call.
    await resourceServer
      .initialize()
      .catch((error) => log.warn({ err: error }, "facilitator not reachable yet"));

    let stopping: Promise<void> | undefined;
    const stop = () => {
      stopping ??= (async () => {
        shuttingDown = true;
        log.info("shutting down: no new connections, finishing in-flight requests");
        const closed = new Promise<void>((resolve) => server.close(() => resolve()));
        // Keep-alive connections become idle as their last response goes out: close them as they do.
        const sweeper = setInterval(() => server.closeIdleConnections(), 50);
        server.closeIdleConnections();
        const deadline = setTimeout(() => server.closeAllConnections(), config.shutdownTimeoutMs).unref();
        await closed;
        clearInterval(sweeper);
        await withTimeout(gate.drain(), config.shutdownTimeoutMs).catch(() =>
          log.error("shutdown: a settlement did not finish in time"),
        );
        clearTimeout(deadline);
        await worker?.stop(config.shutdownTimeoutMs);
        await heldPayments?.stop();
        await recovery?.stop();
        gate.leases.stop();
        await mcpSessions.close();
        await closeOperations();
        await settlerHold?.release();
        await settlementJournal.close();
        await localChain?.stop();
        await health?.close();
        await store.close();
        log.info("stopped");
      })();
      return stopping;
    };
    log.info({ port, healthPort: health?.port, mode: payment.mode, baseUrl: url }, "listening");
    return { url, config, localChain, payTo: settings.payTo, healthPort: health?.port, stop };
  } catch (error) {
    await health?.close();
    await worker?.stop(0);
    await heldPayments?.stop();
    await recovery?.stop();
    await closeOperations();
    await settlerHold?.release();
    await settlementJournal.close();
    await localChain?.stop();
    await store.close();
    throw error;
  }
}
