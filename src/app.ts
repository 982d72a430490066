import type { Context } from "hono";
import { Hono } from "hono";
import { RegExpRouter } from "hono/router/reg-exp-router";
import type { AgentSkills } from "./catalog/agent-skills.ts";
import { AGENT_SKILLS_PREFIX } from "./catalog/agent-skills.ts";
import type { buildCatalogDocument } from "./catalog/catalog-document.ts";
import { FAVICON_PATH, FAVICON_SVG } from "./catalog/favicon.ts";
import { JobIdParam } from "./catalog/jobs-schema.ts";
import { LLMS_TXT_PATH } from "./catalog/llms-txt.ts";
import type { AnyFreeRoute, AnyOperation, StartedOperation } from "./catalog/operation.ts";
import { JOB_STATUS_PATH } from "./catalog/registry.ts";
import { JOBS_LIST_PATH } from "./catalog/sign-in-routes.ts";
import type { buildX402Manifest } from "./catalog/x402-manifest.ts";
import { corsPreflight, corsResponseHeaders } from "./http/cors.ts";
import { paidRoute } from "./http/paid-route.ts";
import { PAYWALL_STYLE, paywallScript } from "./http/paywall/paywall-assets.ts";
import { PAYWALL_SCRIPT_PATH, PAYWALL_STYLE_PATH } from "./http/paywall/paywall-page.ts";
import { readOperationInput } from "./http/read-input.ts";
import { type RequestVariables, requestContext } from "./http/request-context.ts";
import { respond } from "./http/response-headers.ts";
import { SignInDoor, type SignInOptions } from "./http/sign-in.ts";
import { jobView, POLL_AFTER_SECONDS } from "./jobs/job-view.ts";
import { FINAL_JOB_STATES } from "./jobs/queue.ts";
import { mountMcp } from "./mcp/mcp-door.ts";
import type { Metrics } from "./metrics.ts";
import {
  PAYMENT_REQUIRED_HEADER,
  PAYMENT_RESPONSE_HEADER,
  PAYMENT_SIGNATURE_HEADER,
  X_PAYMENT_RESPONSE_HEADER,
} from "./payments/headers.ts";
import type { PaymentGate } from "./payments/resource-server/gate.ts";
import { DID_DOCUMENT_PATHS } from "./payments/resource-server/offer-receipt.ts";
import type { SignedOffers } from "./payments/resource-server/signed-offers.ts";
import type { PaymentTerms } from "./payments/resource-server/terms.ts";
import { invalidRequest, Problem } from "./problem.ts";
import { DOWNLOAD_RESPONSE_HEADERS } from "./products/download.ts";
import { isStoreOutage } from "./store/outage.ts";
import type { Store, StoredOutcome } from "./store/store.ts";

export interface Readiness {
  ready: boolean;
  checks: Record<string, string>;
}

export interface Documents {
  openapi: unknown;
  catalog: ReturnType<typeof buildCatalogDocument>;
  x402: ReturnType<typeof buildX402Manifest>;
  agentSkills: AgentSkills;
  /** /llms.txt (text). */
  llmsTxt: string;
}

export interface AppServices {
  operations: readonly AnyOperation[];
  /** The operations bound to this service (by id); an operation without one answers 501. */
  started: ReadonlyMap<string, StartedOperation<unknown, unknown>>;
  freeRoutes: readonly AnyFreeRoute[];
  termsById: ReadonlyMap<string, PaymentTerms>;
  documents: Documents;
  gate: PaymentGate;
  store: Store;
  metrics: Metrics;
  log: import("pino").Logger;
  /** Signed offers (kept in the terms) and the did:web document that names their signer; absent: none. */
  offers?: { signed: SignedOffers; didDocument: unknown };
  readiness: () => Promise<Readiness>;
  isShuttingDown: () => boolean;
  /** x402 sign-in-with-x: a buyer downloads a product again, a payer lists and reads its jobs. */
  signIn: SignInOptions;
  now?: () => Date;
}

type Env = { Variables: RequestVariables };

const send = (c: Context, outcome: StoredOutcome) =>
  respond(c, outcome.body, { status: outcome.status, headers: outcome.headers });

const problemResponse = (c: Context, problem: Problem, instance?: string) =>
  send(c, problem.toResponse(instance));

