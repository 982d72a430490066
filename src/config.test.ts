import path from "node:path";
import { describe, expect, it } from "vitest";
import { BASE_NETWORK, BASE_USDC_ADDRESS, ConfigError, loadConfig } from "./config.ts";

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
    ).toEqual({ kind: "postgres", url: "postgres://u:p@db:5432/app", poolSize: 20 });
  });
});
