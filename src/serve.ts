import type { Server } from "node:http";
import type { AddressInfo } from "node:net";
import { serve } from "@hono/node-server";
import { type FacilitatorClient, x402ResourceServer } from "@x402/core/server";
import type { PaymentRequirements } from "@x402/core/types";
import { ExactEvmScheme } from "@x402/evm/exact/server";
import { bazaarResourceServerExtension } from "@x402/extensions/bazaar";
import type { Hono } from "hono";
import type { Logger } from "pino";
import { privateKeyToAccount } from "viem/accounts";
import { buildApp, type Documents, type Readiness } from "./app.ts";
import { FREE_ROUTES, OPERATIONS } from "./catalog/registry.ts";
import { devPrivateKey } from "./chain/dev-accounts.ts";
import { type LocalChain, startLocalChain } from "./chain/local-chain.ts";
import type { Config } from "./config.ts";
import type { AnyOperation, StartedOperation } from "./contract/operation.ts";
import { buildAgentSkills } from "./documents/agent-skills.ts";
import { buildCatalogDocument } from "./documents/catalog-document.ts";
import { buildLlmsTxt } from "./documents/llms-txt.ts";
import { buildOpenApiDocument } from "./documents/openapi.ts";
import { buildX402Manifest } from "./documents/x402-manifest.ts";
import { guardConnections, httpServerOptions, limitRequestsPerClient } from "./http/connection-limits.ts";
import { type HealthListener, startHealthListener } from "./http/health-listener.ts";
import { x402HttpAnswers } from "./http/x402-answers.ts";
import type { Job } from "./jobs/queue.ts";
import { createWorker, describeWorkers, jobHandlers } from "./jobs/run-workers.ts";
import { Metrics } from "./metrics.ts";
import type { OperationEnvironment, ServiceOperation } from "./operation-environment.ts";
import { createPaymentBackend, type PaymentBackend } from "./payments/facilitator/facilitator.ts";
import { PaymentGate } from "./payments/resource-server/gate.ts";
import { whyHeldPaymentUnpayable } from "./payments/resource-server/held-payment-precheck.ts";
import { HeldPaymentSettler } from "./payments/resource-server/held-payment-settler.ts";
import {
  didDocument,
  type OfferReceiptKey,
  OfferReceipts,
  offerReceiptKey,
  type PublishedSigner,
  publishedSigner,
  receiptedSettlement,
} from "./payments/resource-server/offer-receipt.ts";
import { holdsPayment } from "./payments/resource-server/operation-kinds.ts";
import { PayerCover } from "./payments/resource-server/payer-cover.ts";
import { RecoverySweeper } from "./payments/resource-server/recovery-sweeper.ts";
import { SignedOffers } from "./payments/resource-server/signed-offers.ts";
import { buildRouteTerms, type PaymentTerms } from "./payments/resource-server/terms.ts";
import { createAuthorizationChecker } from "./payments/settler/authorization-state.ts";
import { journalSettlements } from "./payments/settler/settlement-journal.ts";
import { holdSettlerAccount, type SettlerHold } from "./payments/settler/settler-claim.ts";
import { createTokenBalances } from "./payments/settler/token-balances.ts";
import { channelReader, VoucherClaimer } from "./payments/vouchers/voucher-claimer.ts";
import { VoucherGate } from "./payments/vouchers/voucher-gate.ts";
import { resolveVoucherOffer } from "./payments/vouchers/voucher-offer.ts";
import type { VoucherOffer } from "./payments/vouchers/voucher-terms.ts";
import { WithdrawalWatch } from "./payments/vouchers/withdrawal-watch.ts";
import { Problem } from "./problem.ts";
import { ShutdownStack } from "./shutdown-stack.ts";
import { databaseStartError, listenStartError, rpcStartError } from "./startup-error.ts";
import { openStore } from "./store/open-store.ts";
import type { Store } from "./store/store.ts";

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

type StartOptions = { operations?: readonly ServiceOperation[]; clock?: () => number };
type Started = Map<string, StartedOperation<unknown, unknown>>;

/** What every start-up step is given: the settings, the log, the clock, the stack it pushes its closer on. */
interface StartContext {
  config: Config;
  log: Logger;
  clock?: () => number;
  shutdown: ShutdownStack;
}