const JSON_HEADERS = { "content-type": "application/json; charset=utf-8" };
const json = (c: Context, body: unknown) =>
  respond(c, JSON.stringify(body), { status: 200, headers: JSON_HEADERS });

/** The free routes registered below, all read-only. */
const FREE_GET_PATHS = [
  "/healthz",
  "/readyz",
  "/metrics",
  "/openapi.json",
  "/catalog.json",
  "/.well-known/x402",
  `${AGENT_SKILLS_PREFIX}/index.json`,
  LLMS_TXT_PATH,
  FAVICON_PATH,
  PAYWALL_SCRIPT_PATH,
  PAYWALL_STYLE_PATH,
  JOB_STATUS_PATH,
  JOBS_LIST_PATH,
];

/** What each operation says of itself now (an upstream down), by operation id; empty when all can serve. */
function unavailableNow(started: AppServices["started"]): Map<string, string> {
  const reasons = new Map<string, string>();
  for (const [id, operation] of started) {
    const reason = operation.unavailableNow?.();
    if (reason) reasons.set(id, reason);
  }
  return reasons;
}

/** The catalog with what an operation says of itself now over its start-time availability. */
function liveCatalog(catalog: Documents["catalog"], started: AppServices["started"]) {
  const reasons = unavailableNow(started);
  if (reasons.size === 0) return catalog;
  return {
    ...catalog,
    operations: catalog.operations.map((entry) =>
      reasons.has(entry.id) ? { ...entry, available: false, unavailable: reasons.get(entry.id) } : entry,
    ),
  };
}

/** /.well-known/x402 with the same live marks: a resource that cannot be bought now says so, and why. */
function liveX402(
  x402: Documents["x402"],
  operations: AppServices["operations"],
  started: AppServices["started"],
) {
  const byId = unavailableNow(started);
  if (byId.size === 0) return x402;
  const byRoute = new Map<string, string>(
    operations.flatMap((operation) => {
      const reason = byId.get(operation.id);
      return reason ? [[`${operation.method} ${operation.path}`, reason] as const] : [];
    }),
  );
  return {
    ...x402,
    items: x402.items.map((item) => {
      const reason = byRoute.get(`${item.method} ${new URL(item.resource).pathname}`);
      return reason ? { ...item, available: false, unavailable: reason } : item;
    }),
  };
}

/**
 * A request without a body (RFC 9112 §6.3: no Transfer-Encoding, and no or a zero Content-Length) to a
 * route that reads one: how indexers probe a route for its price (`curl -X POST <route>`, x402scan's
 * DISCOVERY.md). Unpaid, it is answered with the 402 and its terms, as the official x402 middleware does.
 */
const isBodylessProbe = (request: Request, operation: AnyOperation) =>
  operation.inputFrom === "body" &&
  request.headers.get("transfer-encoding") === null &&
  (request.headers.get("content-length") ?? "0") === "0";

/** Hono path syntax for a registry path ("/v1/jobs/{id}" → "/v1/jobs/:id"). */
const honoPath = (path: string) => path.replace(/\{(\w+)\}/g, ":$1");

type App = Hono<Env>;

/**
 * The HTTP app, one named step after another. Routes are matched in the order the steps add them:
 * the probes and documents, the job status, the free routes, one paid route per operation (products
 * among them), the MCP door, then the 405s for known paths and the error answers.
 */
export function buildApp(services: AppServices): App {
  // Every route is one the regular-expression router takes (see the skill files in addDocuments). A route it
  // cannot take makes it throw (when added or first matched) instead of Hono silently falling back
  // to a slower router for every route.
  const app: App = new Hono<Env>({ router: new RegExpRouter() });
  const signIn = new SignInDoor(services.signIn, {
    store: services.store,
    log: services.log,
    now: services.now ?? (() => new Date()),
  });
  useRequestContext(app, services);
  addProbes(app, services);
  addDocuments(app, services);
  addPaywallAssets(app);
  addJobStatus(app, services, signIn);
  addFreeRoutes(app, services);
  addPaidRoutes(app, services, signIn);
  mountMcp(app, { ...services, signedOffers: services.offers?.signed });
  addWrongMethodAnswers(app, services);
  answerErrors(app, services);
  return app;
}

