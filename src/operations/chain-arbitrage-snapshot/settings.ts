import { z } from "zod";
import { address, envSettings, httpUrl, optional } from "../../env-settings.ts";

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

export interface ArbitrageSettings {
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
}

export const arbitrageSettings = envSettings({
  variables: {
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
  },
  read: (e): ArbitrageSettings => ({
    rpcFallbackUrls: e.RPC_FALLBACK_URLS,
    rpcTimeoutMs: e.ARBITRAGE_RPC_TIMEOUT_MS,
    priorityFeeWei: BigInt(e.ARBITRAGE_PRIORITY_FEE_WEI),
    feedMaxAgeSeconds: e.ARBITRAGE_FEED_MAX_AGE_SECONDS,
    blockWarnAgeSeconds: e.ARBITRAGE_BLOCK_WARN_AGE_SECONDS,
    blockMaxAgeSeconds: e.ARBITRAGE_BLOCK_MAX_AGE_SECONDS,
    addresses: Object.fromEntries(
      Object.entries(ARBITRAGE_ADDRESS_VARIABLES)
        .map(([contract, name]) => [contract, e[name]])
        .filter(([, value]) => value !== undefined),
    ),
  }),
});