/**
 * The composition root, one named step after another: store, chain, settler, operations, payments,
 * documents, worker, app, listeners. Each step that opens something pushes its closer on one
 * shutdown stack as it succeeds; `stop()` and a start-up that fails halfway both close that stack,
 * so exactly what was opened is closed, the last opened first.
 */
export async function startService(
  config: Config,
  log: Logger,
  options: StartOptions = {},
): Promise<RunningService> {
  const operations = options.operations ?? OPERATIONS;
  const shutdown = new ShutdownStack((name, error) =>
    log.error({ err: error }, `shutdown: closing the ${name} failed`),
  );
  const start: StartContext = { config, log, clock: options.clock, shutdown };
  try {
    const store = await openServiceStore(start);
    const chain = await startChain(start);
    // What the chain lost of the settler's transactions goes to the ledger, a metric and the log.
    const settlementJournal = journalSettlements(store, log, chain.inProcess);
    shutdown.push("settlement journal", () => settlementJournal.close());
    const settlerHold = await claimSettlerAccount(start, store);
    const now = options.clock ? () => new Date((options.clock as () => number)()) : () => new Date();
    const env = { config, log, now, store, localChain: chain.localChain };
    const started = await startOperations(start, operations, env, chain.rpcUrl);
    const backend = await connectPaymentBackend(config.payment, chain, settlementJournal.journal);
    shutdown.push("settler", () => backend.stop());
    const resourceServer = new x402ResourceServer(backend.facilitator)
      .register(config.payment.network, new ExactEvmScheme())
      .registerExtension(bazaarResourceServerExtension);
    const vouchers = await resolveVoucherOffer({
      vouchers: config.payment.vouchers,
      network: config.payment.network,
      facilitator: backend.facilitator,
      settlerAddress: backend.settlerAddress,
      timeoutMs: config.payment.facilitatorTimeoutMs,
      chainReadable: chain.rpcUrl !== undefined,
    });
    log.info({ vouchers: vouchers.why }, "payment schemes");
    const offerKey = offerReceiptKeyOf(start);
    const { termsById, documents } = await describeOperations(
      config,
      { payTo: chain.payTo, voucherOffer: vouchers.offer },
      resourceServer,
      operations,
      started,
      offerKey && publishedSigner(offerKey, config.offerReceipt.includeTransaction),
    );
    const offers = offerKey && signOffersAndReceipts(start, offerKey, termsById, operations);
    const metrics = new Metrics({ jobs: store.jobs });
    settlementJournal.registerMetrics(metrics.registry);
    const payments = startPayments(
      start,
      {
        store,
        metrics,
        resourceServer,
        chainRpc: chain.rpcUrl,
        receipts: offers?.receipts,
        ...(vouchers.offer ? { voucherFacilitator: backend.facilitator } : {}),
      },
      operations,
      termsById,
    );
    await startInProcessWorker(start, store, operations, started, payments);

    let shuttingDown = false;
    const isShuttingDown = () => shuttingDown;
    const readiness = checkReadiness({
      config,
      store,
      backend,
      started,
      settlerHold,
      isShuttingDown,
      clock: options.clock,
    });
    const app = buildApp({
      operations,
      started,
      freeRoutes: FREE_ROUTES,
      termsById,
      documents,
      gate: payments.gate,
      store,
      metrics,
      log,
      ...(offers ? { offers: { signed: offers.signed, didDocument: didDocument(offers.receipts.key) } } : {}),
      readiness,
      isShuttingDown,
      signIn: {
        settings: { origin: config.baseUrl, network: config.payment.network },
        downloadMs: config.signInDownloadMs,
      },
    });
    // Every route's and tool's first offers are signed before the port opens.
    await offers?.signed.ready();
    // The probes' own listener first: a port in use stops the start before the public port opens.
    const health = await openHealthListener(start, app);
    const port = await listen(start, app, payments.gate);

    // Learn the facilitator's capabilities now; a facilitator that is down at start is retried per call.
    await resourceServer
      .initialize()
      .catch((error) => log.warn({ err: error }, "facilitator not reachable yet"));

    let stopping: Promise<void> | undefined;
    const stop = () => {
      stopping ??= (async () => {
        shuttingDown = true;
        log.info("shutting down: no new connections, finishing in-flight requests");
        await shutdown.close(config.shutdownTimeoutMs);
        log.info("stopped");
      })();
      return stopping;
    };
    log.info(
      { port, healthPort: health?.port, mode: config.payment.mode, baseUrl: config.baseUrl },
      "listening",
    );
    return {
      url: config.baseUrl,
      config,
      localChain: chain.localChain,
      payTo: chain.payTo,
      healthPort: health?.port,
      stop,
    };
  } catch (error) {
    // Each closer that fails is logged by the stack; the start's own error is the one to report.
    await shutdown.close(0).catch(() => {});
    throw error;
  }
}

