import { isIP } from "node:net";
import path from "node:path";
import { z } from "zod";
import {
  address,
  type EnvSettings,
  type EnvValues,
  httpUrl,
  optional,
  port,
  privateKey,
  readVariables,
  type ServiceBasics,
} from "./env-settings.ts";
import { arbitrageSettings } from "./operations/chain-arbitrage-snapshot/settings.ts";
import { clinicalTrialsSettings } from "./operations/clinical-trials-query/settings.ts";
import { researchSettings } from "./operations/research-brief/settings.ts";
import { tedSettings } from "./operations/tender-shortlist/settings.ts";
import { DEV_OFFER_RECEIPT_KEY } from "./payments/resource-server/offer-receipt.ts";

/** USDC on Base mainnet; the local test chain places the same contract at the same address. */
export const BASE_USDC_ADDRESS = "0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913";
export const BASE_NETWORK = "eip155:8453";

/**
 * Each operation's settings (its `settings.ts`: variables, checks, typed settings), under the key
 * `Config` holds them at. An operation with settings of its own is added here.
 */
const OPERATION_SETTINGS = {
  arbitrage: arbitrageSettings,
  clinicalTrials: clinicalTrialsSettings,
  ted: tedSettings,
  research: researchSettings,
} as const;

type OperationSettings = {
  [Key in keyof typeof OPERATION_SETTINGS]: ReturnType<(typeof OPERATION_SETTINGS)[Key]["read"]>;
};

/** The variables of the service itself: listeners, payments, chain, store, jobs, logs, HTTP limits. */
const SERVICE_VARIABLES = {
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
  X402_VOUCHERS: optional(z.enum(["on", "off"], { error: "must be on or off" })).default("off"),
  X402_VOUCHER_WITHDRAW_DELAY_SECONDS: optional(
    z.coerce
      .number()
      .int()
      .min(900, "must be at least 900 (15 minutes, the contract's least)")
      .max(2_592_000, "must be at most 2592000 (30 days, the contract's most)"),
  ).default(86_400),
  X402_VOUCHER_MIN_DEPOSIT: optional(
    z.string().regex(/^[1-9][0-9]{0,37}$/, "must be a positive whole number of atomic units"),
  ).default("1000000"),
  X402_VOUCHER_RECEIVER_AUTHORIZER: optional(address),
  X402_VOUCHER_CLAIM_INTERVAL_MS: optional(z.coerce.number().int().min(1000).max(86_400_000)).default(
    600_000,
  ),
  X402_VOUCHER_CLAIM_THRESHOLD: optional(
    z.string().regex(/^[1-9][0-9]{0,37}$/, "must be a positive whole number of atomic units"),
  ).default("1000000"),
  X402_VOUCHER_WATCH_INTERVAL_MS: optional(z.coerce.number().int().min(100).max(600_000)).default(10_000),
  X402_FACILITATOR_URL: optional(httpUrl),
  X402_FACILITATOR_AUTH_HEADER: optional(
    z.string().regex(/^[A-Za-z0-9-]+$/, "must be an HTTP header name"),
  ).default("Authorization"),
  X402_FACILITATOR_AUTH_VALUE: optional(z.string()),
  X402_FACILITATOR_TIMEOUT_MS: optional(z.coerce.number().int().min(100).max(120_000)).default(15_000),
  X402_SETTLER_PRIVATE_KEY: optional(privateKey),
  RPC_URL: optional(httpUrl),
  OFFER_RECEIPT_SIGNING_KEY: optional(privateKey),
  OFFER_RECEIPT_INCLUDE_TRANSACTION: optional(
    z.enum(["true", "false"], { error: "must be true or false" }),
  ).default("true"),
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
  DATABASE_STATEMENT_TIMEOUT_MS: optional(
    z.coerce
      .number()
      .int()
      .refine((ms) => ms === 0 || (ms >= 100 && ms <= 600_000), "must be 0 (no limit) or 100-600000"),
  ).default(10_000),
  RELEASES_DIR: optional(z.string()),
  JOB_RETENTION_DAYS: optional(
    z.coerce.number().int().min(7, "must be at least 7 (results are kept a week)"),
  ).default(7),
  SIGN_IN_DOWNLOAD_DAYS: optional(z.coerce.number().int().min(1).max(36_500)),
  JOB_LEASE_SECONDS: optional(z.coerce.number().int().min(2).max(3600)).default(60),
  JOB_MAX_ATTEMPTS: optional(z.coerce.number().int().min(1).max(10)).default(3),
  JOB_MAX_HELD_PER_PAYER: optional(z.coerce.number().int().min(1).max(1000)).default(3),
  WORKER_CONCURRENCY: optional(z.coerce.number().int().min(1).max(64)).default(2),
  IN_PROCESS_WORKER: optional(z.enum(["true", "false"], { error: "must be true or false" })).default("true"),
  LOG_LEVEL: optional(z.enum(["fatal", "error", "warn", "info", "debug", "trace", "silent"])).default("info"),
  SHUTDOWN_TIMEOUT_MS: optional(z.coerce.number().int().min(0).max(600_000)).default(15_000),
  // Connection and request limits of the HTTP server (see src/http/connection-limits.ts).
  MAX_CONNECTIONS: optional(z.coerce.number().int().min(16).max(1_000_000)),
  MAX_CONNECTIONS_PER_CLIENT: optional(z.coerce.number().int().min(1).max(1_000_000)).default(256),
  MAX_REQUESTS_PER_CLIENT: optional(z.coerce.number().int().min(1).max(100_000)).default(64),
  HTTP_HEADERS_TIMEOUT_MS: optional(z.coerce.number().int().min(1000).max(600_000)).default(10_000),
  HTTP_REQUEST_TIMEOUT_MS: optional(z.coerce.number().int().min(1000).max(3_600_000)).default(120_000),
  HTTP_KEEP_ALIVE_TIMEOUT_MS: optional(z.coerce.number().int().min(100).max(600_000)).default(5000),
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
} satisfies z.ZodRawShape;
type ServiceValues = EnvValues<typeof SERVICE_VARIABLES>;