/** Request id, log and metrics for every request, and CORS (the payment headers readable by browsers). */
function useRequestContext(app: App, { log, metrics }: AppServices): void {
  const corsHeaders = corsResponseHeaders([
    PAYMENT_REQUIRED_HEADER,
    PAYMENT_RESPONSE_HEADER,
    X_PAYMENT_RESPONSE_HEADER,
    "x-request-id",
    "retry-after",
    "x-sign-in-with-x",
    ...DOWNLOAD_RESPONSE_HEADERS,
  ]);
  app.use("*", requestContext({ log, metrics, headers: corsHeaders }));
  app.options("*", corsPreflight());
}

/** /healthz, /readyz and /metrics (also served on HEALTH_PORT). */
function addProbes(app: App, { isShuttingDown, readiness, metrics }: AppServices): void {
  app.get("/healthz", (c) =>
    isShuttingDown() ? c.json({ status: "shutting-down" }, 503) : c.json({ status: "ok" }),
  );
  app.get("/readyz", async (c) => {
    const { ready, checks } = await readiness();
    return c.json({ status: ready ? "ready" : "not-ready", checks }, ready ? 200 : 503);
  });
  app.get("/metrics", async (c) => {
    c.header("content-type", metrics.registry.contentType);
    return c.body(await metrics.registry.metrics());
  });
}

/** The discovery documents, built at start-up; the catalog and the x402 manifest with live availability. */
function addDocuments(app: App, { documents, operations, started, offers }: AppServices): void {
  // The did:web document that names the key signing offers and receipts (offer-receipt.ts).
  if (offers) {
    for (const path of DID_DOCUMENT_PATHS) {
      app.get(path, (c) =>
        respond(c, JSON.stringify(offers.didDocument), {
          status: 200,
          headers: { "content-type": "application/did+json" },
        }),
      );
    }
  }
  app.get("/openapi.json", (c) => json(c, documents.openapi));
  app.get("/catalog.json", (c) => json(c, liveCatalog(documents.catalog, started)));
  app.get("/.well-known/x402", (c) => json(c, liveX402(documents.x402, operations, started)));
  app.get(`${AGENT_SKILLS_PREFIX}/index.json`, (c) => json(c, documents.agentSkills.index));
  app.get(LLMS_TXT_PATH, (c) =>
    respond(c, documents.llmsTxt, { status: 200, headers: { "content-type": "text/plain; charset=utf-8" } }),
  );
  app.get(FAVICON_PATH, (c) =>
    respond(c, FAVICON_SVG, { status: 200, headers: { "content-type": "image/svg+xml" } }),
  );
  // One static route per skill file: a parameter before "/SKILL.md" would make Hono fall back from
  // its one-regular-expression router to a slower tree for every route.
  for (const [path, file] of documents.agentSkills.files) {
    app.get(path, (c) =>
      respond(c, new Uint8Array(file), {
        status: 200,
        headers: { "content-type": "text/markdown; charset=utf-8" },
      }),
    );
  }
}

/** The paywall page's script and style (src/http/paywall/): the page loads nothing from anywhere else. */
function addPaywallAssets(app: App): void {
  const asset = (contentType: string) => ({
    "content-type": contentType,
    "cache-control": "public, max-age=300",
    "x-content-type-options": "nosniff",
  });
  app.get(PAYWALL_SCRIPT_PATH, async (c) =>
    respond(c, await paywallScript(), { status: 200, headers: asset("text/javascript; charset=utf-8") }),
  );
  app.get(PAYWALL_STYLE_PATH, (c) =>
    respond(c, PAYWALL_STYLE, { status: 200, headers: asset("text/css; charset=utf-8") }),
  );
}

/**
 * A job's state, result and payment (free: the job was paid for when it was queued; its id reads it, or a
 * sign-in by the wallet that paid), and the list of a signed-in wallet's jobs (how a lost job id is found).
 */