async function openServiceStore({ config, clock, shutdown }: StartContext) {
  const store = await openStore(config.database, { now: clock }).catch((error) => {
    throw databaseStartError(error, config.database);
  });
  shutdown.push("store", () => store.close());
  return store;
}

type InProcessSettlement = NonNullable<Parameters<typeof createPaymentBackend>[1]>;

/** How this instance reaches the chain. */
interface ChainAccess {
  /** Local mode: the test chain this service started. */
  localChain?: LocalChain;
  /** Local and self modes: the key and RPC this process settles with. */
  inProcess?: InProcessSettlement;
  /**
   * Where the token's record of an authorization is read (RPC_URL is optional in facilitator mode):
   * unknown outcomes are settled from it, and a job's held payment is never decided without it.
   */
  rpcUrl?: string;
  /** Who receives payments (local mode: the local chain's dev account #1 unless X402_PAY_TO says). */
  payTo: `0x${string}`;
}

async function startChain({ config, log, shutdown }: StartContext): Promise<ChainAccess> {
  const payment = config.payment;
  if (payment.mode === "local") {
    const localChain = await startLocalChain({
      port: config.localChain.port,
      statePath: config.localChain.statePath,
      log,
      dataDir: config.dataDir,
    });
    shutdown.push("local chain", () => localChain.stop());
    const inProcess = { privateKey: devPrivateKey(0), rpcUrl: localChain.rpcUrl, pollingIntervalMs: 50 };
    const payTo = payment.payTo ?? localChain.accounts.payTo.address;
    return { localChain, inProcess, rpcUrl: inProcess.rpcUrl, payTo };
  }
  const payTo = payment.payTo as `0x${string}`;
  if (payment.mode === "self") {
    const inProcess = {
      privateKey: payment.settlerPrivateKey as `0x${string}`,
      rpcUrl: payment.rpcUrl as string,
      pollingIntervalMs: 250,
    };
    return { inProcess, rpcUrl: inProcess.rpcUrl, payTo };
  }
  return { rpcUrl: payment.rpcUrl, payTo };
}

/** Self mode: one instance at a time settles with the key (settler-claim.ts). */
async function claimSettlerAccount(
  { config, log, shutdown }: StartContext,
  store: Store,
): Promise<SettlerHold | undefined> {
  const payment = config.payment;
  if (payment.mode !== "self") return undefined;
  const settler = privateKeyToAccount(payment.settlerPrivateKey as `0x${string}`).address;
  const hold = await holdSettlerAccount(store, payment.network, settler, log);
  shutdown.push("settlement key claim", () => hold.release());
  return hold;
}

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

/** Binds each operation to this service (by id); one without a handler or `start` answers 501. */
async function startOperations(
  { shutdown }: StartContext,
  operations: readonly ServiceOperation[],
  env: OperationEnvironment,
  chainRpc: string | undefined,
): Promise<Started> {
  const started: Started = new Map();
  // Pushed first: an operation that fails to start leaves the ones started before it to be closed.
  shutdown.push("operations", () =>
    Promise.all([
      ...[...started.values()].map((operation) => operation.close?.()),
      ...operations.map((operation) => operation.close?.()),
    ]),
  );
  for (const operation of operations) {
    if (operation.start) {
      started.set(operation.id, await operation.start(env));
    } else if (operation.handler) {
      started.set(operation.id, { handle: operation.handler });
    }
  }
  // Without chain reads a job's held payment could never be decided: async operations say so.
  if (!chainRpc) {
    for (const operation of operations.filter(holdsPayment)) {
      const held = started.get(operation.id);
      if (held) started.set(operation.id, withoutChainAccess(held));
    }
  }
  return started;
}

async function connectPaymentBackend(
  payment: Config["payment"],
  chain: ChainAccess,
  journal: Parameters<typeof createPaymentBackend>[2],
): Promise<PaymentBackend> {
  const backend = createPaymentBackend(payment, chain.inProcess, journal);
  // Self mode settles over RPC_URL: one that does not answer is a reason not to start, said in one line.
  if (payment.mode === "self") {
    await withTimeout(backend.probe(), RPC_START_TIMEOUT_MS).catch((error) => {
      backend.stop();
      throw rpcStartError(error, payment.rpcUrl as string);
    });
  }
  return backend;
}

