import path from "node:path";
import { describe, expect, it } from "vitest";
import { BASE_NETWORK, BASE_USDC_ADDRESS, ConfigError, loadConfig } from "./config.ts";
import { DEV_OFFER_RECEIPT_KEY } from "./payments/resource-server/offer-receipt.ts";

const problemsOf = (env: Record<string, string>) => {
  try {
    loadConfig(env);
  } catch (error) {
    if (error instanceof ConfigError) return error.problems;
    throw error;
  }
  return [];
};

describe("loadConfig", () => {
  it("a job's held authorization must outlive the job and its settlement", () => {
    expect(loadConfig({}).payment.jobMaxTimeoutSeconds).toBe(1800);
    expect(problemsOf({ X402_JOB_MAX_TIMEOUT_SECONDS: "300" })).toEqual([]);
    expect(problemsOf({ X402_JOB_MAX_TIMEOUT_SECONDS: "300", X402_SETTLEMENT_TIMEOUT_MS: "120000" })).toEqual(
      [
        "X402_JOB_MAX_TIMEOUT_SECONDS: at least 450 with X402_SETTLEMENT_TIMEOUT_MS=120000 (a job's held payment must outlive the job and its settlement)",
      ],
    );
  });

  it("defaults to local mode on Base with USDC when nothing is configured", () => {
    const config = loadConfig({});
    expect(config.port).toBe(8402);
    expect(config.baseUrl).toBe("http://127.0.0.1:8402");
    expect(config.payment).toMatchObject({
      mode: "local",
      network: BASE_NETWORK,
      asset: BASE_USDC_ADDRESS,
      chainId: 8453,
    });
    expect(config.payment.payTo).toBeUndefined();
    expect(config.localChain.port).toBe(8545);
  });

  it("chooses facilitator or self mode from what is configured", () => {
    const payTo = "0x70997970C51812dc3A010C7d01b50e0d17dc79C8";
    expect(
      loadConfig({ X402_FACILITATOR_URL: "https://facilitator.test", X402_PAY_TO: payTo }).payment.mode,
    ).toBe("facilitator");
    const self = loadConfig({
      X402_SETTLER_PRIVATE_KEY: `0x${"ab".repeat(32)}`,
      RPC_URL: "http://127.0.0.1:1",
      X402_PAY_TO: payTo,
    });
    expect(self.payment.mode).toBe("self");
  });

  it("reports every problem at once, one line each", () => {
    expect(
      problemsOf({
        PORT: "0",
        PAYMENT_MODE: "facilitator",
        LOG_LEVEL: "loud",
        BASE_URL: "ftp://x",
        X402_ASSET: "usdc",
      }),
    ).toEqual([
      "PORT: must be a port number (1-65535)",
      "BASE_URL: must be an http(s) URL",
      "X402_ASSET: must be a 0x-prefixed 20-byte hex address",
      'LOG_LEVEL: Invalid option: expected one of "fatal"|"error"|"warn"|"info"|"debug"|"trace"|"silent"',
      "X402_FACILITATOR_URL: required when PAYMENT_MODE=facilitator",
      "X402_PAY_TO: required when PAYMENT_MODE=facilitator (the address that receives payments)",
    ]);
  });

  it("a health listener (HEALTH_PORT) is optional and never the public port", () => {
    expect(loadConfig({}).healthPort).toBeUndefined();
    expect(loadConfig({ HEALTH_PORT: "8403" }).healthPort).toBe(8403);
    expect(problemsOf({ PORT: "9000", HEALTH_PORT: "9000" })).toEqual([
      "HEALTH_PORT: must differ from PORT (9000); it is a second listener for the probes",
    ]);
  });

  it("refuses a local chain that is not Base and a database it cannot use", () => {
    expect(problemsOf({ X402_NETWORK: "eip155:1", DATABASE_URL: "mysql://x" })).toEqual([
      "DATABASE_URL: must be sqlite:<path> or postgres://user:password@host:port/db",
      "X402_NETWORK: local mode runs a Base (eip155:8453) test chain; got eip155:1",
    ]);
  });

  it("names the store: SQLite under DATA_DIR by default, a file, or PostgreSQL with a pool size", () => {
    expect(loadConfig({ DATA_DIR: "data" }).database).toEqual({
      kind: "sqlite",
      path: path.resolve("data", "utility402.sqlite"),
    });
    expect(loadConfig({ DATABASE_URL: "sqlite:x/y.db" }).database).toEqual({
      kind: "sqlite",
      path: path.resolve("x/y.db"),
    });
    expect(
      loadConfig({ DATABASE_URL: "postgres://u:p@db:5432/app", DATABASE_POOL_SIZE: "20" }).database,
    ).toEqual({
      kind: "postgres",
      url: "postgres://u:p@db:5432/app",
      poolSize: 20,
      statementTimeoutMs: 10_000,
    });
    expect(
      loadConfig({ DATABASE_URL: "postgres://u:p@db:5432/app", DATABASE_STATEMENT_TIMEOUT_MS: "2500" })
        .database,
    ).toMatchObject({ statementTimeoutMs: 2500 });
    expect(() =>
      loadConfig({ DATABASE_URL: "postgres://u:p@db:5432/app", DATABASE_STATEMENT_TIMEOUT_MS: "50" }),
    ).toThrow(/DATABASE_STATEMENT_TIMEOUT_MS/);
    expect(
      loadConfig({ DATABASE_URL: "postgres://u:p@db:5432/app", DATABASE_STATEMENT_TIMEOUT_MS: "0" }).database,
    ).toMatchObject({ statementTimeoutMs: 0 });
  });
});