function addJobStatus(app: App, { store, gate, operations }: AppServices, signIn: SignInDoor): void {
  const asyncOperationIds = operations.filter((operation) => operation.kind === "async").map((op) => op.id);
  app.get(JOBS_LIST_PATH, (c) => signIn.listJobs(c, asyncOperationIds, (record) => gate.jobDeadline(record)));
  app.get(honoPath(JOB_STATUS_PATH), async (c) => {
    const id = c.req.param("id");
    const parsed = JobIdParam.safeParse(id);
    if (!parsed.success) throw invalidRequest([{ pointer: "/id", message: "must be a UUID" }]);
    const job = await store.jobs.get(parsed.data);
    if (!job) throw Problem.of("job-not-found", `no job with id ${parsed.data}`);
    const record = job.paymentKey ? await store.getPayment(job.paymentKey) : undefined;
    await signIn.checkJobReader(c, job, record);
    if (!FINAL_JOB_STATES.includes(job.state)) {
      c.header("retry-after", String(POLL_AFTER_SECONDS));
    }
    c.header("cache-control", "no-store");
    const payment = record && { record, deadline: gate.jobDeadline(record) };
    return c.json(jobView(job, payment));
  });
}

/** The registry's free routes. */
function addFreeRoutes(app: App, { freeRoutes }: AppServices): void {
  for (const route of freeRoutes) {
    app.get(honoPath(route.path), async (c) => json(c, await route.handler()));
  }
}

/** One paid route per operation: input checked first, then the HTTP door to the payment gate. */
function addPaidRoutes(app: App, services: AppServices, signIn: SignInDoor): void {
  const { operations, termsById, gate, log } = services;
  const now = services.now ?? (() => new Date());
  const testChain = services.documents.catalog.payment.testChain;
  for (const operation of operations) {
    const terms = termsById.get(operation.id) as PaymentTerms;
    // A product bought once is downloaded again by signing in with the paying wallet.
    const productSignIn =
      operation.kind === "product"
        ? (c: Context, handler: StartedOperation<unknown, unknown>) =>
            signIn.product(c, operation, terms, handler)
        : undefined;
    const paid = paidRoute({ gate, operation, terms, log, now, testChain, signIn: productSignIn });
    app.on(operation.method, honoPath(operation.path), async (c: Context<Env>) => {
      const paymentHeader = c.req.header(PAYMENT_SIGNATURE_HEADER);
      // A body that is present is read and checked first (an invalid one is a 400 before any 402); an
      // unpaid probe without one gets the 402 (a paid call without its required body is a 400).
      const input =
        !paymentHeader && isBodylessProbe(c.req.raw, operation)
          ? undefined
          : await readOperationInput(c, operation);
      const handler = services.started.get(operation.id);
      if (!handler) {
        throw Problem.of(
          "not-implemented",
          `${operation.id} is not available on this service yet; no payment is asked for`,
        );
      }
      return paid(c, input, handler);
    });
  }
}

/** A known path with the wrong method is a 405 naming the allowed ones, not a 404. */
function addWrongMethodAnswers(app: App, { documents, freeRoutes, operations }: AppServices): void {
  const methodsByPath = new Map<string, string[]>(
    [...FREE_GET_PATHS, ...documents.agentSkills.files.keys(), ...freeRoutes.map((route) => route.path)].map(
      (path) => [path, ["GET"]],
    ),
  );
  for (const operation of operations) {
    methodsByPath.set(operation.path, [...(methodsByPath.get(operation.path) ?? []), operation.method]);
  }
  for (const [path, methods] of methodsByPath) {
    app.all(honoPath(path), () => {
      throw Problem.of("method-not-allowed", `${path} accepts ${methods.join(", ")}`, {
        headers: { allow: methods.join(", ") },
      });
    });
  }
}

/** 404 for an unknown path; a thrown Problem as problem+json; a store outage as 503; anything else as 500. */
function answerErrors(app: App, { log }: AppServices): void {
  app.notFound((c) => problemResponse(c, Problem.of("not-found", `nothing at ${c.req.path}`)));
  app.onError((error, c) => {
    if (error instanceof Problem) return problemResponse(c, error, c.req.path);
    if (isStoreOutage(error)) {
      log.warn({ err: error, requestId: c.get("requestId") }, "the store cannot be reached");
      const unavailable = Problem.of(
        "store-unavailable",
        "the service's database cannot be reached right now; retry shortly",
        { headers: { "retry-after": "5" } },
      );
      return problemResponse(c, unavailable, c.req.path);
    }
    log.error({ err: error, requestId: c.get("requestId") }, "unhandled error");
    return problemResponse(
      c,
      Problem.of("internal-error", "the request failed unexpectedly; nothing was charged"),
      c.req.path,
    );
  });
}