/** Each operation's 402 terms, and the documents (/openapi.json, /catalog.json, …) built from them. */
async function describeOperations(
  config: Config,
  quoted: { payTo: `0x${string}`; voucherOffer?: VoucherOffer },
  resourceServer: x402ResourceServer,
  operations: readonly AnyOperation[],
  started: Started,
  signer?: PublishedSigner,
): Promise<{ termsById: Map<string, PaymentTerms>; documents: Documents }> {
  const settings = { ...config.payment, ...quoted };
  // What each started operation says of itself (the dataset it loaded) is what its terms and documents say.
  const described = operations.map((operation) => {
    const own = started.get(operation.id)?.describe;
    return own ? { ...operation, ...own } : operation;
  });
  const termsById = await buildRouteTerms(described, settings, config.baseUrl, resourceServer);
  const documents = {
    openapi: buildOpenApiDocument(described, FREE_ROUTES, termsById, config.baseUrl, signer),
    catalog: buildCatalogDocument(
      described,
      FREE_ROUTES,
      termsById,
      config.baseUrl,
      { ...settings, mode: config.payment.mode },
      started,
    ),
    x402: buildX402Manifest(described, termsById, config.baseUrl, signer),
    agentSkills: buildAgentSkills(described, termsById, config.baseUrl, signer),
    llmsTxt: buildLlmsTxt(described, FREE_ROUTES, config.baseUrl, signer),
  };
  return { termsById, documents };
}

/** The operator's key for signed offers and receipts; unset outside local mode: none are signed. */
function offerReceiptKeyOf({ config, log }: StartContext): OfferReceiptKey | undefined {
  const { signingKey } = config.offerReceipt;
  if (!signingKey) {
    log.warn(
      "OFFER_RECEIPT_SIGNING_KEY is not set: 402s carry no signed offers and paid answers no signed receipts",
    );
    return undefined;
  }
  return offerReceiptKey(signingKey, config.baseUrl, config.payment.network);
}

/**
 * Signed offers and receipts (the x402 offer-receipt extension) with the operator's key: each route's
 * terms kept carrying fresh offers, and the signer of receipts.
 */
function signOffersAndReceipts(
  { config, log, shutdown }: StartContext,
  key: OfferReceiptKey,
  termsById: ReadonlyMap<string, PaymentTerms>,
  operations: readonly AnyOperation[],
): { receipts: OfferReceipts; signed: SignedOffers } {
  const receipts = new OfferReceipts(key, config.offerReceipt.includeTransaction);
  const signed = new SignedOffers(receipts, log.child({ component: "signed-offers" }));
  for (const operation of operations) {
    void signed.keep(termsById.get(operation.id) as PaymentTerms, operation.id);
  }
  signed.start();
  shutdown.push("signed offers", () => signed.stop());
  log.info({ signer: key.address, did: key.did }, "offers and receipts are signed");
  return { receipts, signed };
}

interface Payments {
  gate: PaymentGate;
  heldPayments?: HeldPaymentSettler;
  /** Why a held job's payment can no longer settle, checked before the job runs. */
  whyUnpayable?: (job: Job) => Promise<string | undefined>;
}

/**
 * The claim policy of vouchers (docs/payments.md): the claimer (threshold, timer, shutdown) and the
 * withdrawal watch that has it claim at once when a payer initiates a withdrawal. What the gate needs
 * of them: the watch, and the claimer's ear for every charge.
 */
