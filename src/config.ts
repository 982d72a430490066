import { isIP } from "node:net";
import path from "node:path";
import { z } from "zod";
import { parseAllowHost } from "./operations/research-brief/fetch-allow.ts";

/** USDC on Base mainnet; the local test chain places the same contract at the same address. */
export const BASE_USDC_ADDRESS = "0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913";
export const BASE_NETWORK = "eip155:8453";

const address = z.string().regex(/^0x[0-9a-fA-F]{40}$/, "must be a 0x-prefixed 20-byte hex address");
const privateKey = z.string().regex(/^0x[0-9a-fA-F]{64}$/, "must be a 0x-prefixed 32-byte hex private key");
const port = z.coerce
  .number({ error: "must be a port number (1-65535)" })
  .int("must be a port number (1-65535)")
  .min(1)
  .max(65535);
const httpUrl = z.url({ protocol: /^https?$/, error: "must be an http(s) URL" });
const optional = <T extends z.ZodType>(schema: T) =>
  z.preprocess((value) => (value === "" ? undefined : value), schema.optional());

/** Contracts the chain-arbitrage-snapshot operation reads; unset → Base mainnet (or the local chain's DEX). */
export const ARBITRAGE_ADDRESS_VARIABLES = {
  usdc: "ARBITRAGE_USDC",
  weth: "ARBITRAGE_WETH",
  uniswapV3Factory: "ARBITRAGE_UNISWAP_V3_FACTORY",
  uniswapV3Quoter: "ARBITRAGE_UNISWAP_V3_QUOTER",
  aerodromeRouter: "ARBITRAGE_AERODROME_ROUTER",
  aerodromeFactory: "ARBITRAGE_AERODROME_FACTORY",
  slipstreamFactory: "ARBITRAGE_SLIPSTREAM_FACTORY",
  slipstreamQuoter: "ARBITRAGE_SLIPSTREAM_QUOTER",
  chainlinkEthUsd: "ARBITRAGE_CHAINLINK_ETH_USD",
  multicall3: "ARBITRAGE_MULTICALL3",
  gasPriceOracle: "ARBITRAGE_GAS_PRICE_ORACLE",
} as const;
type ArbitrageContract = keyof typeof ARBITRAGE_ADDRESS_VARIABLES;

/** Search providers RESEARCH_SEARCH_PROVIDER may list; the first three are web search engines. */
export const SEARCH_PROVIDERS = ["searxng", "brave", "tavily", "wikipedia", "crossref"] as const;
export type SearchProviderName = (typeof SEARCH_PROVIDERS)[number];
const WEB_SEARCH = ["searxng", "brave", "tavily"] as const;
type WebSearchName = (typeof WEB_SEARCH)[number];
const isWebSearch = (name: SearchProviderName): name is WebSearchName =>
  (WEB_SEARCH as readonly string[]).includes(name);