describe("research and job settings", () => {
  it("default to Wikipedia and Crossref, no model, a week of retention and an in-process worker", () => {
    const config = loadConfig({});
    expect(config.research).toEqual({
      search: {
        providers: ["wikipedia", "crossref"],
        wikipediaUrl: "https://en.wikipedia.org/w/api.php",
        crossrefUrl: "https://api.crossref.org",
        userAgent: "utility402/1.0 (research-brief; +http://127.0.0.1:8402)",
      },
      llm: undefined,
      fetchAllowHosts: [],
    });
    expect(config.jobs).toEqual({
      retentionMs: 7 * 86_400_000,
      leaseMs: 60_000,
      maxAttempts: 3,
      maxHeldPerPayer: 3,
      workerConcurrency: 2,
      inProcessWorker: true,
    });
  });

  it("read providers, their default endpoints, the model and the fetch allow-list", () => {
    const config = loadConfig({
      RESEARCH_SEARCH_PROVIDER: "brave",
      RESEARCH_SEARCH_API_KEY: "brave-key",
      RESEARCH_LLM_BASE_URL: "https://llm.example/v1/",
      RESEARCH_LLM_MODEL: "some-model",
      RESEARCH_FETCH_ALLOW_HOSTS: " Intranet.Example , 10.0.0.5 ,",
      IN_PROCESS_WORKER: "false",
      JOB_RETENTION_DAYS: "30",
    });
    expect(config.research).toEqual({
      search: {
        providers: ["brave"],
        web: {
          provider: "brave",
          url: "https://api.search.brave.com/res/v1/web/search",
          apiKey: "brave-key",
        },
        wikipediaUrl: "https://en.wikipedia.org/w/api.php",
        crossrefUrl: "https://api.crossref.org",
        userAgent: "utility402/1.0 (research-brief; +http://127.0.0.1:8402)",
      },
      llm: { baseUrl: "https://llm.example/v1", apiKey: undefined, model: "some-model" },
      fetchAllowHosts: ["intranet.example", "10.0.0.5"],
    });
    expect(config.jobs.inProcessWorker).toBe(false);
    expect(config.jobs.retentionMs).toBe(30 * 86_400_000);
    expect(
      loadConfig({ RESEARCH_SEARCH_PROVIDER: "tavily", RESEARCH_SEARCH_API_KEY: "k" }).research.search.web
        ?.url,
    ).toBe("https://api.tavily.com/search");
  });

  it("research needs nothing configured: Wikipedia and Crossref, a User-Agent naming the service and its contact", () => {
    expect(loadConfig({ BASE_URL: "https://api.example" }).research.search).toEqual({
      providers: ["wikipedia", "crossref"],
      wikipediaUrl: "https://en.wikipedia.org/w/api.php",
      crossrefUrl: "https://api.crossref.org",
      userAgent: "utility402/1.0 (research-brief; +https://api.example)",
    });
    expect(
      loadConfig({
        BASE_URL: "https://api.example",
        RESEARCH_SEARCH_PROVIDER: " SearXNG, wikipedia ,wikipedia",
        RESEARCH_SEARCH_URL: "https://searx.example",
        RESEARCH_WIKIPEDIA_URL: "https://de.wikipedia.org/w/api.php",
        RESEARCH_CROSSREF_URL: "https://crossref.example/",
        RESEARCH_CONTACT: "ops@example.org",
      }).research.search,
    ).toEqual({
      providers: ["searxng", "wikipedia"],
      web: { provider: "searxng", url: "https://searx.example", apiKey: undefined },
      wikipediaUrl: "https://de.wikipedia.org/w/api.php",
      crossrefUrl: "https://crossref.example",
      contact: "ops@example.org",
      mailto: "ops@example.org",
      userAgent: "utility402/1.0 (research-brief; +https://api.example; mailto:ops@example.org)",
    });
    const byUrl = loadConfig({ RESEARCH_CONTACT: "https://ops.example/contact" }).research.search;
    expect(byUrl.mailto).toBeUndefined();
    expect(byUrl.userAgent).toBe(
      "utility402/1.0 (research-brief; +http://127.0.0.1:8402; https://ops.example/contact)",
    );
    expect(
      problemsOf({
        RESEARCH_SEARCH_PROVIDER: "brave,tavily",
        RESEARCH_SEARCH_API_KEY: "k",
        RESEARCH_CONTACT: "nobody",
        RESEARCH_CROSSREF_URL: "ftp://crossref.example",
      }),
    ).toEqual([
      "RESEARCH_CROSSREF_URL: must be an http(s) URL",
      "RESEARCH_CONTACT: must be an email address or an http(s) URL",
      "RESEARCH_SEARCH_PROVIDER: at most one of searxng, brave, tavily (they share RESEARCH_SEARCH_URL and RESEARCH_SEARCH_API_KEY); got brave, tavily",
    ]);
    expect(problemsOf({ RESEARCH_SEARCH_PROVIDER: " , " })).toEqual([
      "RESEARCH_SEARCH_PROVIDER: must name at least one provider",
    ]);
  });

  it("refuse incomplete or unsafe settings, one line each", () => {
    expect(problemsOf({ RESEARCH_SEARCH_PROVIDER: "searxng" })).toEqual([
      "RESEARCH_SEARCH_URL: required when RESEARCH_SEARCH_PROVIDER=searxng (your instance's base URL)",
    ]);
    expect(problemsOf({ RESEARCH_SEARCH_PROVIDER: "tavily" })).toEqual([
      "RESEARCH_SEARCH_API_KEY: required when RESEARCH_SEARCH_PROVIDER=tavily",
    ]);
    expect(
      problemsOf({
        RESEARCH_SEARCH_PROVIDER: "google",
        RESEARCH_LLM_BASE_URL: "https://llm.example/v1",
        JOB_RETENTION_DAYS: "3",
        IN_PROCESS_WORKER: "yes",
      }),
    ).toEqual([
      // The service's own variables first, then each operation's (its settings.ts), then the rules between them.
      "JOB_RETENTION_DAYS: must be at least 7 (results are kept a week)",
      "IN_PROCESS_WORKER: must be true or false",
      expect.stringMatching(/^RESEARCH_SEARCH_PROVIDER: /),
      "RESEARCH_LLM_MODEL: required when RESEARCH_LLM_BASE_URL is set",
    ]);
  });

  it("signs offers and receipts with the operator's own key: a development key in local mode, none unset otherwise", () => {
    const local = loadConfig({});
    expect(local.offerReceipt).toEqual({ signingKey: DEV_OFFER_RECEIPT_KEY, includeTransaction: true });
    const payTo = "0x70997970C51812dc3A010C7d01b50e0d17dc79C8";
    const facilitator = { X402_FACILITATOR_URL: "https://facilitator.test", X402_PAY_TO: payTo };
    expect(loadConfig(facilitator).offerReceipt.signingKey).toBeUndefined();
    const key = `0x${"1".repeat(64)}`;
    expect(
      loadConfig({
        ...facilitator,
        OFFER_RECEIPT_SIGNING_KEY: key,
        OFFER_RECEIPT_INCLUDE_TRANSACTION: "false",
      }).offerReceipt,
    ).toEqual({ signingKey: key, includeTransaction: false });
    expect(problemsOf({ OFFER_RECEIPT_SIGNING_KEY: "0x1234" })).toEqual([
      "OFFER_RECEIPT_SIGNING_KEY: must be a 0x-prefixed 32-byte hex private key",
    ]);
    expect(
      problemsOf({
        PAYMENT_MODE: "self",
        RPC_URL: "http://127.0.0.1:8545",
        X402_PAY_TO: payTo,
        X402_SETTLER_PRIVATE_KEY: key,
        OFFER_RECEIPT_SIGNING_KEY: key.toUpperCase().replace("0X", "0x"),
      }),
    ).toEqual([
      "OFFER_RECEIPT_SIGNING_KEY: must not be X402_SETTLER_PRIVATE_KEY (a key of its own signs offers and receipts)",
    ]);
    // The development key is in the sources: outside local mode anyone could sign receipts in the service's name.
    expect(
      problemsOf({
        ...facilitator,
        OFFER_RECEIPT_SIGNING_KEY: DEV_OFFER_RECEIPT_KEY.toUpperCase().replace("0X", "0x"),
      }),
    ).toEqual([
      "OFFER_RECEIPT_SIGNING_KEY: must not be the development key outside local mode (it is public: anyone could sign offers and receipts with it)",
    ]);
    expect(problemsOf({ OFFER_RECEIPT_SIGNING_KEY: DEV_OFFER_RECEIPT_KEY })).toEqual([]);
  });
});