/** An IPv4/IPv6 address or a CIDR subnet of one (10.0.0.0/8, fd00::/8). */
function isAddressOrSubnet(entry: string): boolean {
  const [address = "", prefix, extra] = entry.split("/");
  const family = isIP(address);
  if (family === 0 || extra !== undefined) return false;
  if (prefix === undefined) return true;
  return /^\d{1,3}$/.test(prefix) && Number(prefix) <= (family === 4 ? 32 : 128);
}

export type PaymentMode = "local" | "facilitator" | "self";

/** The service's settings, each operation's settings (OPERATION_SETTINGS) among them. */
export interface Config extends OperationSettings {
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
    /** The x402 `batch-settlement` scheme (vouchers) offered beside `exact`: docs/payments.md, "Vouchers". */
    vouchers: VoucherSettings;
  };
  /**
   * Signed offers and receipts (the x402 offer-receipt extension, docs/offer-receipt.md). The key signs
   * every 402's offers and every paid answer's receipt; unset outside local mode: none are signed.
   */
  offerReceipt: {
    /** The operator's secp256k1 key (OFFER_RECEIPT_SIGNING_KEY); local mode: a fixed development key. */
    signingKey?: `0x${string}`;
    /** A receipt names the settlement's transaction (default); false leaves it out, for privacy. */
    includeTransaction: boolean;
  };
  localChain: { port: number; statePath?: string };
  dataDir: string;
  /** Where the service keeps its state: one SQLite file, or a PostgreSQL database shared by instances. */
  database:
    | { kind: "sqlite"; path: string }
    | { kind: "postgres"; url: string; poolSize: number; statementTimeoutMs: number };
  /** Where product release archives and their descriptors live. */
  releasesDir: string;
  /**
   * How long after its purchase a product may be downloaded again by signing in (sign-in-with-x), in ms;
   * unset: for the lifetime of the release bought (until a new release of the product is served).
   */
  signInDownloadMs?: number;
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
}