const EnvSchema = z.object({
  PORT: optional(port).default(8402),
  HEALTH_PORT: optional(port),
  HOST: optional(z.string()).default("127.0.0.1"),
  BASE_URL: optional(httpUrl),
  PAYMENT_MODE: optional(z.enum(["local", "facilitator", "self"])),
  X402_NETWORK: optional(z.string().regex(/^eip155:\d+$/, "must be a CAIP-2 eip155 chain id")).default(
    BASE_NETWORK,
  ),
  X402_ASSET: optional(address).default(BASE_USDC_ADDRESS),
  X402_ASSET_NAME: optional(z.string().min(1)).default("USD Coin"),
  X402_ASSET_VERSION: optional(z.string().min(1)).default("2"),
  X402_PAY_TO: optional(address),
  X402_MAX_TIMEOUT_SECONDS: optional(z.coerce.number().int().min(10).max(3600)).default(120),
  X402_JOB_MAX_TIMEOUT_SECONDS: optional(z.coerce.number().int().min(300).max(86_400)).default(1800),
  X402_FACILITATOR_URL: optional(httpUrl),
  X402_FACILITATOR_AUTH_HEADER: optional(
    z.string().regex(/^[A-Za-z0-9-]+$/, "must be an HTTP header name"),
  ).default("Authorization"),
  X402_FACILITATOR_AUTH_VALUE: optional(z.string()),
  X402_FACILITATOR_TIMEOUT_MS: optional(z.coerce.number().int().min(100).max(120_000)).default(15_000),
  X402_SETTLER_PRIVATE_KEY: optional(privateKey),
  RPC_URL: optional(httpUrl),
  RPC_FALLBACK_URLS: optional(
    z
      .string()
      .transform((list) =>
        list
          .split(",")
          .map((url) => url.trim())
          .filter(Boolean),
      )
      .pipe(z.array(httpUrl)),
  ).default([]),
  ARBITRAGE_RPC_TIMEOUT_MS: optional(z.coerce.number().int().min(100).max(60_000)).default(5000),
  ARBITRAGE_PRIORITY_FEE_WEI: optional(
    z.string().regex(/^\d{1,30}$/, "must be a whole number of wei"),
  ).default("1000000"),
  ARBITRAGE_FEED_MAX_AGE_SECONDS: optional(z.coerce.number().int().min(1)).default(1200),
  ARBITRAGE_BLOCK_WARN_AGE_SECONDS: optional(z.coerce.number().int().min(1)).default(30),
  ARBITRAGE_BLOCK_MAX_AGE_SECONDS: optional(z.coerce.number().int().min(1)).default(120),
  ...(Object.fromEntries(
    Object.values(ARBITRAGE_ADDRESS_VARIABLES).map((name) => [name, optional(address)]),
  ) as Record<
    (typeof ARBITRAGE_ADDRESS_VARIABLES)[ArbitrageContract],
    ReturnType<typeof optional<typeof address>>
  >),
  X402_SETTLEMENT_TIMEOUT_MS: optional(z.coerce.number().int().min(1000).max(600_000)).default(30_000),
  LOCAL_CHAIN_PORT: optional(port).default(8545),
  LOCAL_CHAIN_STATE: optional(z.string()),
  DATA_DIR: optional(z.string()).default("./var"),
  DATABASE_URL: optional(
    z
      .string()
      .regex(
        /^(sqlite:.+|postgres(ql)?:\/\/.+)$/,
        "must be sqlite:<path> or postgres://user:password@host:port/db",
      ),
  ),
  DATABASE_POOL_SIZE: optional(z.coerce.number().int().min(1).max(500)).default(10),
  RELEASES_DIR: optional(z.string()),
  CLINICAL_TRIALS_DB: optional(z.string()),
  TED_API_URL: optional(httpUrl).default("https://api.ted.europa.eu/v3/notices/search"),
  TED_CACHE_TTL_MS: optional(z.coerce.number().int().min(0).max(86_400_000)).default(600_000),
  TED_MAX_IN_FLIGHT: optional(z.coerce.number().int().min(1).max(64)).default(4),
  TED_TIMEOUT_MS: optional(z.coerce.number().int().min(100).max(120_000)).default(10_000),
  TED_RETRY_BASE_MS: optional(z.coerce.number().int().min(0).max(60_000)).default(500),
  RESEARCH_SEARCH_PROVIDER: optional(
    z
      .string()
      .transform((list) => [
        ...new Set(
          list
            .split(",")
            .map((name) => name.trim().toLowerCase())
            .filter(Boolean),
        ),
      ])
      .pipe(
        z
          .array(z.enum(SEARCH_PROVIDERS, { error: `each must be one of ${SEARCH_PROVIDERS.join(", ")}` }))
          .min(1, "must name at least one provider"),
      ),
  ).default(["wikipedia", "crossref"]),
  RESEARCH_SEARCH_URL: optional(httpUrl),
  RESEARCH_SEARCH_API_KEY: optional(z.string()),
  RESEARCH_WIKIPEDIA_URL: optional(httpUrl).default("https://en.wikipedia.org/w/api.php"),
  RESEARCH_CROSSREF_URL: optional(httpUrl).default("https://api.crossref.org"),
  RESEARCH_CONTACT: optional(
    z
      .string()
      .trim()
      .refine(
        (value) => z.email().safeParse(value).success || httpUrl.safeParse(value).success,
        "must be an email address or an http(s) URL",
      ),
  ),
  RESEARCH_LLM_BASE_URL: optional(httpUrl),
  RESEARCH_LLM_API_KEY: optional(z.string()),
  RESEARCH_LLM_MODEL: optional(z.string().min(1)),
  RESEARCH_FETCH_ALLOW_HOSTS: optional(
    z.string().transform((value, context) =>
      value
        .split(",")
        .filter((entry) => entry.trim())
        .flatMap((entry) => {
          const parsed = parseAllowHost(entry);
          if ("entry" in parsed) return [parsed.entry];
          context.addIssue({ code: "custom", message: `${parsed.error} (write host or host:port)` });
          return [];
        }),
    ),
  ).default([]),
  JOB_RETENTION_DAYS: optional(
    z.coerce.number().int().min(7, "must be at least 7 (results are kept a week)"),
  ).default(7),
  JOB_LEASE_SECONDS: optional(z.coerce.number().int().min(2).max(3600)).default(60),
  JOB_MAX_ATTEMPTS: optional(z.coerce.number().int().min(1).max(10)).default(3),
  JOB_MAX_HELD_PER_PAYER: optional(z.coerce.number().int().min(1).max(1000)).default(3),
  WORKER_CONCURRENCY: optional(z.coerce.number().int().min(1).max(64)).default(2),
  IN_PROCESS_WORKER: optional(z.enum(["true", "false"], { error: "must be true or false" })).default("true"),
  CLINICAL_TRIALS_API_URL: optional(httpUrl).default("https://clinicaltrials.gov/api/v2/studies"),
  LOG_LEVEL: optional(z.enum(["fatal", "error", "warn", "info", "debug", "trace", "silent"])).default("info"),
  SHUTDOWN_TIMEOUT_MS: optional(z.coerce.number().int().min(0).max(600_000)).default(15_000),
  // Connection and request limits of the HTTP server (see src/http/connection-limits.ts).
  MAX_CONNECTIONS: optional(z.coerce.number().int().min(16).max(1_000_000)),
  MAX_CONNECTIONS_PER_CLIENT: optional(z.coerce.number().int().min(1).max(1_000_000)).default(256),
  MAX_REQUESTS_PER_CLIENT: optional(z.coerce.number().int().min(1).max(100_000)).default(64),
  HTTP_HEADERS_TIMEOUT_MS: optional(z.coerce.number().int().min(1000).max(600_000)).default(10_000),
  HTTP_REQUEST_TIMEOUT_MS: optional(z.coerce.number().int().min(1000).max(3_600_000)).default(120_000),
  HTTP_KEEP_ALIVE_TIMEOUT_MS: optional(z.coerce.number().int().min(100).max(600_000)).default(5000),
  // The MCP endpoint's sessions (src/mcp/sessions.ts): at most this many at once, each closed after this long idle.
  MCP_MAX_SESSIONS: optional(z.coerce.number().int().min(1).max(100_000)).default(1000),
  MCP_SESSION_IDLE_SECONDS: optional(z.coerce.number().int().min(10).max(86_400)).default(300),
  TRUSTED_PROXIES: optional(
    z.string().transform((value, context) =>
      value
        .split(",")
        .map((entry) => entry.trim())
        .filter(Boolean)
        .flatMap((entry) => {
          if (isAddressOrSubnet(entry)) return [entry];
          context.addIssue({ code: "custom", message: `"${entry}" is not an IP address or CIDR subnet` });
          return [];
        }),
    ),
  ).default([]),
});

