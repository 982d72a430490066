import path from "node:path";
import { z } from "zod";

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

const EnvSchema = z.object({
  PORT: optional(port).default(8402),
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
  X402_FACILITATOR_URL: optional(httpUrl),
  X402_FACILITATOR_AUTH_HEADER: optional(
    z.string().regex(/^[A-Za-z0-9-]+$/, "must be an HTTP header name"),
  ).default("Authorization"),
  X402_FACILITATOR_AUTH_VALUE: optional(z.string()),
  X402_FACILITATOR_TIMEOUT_MS: optional(z.coerce.number().int().min(100).max(120_000)).default(15_000),
  X402_SETTLER_PRIVATE_KEY: optional(privateKey),
  RPC_URL: optional(httpUrl),
  X402_SETTLEMENT_TIMEOUT_MS: optional(z.coerce.number().int().min(1000).max(600_000)).default(30_000),
  LOCAL_CHAIN_PORT: optional(port).default(8545),
  LOCAL_CHAIN_STATE: optional(z.string()),
  DATA_DIR: optional(z.string()).default("./var"),
  DATABASE_URL: optional(z.string()),
  TED_API_URL: optional(httpUrl).default("https://api.ted.europa.eu/v3/notices/search"),
  CLINICAL_TRIALS_DB: optional(z.string()),
  CLINICAL_TRIALS_API_URL: optional(httpUrl).default("https://clinicaltrials.gov/api/v2/studies"),
  LOG_LEVEL: optional(z.enum(["fatal", "error", "warn", "info", "debug", "trace", "silent"])).default("info"),
  SHUTDOWN_TIMEOUT_MS: optional(z.coerce.number().int().min(0).max(600_000)).default(15_000),
});

export type PaymentMode = "local" | "facilitator" | "self";

export interface Config {
  port: number;
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
    facilitatorUrl?: string;
    facilitatorAuth?: { header: string; value: string };
    facilitatorTimeoutMs: number;
    settlerPrivateKey?: `0x${string}`;
    rpcUrl?: string;
    /** How long an in-process settlement waits for its receipt before the call answers 503 (retry). */
    settlementTimeoutMs: number;
  };
  localChain: { port: number; statePath?: string };
  dataDir: string;
  sqlitePath: string;
  tedApiUrl: string;
  /** The clinical-trials database the service queries and `ingest clinical-trials` writes by default. */
  clinicalTrialsDb: string;
  clinicalTrialsApiUrl: string;
  logLevel: string;
  shutdownTimeoutMs: number;
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
  const chainId = Number(e.X402_NETWORK?.split(":")[1]);
  if (mode === "local" && e.X402_NETWORK && e.X402_NETWORK !== BASE_NETWORK) {
    problems.push(`X402_NETWORK: local mode runs a Base (${BASE_NETWORK}) test chain; got ${e.X402_NETWORK}`);
  }
  if (e.DATABASE_URL && !e.DATABASE_URL.startsWith("sqlite:")) {
    problems.push(
      "DATABASE_URL: only sqlite:<path> is supported by this build (PostgreSQL support is not built yet)",
    );
  }
  if (problems.length > 0) throw new ConfigError(problems);

  const dataDir = path.resolve(e.DATA_DIR);
  const sqlitePath = e.DATABASE_URL
    ? path.resolve(e.DATABASE_URL.slice("sqlite:".length))
    : path.join(dataDir, "utility402.sqlite");
  const baseUrl = (e.BASE_URL ?? `http://${e.HOST === "0.0.0.0" ? "localhost" : e.HOST}:${e.PORT}`).replace(
    /\/+$/,
    "",
  );
  return {
    port: e.PORT,
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
    dataDir,
    sqlitePath,
    tedApiUrl: e.TED_API_URL,
    clinicalTrialsDb: path.resolve(e.CLINICAL_TRIALS_DB ?? path.join(dataDir, "clinical-trials.sqlite")),
    clinicalTrialsApiUrl: e.CLINICAL_TRIALS_API_URL,
    logLevel: e.LOG_LEVEL,
    shutdownTimeoutMs: e.SHUTDOWN_TIMEOUT_MS,
  };
}