function startVoucherClaims(
  { config, log, shutdown }: Pick<StartContext, "config" | "log" | "shutdown">,
  facilitator: FacilitatorClient,
  quote: PaymentRequirements,
  store: Store,
  rpcUrl: string,
): Pick<ConstructorParameters<typeof VoucherGate>[0], "withdrawals" | "charged"> {
  const settings = config.payment.vouchers;
  const claimer = new VoucherClaimer({
    store: store.vouchers,
    facilitator,
    quote,
    readChannel: channelReader(rpcUrl),
    threshold: BigInt(settings.claimThreshold),
    intervalMs: settings.claimIntervalMs,
    log: log.child({ component: "voucher-claimer" }),
  });
  const withdrawals = new WithdrawalWatch({
    rpcUrl,
    intervalMs: settings.watchIntervalMs,
    // From accepting a voucher to its claim landing: the handler, the watch's next look, the claim's wait.
    claimLandingMs:
      config.http.requestTimeoutMs + settings.watchIntervalMs + config.payment.settlementTimeoutMs,
    isOurs: async (channelId) => (await store.vouchers.getChannel(channelId)) !== undefined,
    claimNow: () => void claimer.claimAll(),
    log: log.child({ component: "withdrawal-watch" }),
  });
  claimer.start();
  withdrawals.start();
  // Pushed before the public listener: the last claim runs once the listener drained the calls in flight.
  shutdown.push("voucher claimer", async () => {
    withdrawals.stop();
    await claimer.stop();
  });
  void claimer.claimAll();
  return {
    withdrawals,
    charged: (channel) =>
      claimer.charged(channel, withdrawals.mirrorMayMiss(channel.channelId, channel.onchainSyncedAt)),
  };
}

/** The payment gate, and what resolves payments without their client: the recovery sweeper, the held-payment settler. */
function startPayments(
  { config, log, clock, shutdown }: StartContext,
  parts: {
    store: Store;
    metrics: Metrics;
    resourceServer: x402ResourceServer;
    chainRpc?: string;
    receipts?: OfferReceipts;
    /** The facilitator that verifies and settles vouchers, when the terms offer them. */
    voucherFacilitator?: FacilitatorClient;
  },
  operations: readonly AnyOperation[],
  termsById: ReadonlyMap<string, PaymentTerms>,
): Payments {
  const { store, metrics, resourceServer, chainRpc, receipts, voucherFacilitator } = parts;
  const voucherQuote = [...termsById.values()].find((terms) => terms.voucher)?.voucher;
  const voucherClaims =
    voucherFacilitator && voucherQuote && chainRpc
      ? startVoucherClaims({ config, log, shutdown }, voucherFacilitator, voucherQuote, store, chainRpc)
      : undefined;
  const vouchers =
    voucherFacilitator &&
    new VoucherGate({
      facilitator: voucherFacilitator,
      store: store.vouchers,
      answers: x402HttpAnswers,
      // A call holds its channel while its deposit lands and its handler runs: never taken over while live.
      leaseMs: config.http.requestTimeoutMs + config.payment.settlementTimeoutMs,
      now: clock ?? Date.now,
      ...voucherClaims,
    });
  const authorizations = chainRpc ? createAuthorizationChecker(chainRpc) : undefined;
  const heldLog = log.child({ component: "held-payments" });
  /** Lets released jobs' payments go at once: the settler, once it exists. */
  let wakeSettler = () => {};
  // Held admissions read the balance through the cover watch, which releases what a payer's transfers uncover.
  const cover =
    chainRpc && operations.some(holdsPayment)
      ? new PayerCover({
          store,
          chain: createTokenBalances(chainRpc),
          network: config.payment.network,
          ...(authorizations ? { authorizations } : {}),
          log: heldLog.child({ part: "cover" }),
          onReleased: () => wakeSettler(),
        })
      : undefined;
  const gate = new PaymentGate({
    resourceServer,
    store,
    metrics,
    answers: x402HttpAnswers,
    authorizations,
    receipts,
    now: clock,
    settlementTimeoutMs: config.payment.settlementTimeoutMs,
    maxHeldPerPayer: config.jobs.maxHeldPerPayer,
    ...(cover ? { balances: cover } : chainRpc ? { balances: createTokenBalances(chainRpc) } : {}),
    log: log.child({ component: "payments" }),
    ...(vouchers ? { vouchers } : {}),
  });
  shutdown.push("payment leases", () => gate.leases.stop());
  // Payments whose owner stopped (a crash) are resolved from the chain without waiting for the client.
  if (authorizations) {
    const recovery = new RecoverySweeper({
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
      now: clock,
    });
    recovery.start();
    shutdown.push("payment recovery", () => recovery.stop());
  } else {
    log.warn("without RPC_URL a payment left unfinished by a crash is resolved only when its client retries");
  }
  // Jobs' payments are held until their result is ready: every API instance settles (or releases) them.
  if (!authorizations || !operations.some(holdsPayment)) return { gate };
  const heldPayments = new HeldPaymentSettler({
    answers: x402HttpAnswers,
    store,
    resourceServer,
    metrics,
    authorizations,
    log: heldLog,
    settlementTimeoutMs: config.payment.settlementTimeoutMs,
    receipted: (settlement, record) =>
      receiptedSettlement(
        receipts,
        settlement,
        config.baseUrl + operationPath(operations, record.operationId),
        heldLog.child({ paymentKey: record.paymentKey }),
      ),
    now: clock,
  });
  heldPayments.start();
  shutdown.push("held payments", () => heldPayments.stop());
  wakeSettler = () => heldPayments.wake();
  if (cover) {
    cover.start();
    shutdown.push("payer cover watch", () => cover.stop());
  }
  const precheck = {
    store,
    authorizations,
    log: heldLog,
    ...(chainRpc ? { balances: createTokenBalances(chainRpc) } : {}),
  };
  return { gate, heldPayments, whyUnpayable: (job) => whyHeldPaymentUnpayable(precheck, job) };
}