/** An IPv4/IPv6 address or a CIDR subnet of one (10.0.0.0/8, fd00::/8). */
function isAddressOrSubnet(entry: string): boolean {
  const [address = "", prefix, extra] = entry.split("/");
  const family = isIP(address);
  if (family === 0 || extra !== undefined) return false;
  if (prefix === undefined) return true;
  return /^\d{1,3}$/.test(prefix) && Number(prefix) <= (family === 4 ? 32 : 128);
}

const DEFAULT_SEARCH_URLS = {
  searxng: "",
  brave: "https://api.search.brave.com/res/v1/web/search",
  tavily: "https://api.tavily.com/search",
} as const;

export type PaymentMode = "local" | "facilitator" | "self";

export interface Config {
  port: number;
  /** A second listener for /healthz, /readyz and /metrics only (src/http/health-listener.ts); unset: none. */
  healthPort?: number;
  host: string;
  baseUrl: string;
  payment: {
    mode: PaymentMode;
    network: `${string}:${string}`;
    chainId: number;
    asset: `0x${string}`;
    assetName: string;
    assetVersion: string;
    /** Unset only in local mode, where the local chain's dev account #1 is used. */
    payTo?: `0x${string}`;
    maxTimeoutSeconds: number;
    /**
     * maxTimeoutSeconds of an async operation's terms: its payment is held, unsettled, while the job runs,
     * so the authorization must outlive the job (its deadline is this minus the time to settle).
     */
    jobMaxTimeoutSeconds: number;
    facilitatorUrl?: string;
    facilitatorAuth?: { header: string; value: string };
    facilitatorTimeoutMs: number;
    settlerPrivateKey?: `0x${string}`;
    rpcUrl?: string;
    /** How long an in-process settlement waits for its receipt before the call answers 503 (retry). */
    settlementTimeoutMs: number;
  };
  localChain: { port: number; statePath?: string };
  arbitrage: {
    /** Tried in order after RPC_URL (or the local chain) fails. */
    rpcFallbackUrls: string[];
    rpcTimeoutMs: number;
    priorityFeeWei: bigint;
    feedMaxAgeSeconds: number;
    /** A `latest` block older than this (service clock) is a warning; older than blockMaxAgeSeconds a 502. */
    blockWarnAgeSeconds: number;
    blockMaxAgeSeconds: number;
    /** Only the addresses set in the environment; the operation supplies the defaults. */
    addresses: Partial<Record<ArbitrageContract, `0x${string}`>>;
  };
  dataDir: string;
  /** Where the service keeps its state: one SQLite file, or a PostgreSQL database shared by instances. */
  database: { kind: "sqlite"; path: string } | { kind: "postgres"; url: string; poolSize: number };
  /** Where product release archives and their descriptors live. */
  releasesDir: string;
  /** The clinical index the ingest builds (its snapshot is a product when it is a full ingest). */
  clinicalTrialsDb: string;
  tedApiUrl: string;
  /** Tender shortlist upstream: cache TTL (0 = no cache, single flight only), bound on calls in flight, timeout, backoff. */
  ted: { cacheTtlMs: number; maxInFlight: number; timeoutMs: number; retryBaseMs: number };
  research: {
    search: {
      /** RESEARCH_SEARCH_PROVIDER in order (default wikipedia, crossref); their hits are interleaved. */
      providers: SearchProviderName[];
      /** The web search engine among them (at most one), with its endpoint and key. */
      web?: { provider: WebSearchName; url: string; apiKey?: string };
      /** MediaWiki Action API endpoint (…/w/api.php). */
      wikipediaUrl: string;
      /** Crossref REST API base (…/works is appended). */
      crossrefUrl: string;
      /** RESEARCH_CONTACT: the operator's email or URL, named in the User-Agent. */
      contact?: string;
      /** Sent to Crossref as `mailto` when the contact is an email (its "polite pool"). */
      mailto?: string;
      /** Names the service, its BASE_URL and the contact to Wikipedia and Crossref. */
      userAgent: string;
    };
    /** Unset: briefs are extractive (ranked sentences from the sources), no model. */
    llm?: { baseUrl: string; apiKey?: string; model: string };
    /**
     * `host:port` entries (IPv6 `[::1]:8080`) the page fetcher may reach although the host is or
     * resolves to a private address; a bare host allows ports 80 and 443 only. Canonical form.
     */
    fetchAllowHosts: string[];
  };
  jobs: {
    retentionMs: number;
    leaseMs: number;
    maxAttempts: number;
    /**
     * Jobs one payer may have running on held (unsettled) payments at once: verification cannot reserve the
     * payer's balance, so a payer could otherwise start many jobs on funds that pay for one.
     */
    maxHeldPerPayer: number;
    workerConcurrency: number;
    /** `serve` runs a worker in its own process too (IN_PROCESS_WORKER). */
    inProcessWorker: boolean;
  };
  clinicalTrialsApiUrl: string;
  logLevel: string;
  shutdownTimeoutMs: number;
  /** Limits of the HTTP server: connections (in all and per client address), requests in flight per client, timeouts. */
  http: {
    /** Open connections in all; unset: half the process's open-file limit, at most 10,000. */
    maxConnections?: number;
    /** Open connections from one client address (a trusted proxy's own connections are exempt). */
    maxConnectionsPerClient: number;
    /** Requests in flight from one client (the forwarded address behind a trusted proxy): more answer 429. */
    maxRequestsPerClient: number;
    /** A connection that has not sent a whole request head within this is answered 408 and closed. */
    headersTimeoutMs: number;
    /** Time to receive a whole request (head and body). */
    requestTimeoutMs: number;
    /** An idle keep-alive connection is closed after this. */
    keepAliveTimeoutMs: number;
    /** Peers whose X-Forwarded-For is believed: addresses or CIDR subnets. */
    trustedProxies: string[];
  };
  /** The MCP endpoint's sessions: how many at once, and how long one may sit idle before it is closed. */
  mcp: { maxSessions: number; sessionIdleMs: number };
}