export interface VoucherSettings {
  enabled: boolean;
  /**
   * Seconds between a payer's withdrawal request and its completion: the time the service has to claim
   * what it answered. Default one day: see docs/configuration.md.
   */
  withdrawDelaySeconds: number;
  /** The deposit the terms suggest (atomic units); a route's own price is suggested when higher. */
  minDeposit: string;
  /**
   * Signs claims and refunds (the channel's receiverAuthorizer). Unset: the settler's address in local
   * and self modes, the facilitator's declared one in facilitator mode.
   */
  receiverAuthorizer?: `0x${string}`;
  /** How often the vouchers answered and not yet claimed are claimed and settled to payTo (and at shutdown). */
  claimIntervalMs: number;
  /** A channel whose charged-but-unclaimed value reaches this (atomic units) is claimed at once. */
  claimThreshold: string;
  /** How often the chain is read for withdrawals initiated on this service's channels. */
  watchIntervalMs: number;
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
  // Every variable is checked on its own, the service's then each operation's, and then the rules
  // between variables, so that every problem is reported at once, one line each.
  const problems: string[] = [];
  const service = readVariables(SERVICE_VARIABLES, env, problems);
  const operations = readOperationVariables(env, problems);
  const mode = paymentMode(service, purpose);
  problems.push(...serviceProblems(service, env, mode, purpose));
  problems.push(...operationProblems(operations));
  if (problems.length > 0) throw new ConfigError(problems);
  const settings = serviceSettings(service, mode);
  return { ...settings, ...operationSettings(operations, settings) };
}

type AnyEnvSettings = EnvSettings<z.ZodRawShape, unknown>;
type OperationValues = Record<keyof OperationSettings, EnvValues<z.ZodRawShape>>;
const operationParts = () =>
  Object.entries(OPERATION_SETTINGS) as [keyof OperationSettings, AnyEnvSettings][];

function readOperationVariables(env: NodeJS.ProcessEnv, problems: string[]): OperationValues {
  return Object.fromEntries(
    operationParts().map(([key, part]) => [key, readVariables(part.variables, env, problems)]),
  ) as OperationValues;
}

function operationProblems(values: OperationValues): string[] {
  return operationParts().flatMap(([key, part]) => part.check?.(values[key]) ?? []);
}

function operationSettings(values: OperationValues, service: ServiceBasics): OperationSettings {
  return Object.fromEntries(
    operationParts().map(([key, part]) => [key, part.read(values[key], service)]),
  ) as OperationSettings;
}

/** PAYMENT_MODE, or what is configured says it. */
function paymentMode(e: ServiceValues, purpose: "serve" | "facilitator"): PaymentMode {
  // The standalone facilitator settles with a key over an RPC, like self mode, but receives nothing itself.
  if (purpose === "facilitator") return "self";
  return (
    e.PAYMENT_MODE ?? (e.X402_FACILITATOR_URL ? "facilitator" : e.X402_SETTLER_PRIVATE_KEY ? "self" : "local")
  );
}