/** The path an operation is sold at, by its id (a held payment's record names its operation by id). */
const operationPath = (operations: readonly AnyOperation[], operationId: string) =>
  operations.find((operation) => operation.id === operationId)?.path ?? `/${operationId}`;

/** `serve` runs a worker of its own unless told not to, when an asynchronous operation is served. */
async function startInProcessWorker(
  { config, log, clock, shutdown }: StartContext,
  store: Store,
  operations: readonly AnyOperation[],
  started: Started,
  payments: Payments,
): Promise<void> {
  if (!config.jobs.inProcessWorker || !operations.some((operation) => operation.kind === "async")) return;
  const { heldPayments, whyUnpayable } = payments;
  const worker = createWorker(
    config,
    store.jobs,
    jobHandlers(started),
    log,
    clock,
    () => heldPayments?.wake(),
    whyUnpayable,
  );
  // Pushed before it starts: a start that fails halfway (liveness reported, no loop yet) is stopped too.
  shutdown.push("job worker", (graceMs) => worker.stop(graceMs));
  await worker.start();
}

/** /readyz: the store, the chain or facilitator, the workers, each operation's upstream, the settlement key. */
function checkReadiness(parts: {
  config: Config;
  store: Store;
  backend: PaymentBackend;
  started: Started;
  settlerHold?: SettlerHold;
  isShuttingDown: () => boolean;
  clock?: () => number;
}): () => Promise<Readiness> {
  const { config, store, backend, started, settlerHold, isShuttingDown, clock } = parts;
  return async () => {
    const checks: Record<string, string> = {};
    let ready = !isShuttingDown();
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
      checks.worker = await describeWorkers(store.jobs, (clock ?? Date.now)(), config.jobs.leaseMs);
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
    if (isShuttingDown()) checks.server = "shutting down";
    return { ready, checks };
  };
}

type App = Pick<Hono, "fetch">;

/** HEALTH_PORT: /healthz, /readyz and /metrics on a listener of their own (health-listener.ts). */
async function openHealthListener(
  { config, log, shutdown }: StartContext,
  app: App,
): Promise<HealthListener | undefined> {
  if (config.healthPort === undefined) return undefined;
  const health = await startHealthListener(app.fetch, {
    host: config.host,
    port: config.healthPort,
    limits: config.http,
    log,
  });
  shutdown.push("health listener", () => health.close());
  return health;
}

/**
 * The public port. Connections capped in all and per client address, tight header/request/keep-alive
 * timeouts, and requests in flight capped per client (src/http/connection-limits.ts). Its closer stops
 * accepting, lets requests in flight and their settlements finish within the grace, then closes the rest.
 */
async function listen({ config, log, shutdown }: StartContext, app: App, gate: PaymentGate): Promise<number> {
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
  shutdown.push("public listener", async (graceMs) => {
    const closed = new Promise<void>((resolve) => server.close(() => resolve()));
    // Keep-alive connections become idle as their last response goes out: close them as they do.
    const sweeper = setInterval(() => server.closeIdleConnections(), 50);
    server.closeIdleConnections();
    const deadline = setTimeout(() => server.closeAllConnections(), graceMs).unref();
    await closed;
    clearInterval(sweeper);
    await withTimeout(gate.drain(), graceMs).catch(() =>
      log.error("shutdown: a settlement did not finish in time"),
    );
    clearTimeout(deadline);
  });
  return (server.address() as AddressInfo).port;
}
