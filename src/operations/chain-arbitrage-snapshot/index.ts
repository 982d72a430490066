import { createPublicClient, fallback, http, type PublicClient } from "viem";
import { defineOperation } from "../../catalog/operation.ts";
import { ensureLocalDex } from "../../chain/dex/local-dex.ts";
import { Problem } from "../../problem.ts";
import { BASE_MAINNET_ADDRESSES, type ChainAddresses, LOCAL_CHAIN_ADDRESSES } from "./addresses.ts";
import {
  type ChainArbitrageSnapshotInput,
  type ChainArbitrageSnapshotOutput,
  ChainArbitrageSnapshotRequest,
  ChainArbitrageSnapshotResponse,
  VENUES,
} from "./schema.ts";
import { BASE_CHAIN_ID, type SnapshotSettings, takeSnapshot } from "./snapshot.ts";

/**
 * A chain client for snapshots: each URL with the configured timeout and no retries (a failed snapshot
 * is a 502 the caller may retry, unpaid), requests of one tick batched into one HTTP request, the next
 * URL tried when one fails.
 */
export function snapshotClient(urls: string[], timeoutMs: number): PublicClient {
  const transports = urls.map((url) => http(url, { timeout: timeoutMs, retryCount: 0, batch: true }));
  return createPublicClient({
    transport:
      transports.length === 1
        ? (transports[0] as ReturnType<typeof http>)
        : fallback(transports, { retryCount: 0 }),
  });
}

const hostOf = (url: string) => new URL(url).host;

export const chainArbitrageSnapshot = defineOperation({
  id: "chain-arbitrage-snapshot",
  method: "POST",
  path: "/v1/chain-arbitrage-snapshot",
  priceUsd: "0.03",
  kind: "sync",
  summary: "Fee-inclusive USDC/WETH round trip between two Base DEXes",
  description:
    "Quotes USDC→WETH on venue A then WETH→USDC on venue B, and the reverse, for the given USDC amount, " +
    "with the venues' on-chain quoters (Uniswap V3 QuoterV2, Aerodrome Router getAmountsOut, Slipstream " +
    "QuoterV2) read through Multicall3 at one block (two RPC round trips). Pool fees are read on-chain; each " +
    "swap's gas (quoter estimate plus a fixed overhead) is priced at the block's base fee plus a priority " +
    "fee, plus Base's L1 data fee (GasPriceOracle), in USD by the Chainlink ETH/USD feed. Amounts are exact " +
    "decimal strings in token units; netPnlUsdc = grossPnlUsdc − gasUsd exactly. Venues: " +
    `${VENUES.join(", ")}. Also a log-spaced ladder of 8 sizes with the best, break-even and largest ` +
    "profitable sizes at the same block, every size's gas measured cold (as a swap sent alone); execution " +
    '"atomic" prices both swaps as one transaction. In local mode every answer says simulated: true (a local ' +
    "test chain reporting Base's chain id, its own DEX deployment, a stand-in price feed). A missing or empty pool, a size a pool " +
    "fills only in part (the largest size is named) or an unknown block is a 400; an unreachable, lagging or " +
    "wrong-chain RPC, or a quoter failing on a pool with liquidity, a 502. Neither is charged.",
  tags: ["chain"],
  inputFrom: "body",
  bodyOptional: true,
  input: ChainArbitrageSnapshotRequest,
  output: ChainArbitrageSnapshotResponse,
  outputContentType: "application/json",
  example: { input: { amountUsdc: 1000, venues: ["uniswap-v3:500", "aerodrome:volatile"] } },
  errorResponses: [
    {
      status: 502,
      description:
        "The chain RPC is unreachable, timed out, answered an error, serves another chain than Base (8453) or " +
        "lags (its latest block older than ARBITRAGE_BLOCK_MAX_AGE_SECONDS), or a quoter reverted on a pool " +
        "with liquidity (the reason is in detail); nothing is charged.",
    },
    { status: 503, description: "No chain RPC is configured (RPC_URL); nothing is charged." },
  ],
  async start({ config, localChain, log }) {
    // Local mode quotes the local chain's DEX (deployed on first start, kept with the chain's state),
    // unless RPC_URL points elsewhere (e.g. Base itself): then the Base addresses apply.
    const quotesLocalChain = localChain !== undefined && !config.payment.rpcUrl;
    if (quotesLocalChain) await ensureLocalDex(localChain.rpcUrl, log);
    const primary = quotesLocalChain ? localChain.rpcUrl : config.payment.rpcUrl;
    const urls = [...(primary ? [primary] : []), ...config.arbitrage.rpcFallbackUrls];
    const addresses: ChainAddresses = {
      ...(quotesLocalChain ? LOCAL_CHAIN_ADDRESSES : BASE_MAINNET_ADDRESSES),
      ...config.arbitrage.addresses,
    };
    const settings: SnapshotSettings = {
      addresses,
      priorityFeeWei: config.arbitrage.priorityFeeWei,
      feedMaxAgeSeconds: config.arbitrage.feedMaxAgeSeconds,
      blockWarnAgeSeconds: config.arbitrage.blockWarnAgeSeconds,
      blockMaxAgeSeconds: config.arbitrage.blockMaxAgeSeconds,
      // The local chain mines on demand: its latest block is current however old its timestamp, so
      // ages are measured against it, not against the service clock.
      blockAgeReference: quotesLocalChain ? "chain-head" : "service-clock",
      chainId: BASE_CHAIN_ID,
      simulated: quotesLocalChain,
    };
    const client = urls.length > 0 ? snapshotClient(urls, config.arbitrage.rpcTimeoutMs) : undefined;
    const rpc = urls.map((url) => (url === localChain?.rpcUrl ? "local chain" : hostOf(url))).join(", ");
    return {
      available: client !== undefined,
      catalogDetails: {
        rpc: rpc || "none configured (set RPC_URL)",
        // Local mode quotes a test chain that reports Base's chain id: a catalogue reader sees it before paying.
        simulated: quotesLocalChain,
        ...(quotesLocalChain
          ? {
              note: "simulated: a local test chain reporting Base's chain id, with its own DEX deployment and a stand-in ETH/USD feed; not Base",
            }
          : {}),
        venues: [...VENUES],
        contracts: addresses,
      },
      async handle(input: ChainArbitrageSnapshotInput): Promise<{ body: ChainArbitrageSnapshotOutput }> {
        if (!client) {
          throw Problem.of("chain-not-configured", "set RPC_URL to quote Base; nothing was charged");
        }
        return { body: await takeSnapshot(client, settings, input) };
      },
      async probe() {
        if (!client) throw new Error("no chain RPC configured (RPC_URL)");
        return `ok (block ${await client.getBlockNumber()} via ${rpc})`;
      },
    };
  },
});