/**
 * The User-Agent for Wikipedia and Crossref, as their policies ask: the service, how to reach it,
 * and the operator (`mailto:` for an email), e.g.
 * `utility402/1.0 (research-brief; +https://api.example; mailto:ops@example.org)`.
 */
export function researchUserAgent(baseUrl: string, contact?: string): string {
  const who = contact ? `; ${contact.includes("://") ? contact : `mailto:${contact}`}` : "";
  return `utility402/1.0 (research-brief; +${baseUrl}${who})`;
}

export class ConfigError extends Error {
  constructor(readonly problems: string[]) {
    super(`invalid configuration:\n${problems.map((p) => `  - ${p}`).join("\n")}`);
  }
}

/** Reads and validates the environment; throws ConfigError listing every problem, one line each. */
export function loadConfig(
  env: NodeJS.ProcessEnv = process.env,
  purpose: "serve" | "facilitator" = "serve",
): Config {
  // Each variable is checked on its own so that every problem is reported at once, one line each.
  const problems: string[] = [];
  const values: Record<string, unknown> = {};
  for (const [name, schema] of Object.entries(EnvSchema.shape)) {
    const result = (schema as z.ZodType).safeParse(env[name]);
    if (result.success) values[name] = result.data;
    else problems.push(`${name}: ${result.error.issues.map((issue) => issue.message).join("; ")}`);
  }
  const e = values as z.output<typeof EnvSchema>;
  // The standalone facilitator settles with a key over an RPC, like self mode, but receives nothing itself.
  const mode: PaymentMode =
    purpose === "facilitator"
      ? "self"
      : (e.PAYMENT_MODE ??
        (e.X402_FACILITATOR_URL ? "facilitator" : e.X402_SETTLER_PRIVATE_KEY ? "self" : "local"));
  const required = purpose === "facilitator" ? "to run a facilitator" : "when PAYMENT_MODE=self";

  if (mode === "facilitator" && !env.X402_FACILITATOR_URL) {
    problems.push("X402_FACILITATOR_URL: required when PAYMENT_MODE=facilitator");
  }
  if (mode === "self") {
    if (!env.X402_SETTLER_PRIVATE_KEY) problems.push(`X402_SETTLER_PRIVATE_KEY: required ${required}`);
    if (!env.RPC_URL) problems.push(`RPC_URL: required ${required}`);
  }
  if (purpose === "serve" && mode !== "local" && !env.X402_PAY_TO) {
    problems.push(`X402_PAY_TO: required when PAYMENT_MODE=${mode} (the address that receives payments)`);
  }
  if (e.HEALTH_PORT !== undefined && e.HEALTH_PORT === e.PORT) {
    problems.push(`HEALTH_PORT: must differ from PORT (${e.PORT}); it is a second listener for the probes`);
  }
  const chainId = Number(e.X402_NETWORK?.split(":")[1]);
  if (mode === "local" && e.X402_NETWORK && e.X402_NETWORK !== BASE_NETWORK) {
    problems.push(`X402_NETWORK: local mode runs a Base (${BASE_NETWORK}) test chain; got ${e.X402_NETWORK}`);
  }
  // A job's held authorization must outlive the job: its least window (120 s), the time to settle it and
  // a minute of clock skew between the client and the service.
  const leastJobSeconds = Math.ceil(120 + (2 * e.X402_SETTLEMENT_TIMEOUT_MS + 30_000) / 1000 + 60);
  if (e.X402_JOB_MAX_TIMEOUT_SECONDS < leastJobSeconds) {
    problems.push(
      `X402_JOB_MAX_TIMEOUT_SECONDS: at least ${leastJobSeconds} with X402_SETTLEMENT_TIMEOUT_MS=${e.X402_SETTLEMENT_TIMEOUT_MS} (a job's held payment must outlive the job and its settlement)`,
    );
  }
  const webSearches = (e.RESEARCH_SEARCH_PROVIDER ?? []).filter(isWebSearch);
  const searchProvider = webSearches[0];
  if (webSearches.length > 1) {
    problems.push(
      `RESEARCH_SEARCH_PROVIDER: at most one of ${WEB_SEARCH.join(", ")} (they share RESEARCH_SEARCH_URL and RESEARCH_SEARCH_API_KEY); got ${webSearches.join(", ")}`,
    );
  }
  if (searchProvider === "searxng" && !e.RESEARCH_SEARCH_URL) {
    problems.push(
      "RESEARCH_SEARCH_URL: required when RESEARCH_SEARCH_PROVIDER=searxng (your instance's base URL)",
    );
  }
  if ((searchProvider === "brave" || searchProvider === "tavily") && !e.RESEARCH_SEARCH_API_KEY) {
    problems.push(`RESEARCH_SEARCH_API_KEY: required when RESEARCH_SEARCH_PROVIDER=${searchProvider}`);
  }
  if (e.RESEARCH_LLM_BASE_URL && !e.RESEARCH_LLM_MODEL) {
    problems.push("RESEARCH_LLM_MODEL: required when RESEARCH_LLM_BASE_URL is set");
  }
  if (e.HTTP_HEADERS_TIMEOUT_MS > e.HTTP_REQUEST_TIMEOUT_MS) {
    problems.push(
      `HTTP_REQUEST_TIMEOUT_MS: must be at least HTTP_HEADERS_TIMEOUT_MS (${e.HTTP_HEADERS_TIMEOUT_MS})`,
    );
  }
  if (problems.length > 0) throw new ConfigError(problems);

  const dataDir = path.resolve(e.DATA_DIR);
  const database: Config["database"] = e.DATABASE_URL?.startsWith("postgres")
    ? { kind: "postgres", url: e.DATABASE_URL, poolSize: e.DATABASE_POOL_SIZE }
    : {
        kind: "sqlite",
        path: e.DATABASE_URL
          ? path.resolve(e.DATABASE_URL.slice("sqlite:".length))
          : path.join(dataDir, "utility402.sqlite"),
      };
  const baseUrl = (e.BASE_URL ?? `http://${e.HOST === "0.0.0.0" ? "localhost" : e.HOST}:${e.PORT}`).replace(
    /\/+$/,
    "",
  );
  return {
    port: e.PORT,
    healthPort: e.HEALTH_PORT,
    host: e.HOST,
    baseUrl,
    payment: {
      mode,
      network: e.X402_NETWORK as `${string}:${string}`,
      chainId,
      asset: e.X402_ASSET as `0x${string}`,
      assetName: e.X402_ASSET_NAME,
      assetVersion: e.X402_ASSET_VERSION,
      payTo: e.X402_PAY_TO as `0x${string}` | undefined,
      maxTimeoutSeconds: e.X402_MAX_TIMEOUT_SECONDS,
      jobMaxTimeoutSeconds: e.X402_JOB_MAX_TIMEOUT_SECONDS,
      facilitatorUrl: e.X402_FACILITATOR_URL,
      facilitatorAuth: e.X402_FACILITATOR_AUTH_VALUE
        ? { header: e.X402_FACILITATOR_AUTH_HEADER, value: e.X402_FACILITATOR_AUTH_VALUE }
        : undefined,
      facilitatorTimeoutMs: e.X402_FACILITATOR_TIMEOUT_MS,
      settlerPrivateKey: e.X402_SETTLER_PRIVATE_KEY as `0x${string}` | undefined,
      rpcUrl: e.RPC_URL,
      settlementTimeoutMs: e.X402_SETTLEMENT_TIMEOUT_MS,
    },
    localChain: {
      port: e.LOCAL_CHAIN_PORT,
      statePath:
        e.LOCAL_CHAIN_STATE === "none"
          ? undefined
          : path.resolve(e.LOCAL_CHAIN_STATE ?? path.join(dataDir, "local-chain-state.json")),
    },
    arbitrage: {
      rpcFallbackUrls: e.RPC_FALLBACK_URLS,
      rpcTimeoutMs: e.ARBITRAGE_RPC_TIMEOUT_MS,
      priorityFeeWei: BigInt(e.ARBITRAGE_PRIORITY_FEE_WEI),
      feedMaxAgeSeconds: e.ARBITRAGE_FEED_MAX_AGE_SECONDS,
      blockWarnAgeSeconds: e.ARBITRAGE_BLOCK_WARN_AGE_SECONDS,
      blockMaxAgeSeconds: e.ARBITRAGE_BLOCK_MAX_AGE_SECONDS,
      addresses: Object.fromEntries(
        Object.entries(ARBITRAGE_ADDRESS_VARIABLES)
          .map(([contract, name]) => [contract, values[name]])
          .filter(([, value]) => value !== undefined),
      ),
    },
    dataDir,
    database,
    releasesDir: path.resolve(e.RELEASES_DIR ?? path.join(dataDir, "releases")),
    clinicalTrialsDb: path.resolve(e.CLINICAL_TRIALS_DB ?? path.join(dataDir, "clinical-trials.sqlite")),
    tedApiUrl: e.TED_API_URL,
    ted: {
      cacheTtlMs: e.TED_CACHE_TTL_MS,
      maxInFlight: e.TED_MAX_IN_FLIGHT,
      timeoutMs: e.TED_TIMEOUT_MS,
      retryBaseMs: e.TED_RETRY_BASE_MS,
    },
    research: {
      search: {
        providers: e.RESEARCH_SEARCH_PROVIDER,
        ...(searchProvider
          ? {
              web: {
                provider: searchProvider,
                url: e.RESEARCH_SEARCH_URL ?? DEFAULT_SEARCH_URLS[searchProvider],
                apiKey: e.RESEARCH_SEARCH_API_KEY,
              },
            }
          : {}),
        wikipediaUrl: e.RESEARCH_WIKIPEDIA_URL,
        crossrefUrl: e.RESEARCH_CROSSREF_URL.replace(/\/+$/, ""),
        ...(e.RESEARCH_CONTACT ? { contact: e.RESEARCH_CONTACT } : {}),
        ...(e.RESEARCH_CONTACT?.includes("@") && !e.RESEARCH_CONTACT.includes("://")
          ? { mailto: e.RESEARCH_CONTACT }
          : {}),
        userAgent: researchUserAgent(baseUrl, e.RESEARCH_CONTACT),
      },
      llm: e.RESEARCH_LLM_BASE_URL
        ? {
            baseUrl: e.RESEARCH_LLM_BASE_URL.replace(/\/+$/, ""),
            apiKey: e.RESEARCH_LLM_API_KEY,
            model: e.RESEARCH_LLM_MODEL as string,
          }
        : undefined,
      fetchAllowHosts: e.RESEARCH_FETCH_ALLOW_HOSTS,
    },
    jobs: {
      retentionMs: e.JOB_RETENTION_DAYS * 86_400_000,
      leaseMs: e.JOB_LEASE_SECONDS * 1000,
      maxAttempts: e.JOB_MAX_ATTEMPTS,
      maxHeldPerPayer: e.JOB_MAX_HELD_PER_PAYER,
      workerConcurrency: e.WORKER_CONCURRENCY,
      inProcessWorker: e.IN_PROCESS_WORKER === "true",
    },
    clinicalTrialsApiUrl: e.CLINICAL_TRIALS_API_URL,
    logLevel: e.LOG_LEVEL,
    shutdownTimeoutMs: e.SHUTDOWN_TIMEOUT_MS,
    http: {
      maxConnections: e.MAX_CONNECTIONS,
      maxConnectionsPerClient: e.MAX_CONNECTIONS_PER_CLIENT,
      maxRequestsPerClient: e.MAX_REQUESTS_PER_CLIENT,
      headersTimeoutMs: e.HTTP_HEADERS_TIMEOUT_MS,
      requestTimeoutMs: e.HTTP_REQUEST_TIMEOUT_MS,
      keepAliveTimeoutMs: e.HTTP_KEEP_ALIVE_TIMEOUT_MS,
      trustedProxies: e.TRUSTED_PROXIES,
    },
    mcp: { maxSessions: e.MCP_MAX_SESSIONS, sessionIdleMs: e.MCP_SESSION_IDLE_SECONDS * 1000 },
  };
}
