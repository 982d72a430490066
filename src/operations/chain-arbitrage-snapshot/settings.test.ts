import { describe, expect, it } from "vitest";
import { ConfigError, loadConfig } from "../../config.ts";
import { createLogger } from "../../log.ts";
import { Problem } from "../../problem.ts";
import type { Store } from "../../store/store.ts";
import { BASE_MAINNET_ADDRESSES } from "./addresses.ts";
import { chainArbitrageSnapshot } from "./index.ts";
import { ChainArbitrageSnapshotRequest } from "./schema.ts";

const facilitatorMode = {
  X402_FACILITATOR_URL: "http://127.0.0.1:9/facilitator",
  X402_PAY_TO: "0x00000000000000000000000000000000000000F1",
};

const start = (env: Record<string, string>) =>
  chainArbitrageSnapshot.start?.({
    config: loadConfig(env),
    log: createLogger("silent"),
    now: () => new Date(),
    store: {} as Store,
  });

describe("chain-arbitrage-snapshot settings", () => {
  it("reads the RPC fallbacks, timeout, priority fee, feed age, block age bounds and address overrides", () => {
    const config = loadConfig({
      ...facilitatorMode,
      RPC_FALLBACK_URLS: "http://127.0.0.1:8001, http://127.0.0.1:8002",
      ARBITRAGE_RPC_TIMEOUT_MS: "800",
      ARBITRAGE_PRIORITY_FEE_WEI: "2000000",
      ARBITRAGE_FEED_MAX_AGE_SECONDS: "3600",
      ARBITRAGE_BLOCK_WARN_AGE_SECONDS: "10",
      ARBITRAGE_BLOCK_MAX_AGE_SECONDS: "60",
      ARBITRAGE_AERODROME_ROUTER: "0x00000000000000000000000000000000000000a1",
    });
    expect(config.arbitrage).toEqual({
      rpcFallbackUrls: ["http://127.0.0.1:8001", "http://127.0.0.1:8002"],
      rpcTimeoutMs: 800,
      priorityFeeWei: 2_000_000n,
      feedMaxAgeSeconds: 3600,
      blockWarnAgeSeconds: 10,
      blockMaxAgeSeconds: 60,
      addresses: { aerodromeRouter: "0x00000000000000000000000000000000000000a1" },
    });
    expect(loadConfig(facilitatorMode).arbitrage).toEqual({
      rpcFallbackUrls: [],
      rpcTimeoutMs: 5000,
      priorityFeeWei: 1_000_000n,
      feedMaxAgeSeconds: 1200,
      blockWarnAgeSeconds: 30,
      blockMaxAgeSeconds: 120,
      addresses: {},
    });
  });

  it("names each bad setting on its own line", () => {
    const error = (() => {
      try {
        loadConfig({
          ...facilitatorMode,
          RPC_FALLBACK_URLS: "http://127.0.0.1:8001,ftp://x",
          ARBITRAGE_PRIORITY_FEE_WEI: "0.5",
          ARBITRAGE_SLIPSTREAM_QUOTER: "0x1234",
        });
      } catch (e) {
        return e;
      }
    })() as ConfigError;
    expect(error).toBeInstanceOf(ConfigError);
    expect(error.problems).toEqual([
      expect.stringMatching(/^RPC_FALLBACK_URLS: /),
      "ARBITRAGE_PRIORITY_FEE_WEI: must be a whole number of wei",
      "ARBITRAGE_SLIPSTREAM_QUOTER: must be a 0x-prefixed 20-byte hex address",
    ]);
  });

  it("without an RPC outside local mode: unavailable in the catalog, and a 503 (never charged) if called", async () => {
    const started = await start(facilitatorMode);
    expect(started?.available).toBe(false);
    expect(started?.catalogDetails).toMatchObject({ rpc: "none configured (set RPC_URL)" });
    const refused = await started
      ?.handle(ChainArbitrageSnapshotRequest.parse({}), {} as never)
      .catch((error: unknown) => error);
    expect(refused).toBeInstanceOf(Problem);
    expect((refused as Problem).status).toBe(503);
    await expect(started?.probe?.()).rejects.toThrow("no chain RPC configured");
  });

  it("with RPC_URL: Base mainnet contracts unless overridden, the RPC named by host only", async () => {
    const started = await start({
      ...facilitatorMode,
      RPC_URL: "http://127.0.0.1:8545/secret-key-path",
      ARBITRAGE_CHAINLINK_ETH_USD: "0x00000000000000000000000000000000000000c1",
    });
    expect(started?.available).toBe(true);
    expect(started?.catalogDetails).toEqual({
      rpc: "127.0.0.1:8545",
      venues: ["uniswap-v3:500", "uniswap-v3:3000", "aerodrome:volatile", "aerodrome-slipstream:100"],
      contracts: { ...BASE_MAINNET_ADDRESSES, chainlinkEthUsd: "0x00000000000000000000000000000000000000c1" },
      simulated: false,
    });
  });
});