/** The rules between the service's own variables, one line each. */
function serviceProblems(
  e: ServiceValues,
  env: NodeJS.ProcessEnv,
  mode: PaymentMode,
  purpose: "serve" | "facilitator",
): string[] {
  const problems: string[] = [];
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
  if (
    e.OFFER_RECEIPT_SIGNING_KEY &&
    e.OFFER_RECEIPT_SIGNING_KEY.toLowerCase() === e.X402_SETTLER_PRIVATE_KEY?.toLowerCase()
  ) {
    problems.push(
      "OFFER_RECEIPT_SIGNING_KEY: must not be X402_SETTLER_PRIVATE_KEY (a key of its own signs offers and receipts)",
    );
  }
  if (mode !== "local" && e.OFFER_RECEIPT_SIGNING_KEY?.toLowerCase() === DEV_OFFER_RECEIPT_KEY) {
    problems.push(
      "OFFER_RECEIPT_SIGNING_KEY: must not be the development key outside local mode (it is public: anyone could sign offers and receipts with it)",
    );
  }
  if (e.HEALTH_PORT !== undefined && e.HEALTH_PORT === e.PORT) {
    problems.push(`HEALTH_PORT: must differ from PORT (${e.PORT}); it is a second listener for the probes`);
  }
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
  if (e.HTTP_HEADERS_TIMEOUT_MS > e.HTTP_REQUEST_TIMEOUT_MS) {
    problems.push(
      `HTTP_REQUEST_TIMEOUT_MS: must be at least HTTP_HEADERS_TIMEOUT_MS (${e.HTTP_HEADERS_TIMEOUT_MS})`,
    );
  }
  return problems;
}

/** The service's own settings, from variables that have passed every check. */
function serviceSettings(e: ServiceValues, mode: PaymentMode): Omit<Config, keyof OperationSettings> {
  const dataDir = path.resolve(e.DATA_DIR);
  const database: Config["database"] = e.DATABASE_URL?.startsWith("postgres")
    ? {
        kind: "postgres",
        url: e.DATABASE_URL,
        poolSize: e.DATABASE_POOL_SIZE,
        statementTimeoutMs: e.DATABASE_STATEMENT_TIMEOUT_MS,
      }
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
      chainId: Number(e.X402_NETWORK.split(":")[1]),
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
      vouchers: {
        enabled: e.X402_VOUCHERS === "on",
        withdrawDelaySeconds: e.X402_VOUCHER_WITHDRAW_DELAY_SECONDS,
        minDeposit: e.X402_VOUCHER_MIN_DEPOSIT,
        receiverAuthorizer: e.X402_VOUCHER_RECEIVER_AUTHORIZER as `0x${string}` | undefined,
        claimIntervalMs: e.X402_VOUCHER_CLAIM_INTERVAL_MS,
        claimThreshold: e.X402_VOUCHER_CLAIM_THRESHOLD,
        watchIntervalMs: e.X402_VOUCHER_WATCH_INTERVAL_MS,
      },
    },
    offerReceipt: {
      signingKey:
        (e.OFFER_RECEIPT_SIGNING_KEY as `0x${string}` | undefined) ??
        (mode === "local" ? DEV_OFFER_RECEIPT_KEY : undefined),
      includeTransaction: e.OFFER_RECEIPT_INCLUDE_TRANSACTION === "true",
    },
    localChain: {
      port: e.LOCAL_CHAIN_PORT,
      statePath:
        e.LOCAL_CHAIN_STATE === "none"
          ? undefined
          : path.resolve(e.LOCAL_CHAIN_STATE ?? path.join(dataDir, "local-chain-state.json")),
    },
    dataDir,
    database,
    releasesDir: path.resolve(e.RELEASES_DIR ?? path.join(dataDir, "releases")),
    signInDownloadMs:
      e.SIGN_IN_DOWNLOAD_DAYS === undefined ? undefined : e.SIGN_IN_DOWNLOAD_DAYS * 86_400_000,
    jobs: {
      retentionMs: e.JOB_RETENTION_DAYS * 86_400_000,
      leaseMs: e.JOB_LEASE_SECONDS * 1000,
      maxAttempts: e.JOB_MAX_ATTEMPTS,
      maxHeldPerPayer: e.JOB_MAX_HELD_PER_PAYER,
      workerConcurrency: e.WORKER_CONCURRENCY,
      inProcessWorker: e.IN_PROCESS_WORKER === "true",
    },
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
  };
}
