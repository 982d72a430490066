import {
  type Address,
  decodeAbiParameters,
  decodeFunctionResult,
  encodeFunctionData,
  type Hex,
  type PublicClient,
  parseAbi,
  serializeTransaction,
  zeroAddress,
} from "viem";
import { isTransportError } from "../../chain/transport-failures.ts";
import { invalidRequest, Problem } from "../../problem.ts";
import type { ChainAddresses } from "./addresses.ts";
import { divCeil, divRound, formatUnitsExact, parseUnitsExact, ratioBps } from "./decimal.ts";
import {
  type ChainArbitrageSnapshotInput,
  type ChainArbitrageSnapshotOutput,
  LADDER_SIZES,
  MAX_AMOUNT_USDC,
  MIN_AMOUNT_USDC,
  type VenueId,
} from "./schema.ts";
import {
  AERODROME_VOLATILE_SWAP_GAS,
  type Call,
  decodeAddress,
  isZeroAddress,
  type Quote,
  type Ratio,
  type Venue,
  venue,
} from "./venues.ts";

export const BLOCK_AGE_REFERENCES = ["service-clock", "chain-head"] as const;
export type BlockAgeReference = (typeof BLOCK_AGE_REFERENCES)[number];

export interface SnapshotSettings {
  addresses: ChainAddresses;
  /** Added to the block's base fee to price gas (Base's base fee alone does not get a swap included). */
  priorityFeeWei: bigint;
  /** A feed older than this (at the block) is reported in `warnings`. */
  feedMaxAgeSeconds: number;
  /**
   * A block older than this is reported in `warnings`: `latest` (the RPC may lag) or a block
   * requested by number (the answer is the chain as it was then). 0 or unset: not checked.
   */
  blockWarnAgeSeconds?: number;
  /** A `latest` block older than this is refused (502): the RPC lags. 0 or unset: not checked. */
  blockMaxAgeSeconds?: number;
  /**
   * What a block's age is measured against. `service-clock` (default): the service's clock, as a
   * live chain's head keeps up with it. `chain-head`: the chain's latest block, for a local chain
   * that mines on demand, whose latest block is current however old its timestamp (so `latest` is
   * 0 s old and never lags, and a block requested by number is as old as the blocks mined since).
   */
  blockAgeReference?: BlockAgeReference;
  /** The chain the addresses belong to: Base, 8453 (the local chain uses the same id). Default 8453. */
  chainId?: number;
  /** The service clock in ms (Date.now). */
  now?: () => number;
  /**
   * The local chain's stand-in DEX and price feed (local mode): every answer then says
   * `simulated: true` and names the feed as a stand-in, whatever chain id the chain reports.
   */
  simulated?: boolean;
  /** The ladder's sizes for an amount (default {@link ladderSizes}); tests give arbitrary ones. */
  ladder?: (usdcIn: bigint) => bigint[];
}

/**
 * Gas every swap transaction costs beyond the quoter's figure: 21,000 intrinsic, ~3,000 of calldata,
 * and the router's own work (entry, deadline, the transferFrom of the input token in the swap
 * callback, which QuoterV2's estimate does not reach because its callback reverts).
 */
export const SWAP_TX_OVERHEAD_GAS = 60_000n;
const PRICE_IMPACT_WARNING_BPS = 50;
export const BASE_CHAIN_ID = 8453;
const USDC_DECIMALS = 6;
const WETH_DECIMALS = 18;

const MULTICALL3_ABI = parseAbi([
  "function aggregate3((address target, bool allowFailure, bytes callData)[] calls) payable returns ((bool success, bytes returnData)[] returnData)",
  "function getBlockNumber() view returns (uint256 blockNumber)",
  "function getChainId() view returns (uint256 chainid)",
  "function getLastBlockHash() view returns (bytes32 blockHash)",
]);
const FEED_ABI = parseAbi([
  "function latestRoundData() view returns (uint80 roundId, int256 answer, uint256 startedAt, uint256 updatedAt, uint80 answeredInRound)",
  "function decimals() view returns (uint8)",
]);
const GAS_PRICE_ORACLE_ABI = parseAbi(["function getL1Fee(bytes data) view returns (uint256)"]);

interface Result {
  success: boolean;
  returnData: Hex;
}

const chainUnavailable = (detail: string) =>
  Problem.of("chain-unavailable", `${detail}; nothing was charged`);

/** A read that must succeed: otherwise the chain (or the configured contract) is not what we expect. */
function required<T>(result: Result | undefined, what: string, decode: (data: Hex) => T): T {
  if (!result?.success) throw chainUnavailable(`the chain answered no ${what}`);
  try {
    return decode(result.returnData);
  } catch {
    throw chainUnavailable(`the chain's answer for ${what} does not decode`);
  }
}

/** Maps a failed RPC request to the right problem: our input (a block the RPC does not have) or upstream. */
function rpcProblem(error: unknown, blockNumber: number | undefined): Problem {
  if (error instanceof Problem) return error;
  const message = error instanceof Error ? error.message.split("\n")[0] : String(error);
  if (isTransportError(error)) return chainUnavailable(`the chain RPC could not be reached (${message})`);
  // The node's own words are deep in viem's cause chain (geth: "header not found"; anvil:
  // "BlockOutOfRangeError: block height is …").
  const texts: string[] = [];
  for (let e: unknown = error; e instanceof Error; e = e.cause) {
    texts.push(e.message, (e as Error & { details?: string }).details ?? "");
  }
  const detail = texts.join(" ");
  if (
    blockNumber !== undefined &&
    /block|header/i.test(detail) &&
    /not (be )?found|out ?of ?range|unknown|future|missing|not available|pruned/i.test(detail)
  ) {
    return invalidRequest([
      {
        pointer: "/blockNumber",
        message: `block ${blockNumber} is not available on this RPC (not yet mined, or pruned: old blocks need an archive node)`,
      },
    ]);
  }
  return chainUnavailable(`the chain RPC answered with an error (${message})`);
}

/** One eth_call of Multicall3's aggregate3 (every call may fail on its own) at one block. */
async function aggregate(
  client: PublicClient,
  multicall3: Address,
  calls: Call[],
  at: At,
  requestedBlock: number | undefined,
): Promise<readonly Result[]> {
  const callData = encodeFunctionData({
    abi: MULTICALL3_ABI,
    functionName: "aggregate3",
    args: [calls.map((call) => ({ ...call, allowFailure: true }))],
  });
  // viem's call takes a tag or a number; a block hash (EIP-1898) goes to eth_call directly.
  const data =
    "blockHash" in at
      ? ((await client.request({
          method: "eth_call",
          params: [{ to: multicall3, data: callData }, { blockHash: at.blockHash }],
        } as never)) as Hex | undefined)
      : (await client.call({ to: multicall3, data: callData, ...at })).data;
  if (!data || data === "0x") {
    // No code at the address at this block: the requested block predates Multicall3, or the
    // configured address is wrong.
    if (requestedBlock !== undefined) {
      throw invalidRequest([
        {
          pointer: "/blockNumber",
          message: `Multicall3 (${multicall3}) has no code at block ${requestedBlock}`,
        },
      ]);
    }
    throw chainUnavailable(`Multicall3 answered nothing (is it deployed at ${multicall3}?)`);
  }
  return decodeFunctionResult({ abi: MULTICALL3_ABI, functionName: "aggregate3", data });
}

const multicallRead = (
  multicall3: Address,
  functionName: "getBlockNumber" | "getChainId" | "getLastBlockHash",
): Call => ({
  target: multicall3,
  callData: encodeFunctionData({ abi: MULTICALL3_ABI, functionName }),
});
const decodeUint = (data: Hex) =>
  decodeFunctionResult({ abi: MULTICALL3_ABI, functionName: "getBlockNumber", data });
const decodeBytes32 = (data: Hex) =>
  decodeFunctionResult({ abi: MULTICALL3_ABI, functionName: "getLastBlockHash", data });

/**
 * The unsigned EIP-1559 transaction a trader would send for this swap: GasPriceOracle.getL1Fee
 * prices its bytes (and adds the signature itself). Nonce, gas and fee fields hold typical values:
 * only their encoded sizes matter.
 */
export function sampleTransaction(venue: Venue, tokenIn: Address, tokenOut: Address, amountIn: bigint): Hex {
  return serializeTransaction({
    chainId: 8453,
    type: "eip1559",
    nonce: 1_000,
    to: venue.swapTarget,
    data: venue.swapCalldata(tokenIn, tokenOut, amountIn),
    gas: 300_000n,
    maxFeePerGas: 10_000_000n,
    maxPriorityFeePerGas: 1_000_000n,
    value: 0n,
  });
}

interface LegFacts {
  venue: Venue;
  pool: Address;
  direction: "USDC->WETH" | "WETH->USDC";
  amountIn: bigint;
  quote: Quote;
  fee: Ratio;
  /** USDC atomic units per wei at the pool's spot price, before fees. */
  spotUsdcPerWei: Ratio;
  l1FeeWei: bigint;
}

type LegOutput = ChainArbitrageSnapshotOutput["legs"][number];

function describeLeg(
  leg: LegFacts,
  addresses: ChainAddresses,
  gasPriceWei: bigint,
): LegOutput & { gasWei: bigint } {
  const buying = leg.direction === "USDC->WETH";
  const { amountIn } = leg;
  const { amountOut } = leg.quote;
  const [usdc, weth] = buying ? [amountIn, amountOut] : [amountOut, amountIn];
  const { numerator: feeN, denominator: feeD } = leg.fee;
  const { numerator: spotN, denominator: spotD } = leg.spotUsdcPerWei;
  // The output at the spot price after the fee, as a fraction expectedN / expectedD.
  const [expectedN, expectedD] = buying
    ? [amountIn * (feeD - feeN) * spotD, feeD * spotN]
    : [amountIn * (feeD - feeN) * spotN, feeD * spotD];
  const gasUnits = (leg.quote.gasEstimate ?? AERODROME_VOLATILE_SWAP_GAS) + SWAP_TX_OVERHEAD_GAS;
  const gasWei = gasUnits * gasPriceWei + leg.l1FeeWei;
  return {
    venue: leg.venue.id,
    pool: leg.pool,
    direction: leg.direction,
    tokenIn: buying ? addresses.usdc : addresses.weth,
    tokenOut: buying ? addresses.weth : addresses.usdc,
    feeBps: ratioBps(feeN, feeD),
    amountIn: formatUnitsExact(amountIn, buying ? USDC_DECIMALS : WETH_DECIMALS),
    amountOut: formatUnitsExact(amountOut, buying ? WETH_DECIMALS : USDC_DECIMALS),
    effectivePrice: formatUnitsExact(divRound(usdc * 10n ** BigInt(WETH_DECIMALS), weth), USDC_DECIMALS),
    priceImpactBps: expectedN === 0n ? 0 : ratioBps(expectedN - amountOut * expectedD, expectedN),
    gasUnits: Number(gasUnits),
    gasEstimateSource: leg.quote.gasEstimate === undefined ? "fixed" : "quoter",
    l1FeeWei: leg.l1FeeWei.toString(),
    gasCostWei: gasWei.toString(),
    gasWei,
  };
}

/** A quote of one leg at one size: what the quoter said, or why it said nothing. */
type Outcome = { quote: Quote } | { failed: string };

/** The revert reason of a failed call, as the contract gave it. */
export function revertReason(data: Hex): string {
  if (data.startsWith(ERROR_STRING_SELECTOR)) {
    try {
      const [reason] = decodeAbiParameters([{ type: "string" }], `0x${data.slice(10)}`);
      return JSON.stringify(reason);
    } catch {
      // fall through: not a well-formed Error(string)
    }
  }
  if (data.startsWith(PANIC_SELECTOR) && data.length === 74)
    return `panic 0x${BigInt(`0x${data.slice(10)}`).toString(16)}`;
  if (data === "0x") return "reverted without a reason";
  return `reverted with ${data.length > 74 ? `${data.slice(0, 74)}…` : data}`;
}
const ERROR_STRING_SELECTOR = "0x08c379a0";
const PANIC_SELECTOR = "0x4e487b71";

function outcome(venue: Venue, result: Result | undefined): Outcome {
  if (!result) return { failed: "no answer" };
  if (!result.success) return { failed: revertReason(result.returnData) };
  try {
    return { quote: venue.decodeQuote(result.returnData) };
  } catch {
    return { failed: `an answer that does not decode (${result.returnData.slice(0, 74)})` };
  }
}

/** Where a read runs: a tag or number for the first round trip, the first one's block hash after that. */
type At = { blockTag: "latest" } | { blockNumber: bigint } | { blockHash: Hex };

/** Calls of one aggregate3, each at a known index. */
class Calls {
  readonly list: Call[] = [];
  add(call: Call): number {
    return this.list.push(call) - 1;
  }
}

/**
 * Where a quote of the second round trip runs: in the shared aggregate3, or (a quote that measures
 * gas) in an eth_call of its own. Within one call, a quote after another of the same pool finds its
 * accounts and storage warm (EIP-2929: 100 gas an access instead of 2,600 for an account and 2,100
 * for a storage slot), so its gas figure would depend on its place in the call and understate the
 * swap sent on its own. Each call of its own starts cold, like the transaction it prices.
 */
type Slot = { shared: number } | { alone: number };

/** Each call in an aggregate3 of its own at the block: all sent at once (one JSON-RPC batch with the shared one). */
function aggregateEachAlone(
  client: PublicClient,
  multicall3: Address,
  calls: Call[],
  at: At,
): Promise<(Result | undefined)[]> {
  return Promise.all(
    calls.map((call) => aggregate(client, multicall3, [call], at, undefined).then(([result]) => result)),
  );
}

/** Gas of the intrinsic part of a transaction: what one atomic transaction saves on the second swap. */
const INTRINSIC_GAS = 21_000n;
/**
 * EIP-2929's first access of an account in a transaction. A swap sent alone has its router as the
 * transaction's `to`, warm from the start; in one atomic transaction the executor is `to`, and its
 * call to each router is the router's first access.
 */
export const COLD_ACCOUNT_ACCESS_GAS = 2_600n;
/**
 * The executor's own work in one atomic transaction: decoding the two calls, two CALLs and copying
 * their results back (an estimate from its structure, as SWAP_TX_OVERHEAD_GAS is).
 */
export const ATOMIC_EXECUTOR_DISPATCH_GAS = 5_000n;

/**
 * Gas one atomic transaction adds to the two swaps' own figures, less the second swap's intrinsic
 * part: a cold call to each router it reaches (one router when both venues share it) and its dispatch.
 */
export function atomicExecutorGas(buyRouter: Address, sellRouter: Address): bigint {
  const routers = buyRouter.toLowerCase() === sellRouter.toLowerCase() ? 1n : 2n;
  return routers * COLD_ACCOUNT_ACCESS_GAS + ATOMIC_EXECUTOR_DISPATCH_GAS - INTRINSIC_GAS;
}
/** Any executor contract: the L1 fee depends on the transaction's bytes only. */
const SAMPLE_EXECUTOR: Address = "0x7e57e8ec07010e5a3c1b2d4f6a8b9c0d1e2f3a4b";
const EXECUTOR_ABI = parseAbi(["function multicall(bytes[] data) payable returns (bytes[] results)"]);

/** One transaction carrying both swaps (execution "atomic"), as GasPriceOracle.getL1Fee prices it. */
function sampleAtomicTransaction(buy: Hex, sell: Hex): Hex {
  return serializeTransaction({
    chainId: 8453,
    type: "eip1559",
    nonce: 1_000,
    to: SAMPLE_EXECUTOR,
    data: encodeFunctionData({ abi: EXECUTOR_ABI, functionName: "multicall", args: [[buy, sell]] }),
    gas: 600_000n,
    maxFeePerGas: 10_000_000n,
    maxPriorityFeePerGas: 1_000_000n,
    value: 0n,
  });
}

/** The ladder's sizes in USDC atomic units: log-spaced, whole USDC, from amount / 100 to amount × 100. */
export function ladderSizes(usdcIn: bigint): bigint[] {
  const unit = 10n ** BigInt(USDC_DECIMALS);
  const min = BigInt(MIN_AMOUNT_USDC) * unit;
  const max = BigInt(MAX_AMOUNT_USDC) * unit;
  const low = usdcIn / 100n > min ? usdcIn / 100n : min;
  const high = usdcIn * 100n < max ? usdcIn * 100n : max;
  const ratio = Number(high) / Number(low);
  const sizes: bigint[] = [];
  for (let k = 0; k < LADDER_SIZES; k++) {
    const size = BigInt(Math.round((Number(low) * ratio ** (k / (LADDER_SIZES - 1))) / 1e6)) * unit;
    const bounded = size < min ? min : size > max ? max : size;
    if (!sizes.includes(bounded)) sizes.push(bounded);
  }
  return sizes;
}

/**
 * One snapshot in two RPC round trips, both at one block:
 *  1. one JSON-RPC batch: the block header (latest, or the requested block) and aggregate3 at the same
 *     block: the block number it ran at, its parent's hash, the chain id, the ETH/USD feed, both pool
 *     lookups, the USDC→WETH quote on each venue at the amount and at every ladder size, the L1 fee of
 *     each of those swaps;
 *  2. aggregate3 pinned by the header's block hash (EIP-1898): the WETH→USDC quotes for the WETH the
 *     first legs returned, each pool's fee, spot state and liquidity, the exact-output quote of a
 *     partial fill, and (execution "atomic") the L1 fee of one transaction carrying both swaps.
 * The second legs need the first legs' outputs, which is why one aggregate3 cannot do it all. A third
 * request happens only when the header and the first aggregate3 answered for different blocks (the
 * chain moved between them) and when a sell leg fills partially (to name the largest fillable size).
 */
export async function takeSnapshot(
  client: PublicClient,
  settings: SnapshotSettings,
  input: ChainArbitrageSnapshotInput,
): Promise<ChainArbitrageSnapshotOutput> {
  const { addresses } = settings;
  const { usdc, weth, multicall3 } = addresses;
  const venues = input.venues.map((id) => venue(id, addresses)) as [Venue, Venue];
  const usdcIn = parseUnitsExact(String(input.amountUsdc), USDC_DECIMALS);
  const atomic = input.execution === "atomic";
  // Size 0 is the amount asked for; the others are the ladder.
  const sizes = [usdcIn, ...(settings.ladder ?? ladderSizes)(usdcIn)];
  const requestedBlock = input.blockNumber === undefined ? undefined : BigInt(input.blockNumber);
  const usdcText = (amount: bigint) => formatUnitsExact(amount, USDC_DECIMALS);
  const wethText = (amount: bigint) => formatUnitsExact(amount, WETH_DECIMALS);

  const firstCalls = new Calls();
  firstCalls.add(multicallRead(multicall3, "getBlockNumber"));
  firstCalls.add(multicallRead(multicall3, "getChainId"));
  firstCalls.add(multicallRead(multicall3, "getLastBlockHash"));
  firstCalls.add({
    target: addresses.chainlinkEthUsd,
    callData: encodeFunctionData({ abi: FEED_ABI, functionName: "latestRoundData" }),
  });
  firstCalls.add({
    target: addresses.chainlinkEthUsd,
    callData: encodeFunctionData({ abi: FEED_ABI, functionName: "decimals" }),
  });
  const lookupAt = venues.map((v) => firstCalls.add(v.poolLookup));
  const buyAt = sizes.map((size) => venues.map((v) => firstCalls.add(v.quote(usdc, weth, size))));
  const l1FeeCall = (transaction: Hex): Call => ({
    target: addresses.gasPriceOracle,
    callData: encodeFunctionData({
      abi: GAS_PRICE_ORACLE_ABI,
      functionName: "getL1Fee",
      args: [transaction],
    }),
  });
  const l1At = sizes.map((size) =>
    venues.map((v) => firstCalls.add(l1FeeCall(sampleTransaction(v, usdc, weth, size)))),
  );

  const at: At = requestedBlock === undefined ? { blockTag: "latest" } : { blockNumber: requestedBlock };
  const agedAgainstHead = settings.blockAgeReference === "chain-head" && requestedBlock !== undefined;
  let [header, first, head] = await Promise.all([
    client.getBlock(at as Parameters<PublicClient["getBlock"]>[0]),
    aggregate(client, multicall3, firstCalls.list, at, input.blockNumber),
    // In the same batch: the head a pinned block is aged against.
    agedAgainstHead ? client.getBlock({ blockTag: "latest" }) : undefined,
  ]).catch((error) => {
    throw rpcProblem(error, input.blockNumber);
  });
  const chainId = required(first[1], "chain id", decodeUint);
  const expectedChainId = settings.chainId ?? BASE_CHAIN_ID;
  if (chainId !== BigInt(expectedChainId)) {
    throw chainUnavailable(
      `the chain RPC serves chain ${chainId}, not Base (${expectedChainId}): its contracts are not the ones quoted`,
    );
  }
  const blockNumber = required(first[0], "block number", decodeUint);
  const parentHash = required(first[2], "parent block hash", decodeBytes32);
  if (header.number !== blockNumber) {
    // `latest` moved between the header and the eth_call of one batch: fetch the header of the block
    // the quotes ran at.
    header = await client.getBlock({ blockNumber }).catch((error) => {
      throw rpcProblem(error, undefined);
    });
  }
  if (header.parentHash.toLowerCase() !== parentHash.toLowerCase() || header.number !== blockNumber) {
    throw chainUnavailable(
      `the chain RPC's block ${blockNumber} and its eth_call at that block are on different chains (a reorganisation)`,
    );
  }
  const blockHash = header.hash as Hex;
  const warnings: string[] = [];
  const blockAgeSeconds = Number(
    settings.blockAgeReference === "chain-head"
      ? (head ?? header).timestamp - header.timestamp
      : BigInt(Math.floor((settings.now?.() ?? Date.now()) / 1000)) - header.timestamp,
  );
  const { blockWarnAgeSeconds = 0, blockMaxAgeSeconds = 0 } = settings;
  if (requestedBlock !== undefined && blockWarnAgeSeconds > 0 && blockAgeSeconds > blockWarnAgeSeconds) {
    warnings.push(
      `block ${blockNumber} was requested by number and is ${blockAgeSeconds} s old (more than ${blockWarnAgeSeconds} s): the answer is the chain as it was then, not now`,
    );
  }
  if (requestedBlock === undefined && blockMaxAgeSeconds > 0) {
    if (blockAgeSeconds > blockMaxAgeSeconds) {
      throw chainUnavailable(
        `the chain RPC's latest block ${blockNumber} is ${blockAgeSeconds} s old (more than ${blockMaxAgeSeconds} s): the RPC lags behind the chain`,
      );
    }
    if (blockWarnAgeSeconds > 0 && blockAgeSeconds > blockWarnAgeSeconds) {
      warnings.push(
        `the chain RPC's latest block is ${blockAgeSeconds} s old (more than ${blockWarnAgeSeconds} s): the RPC may lag behind the chain`,
      );
    }
  }

  // A factory without code at this block (not yet deployed) has no pool either.
  const pools = venues.map((v, i) => {
    const result = first[lookupAt[i] as number];
    return result?.success && result.returnData === "0x"
      ? zeroAddress
      : required(result, `${v.id} pool lookup`, decodeAddress);
  }) as [Address, Address];
  const missing = venues.flatMap((v, i) =>
    isZeroAddress(pools[i] as Address)
      ? [{ pointer: `/venues/${i}`, message: `${v.id} has no USDC/WETH pool at block ${blockNumber}` }]
      : [],
  );
  if (missing.length > 0) throw invalidRequest(missing);
  const [, answer, , updatedAt] = required(first[3], "ETH/USD round (feed latestRoundData)", (data) =>
    decodeFunctionResult({ abi: FEED_ABI, functionName: "latestRoundData", data }),
  );
  const feedDecimals = required(first[4], "ETH/USD feed decimals", (data) =>
    decodeFunctionResult({ abi: FEED_ABI, functionName: "decimals", data }),
  );
  if (answer <= 0n) throw chainUnavailable(`the ETH/USD feed answers ${answer}`);
  const buys = buyAt.map((row) => row.map((index, i) => outcome(venues[i] as Venue, first[index])));
  const buyL1Fees = l1At.map((row) =>
    row.map((index, i) => required(first[index], `${venues[i]?.id} L1 fee (GasPriceOracle)`, decodeUint)),
  );
  const filled = (o: Outcome | undefined): Quote | undefined =>
    o && "quote" in o && !o.quote.partial && o.quote.amountOut > 0n ? o.quote : undefined;

  // Round trip t buys on venue t and sells on the other one the WETH the buy returned.
  const secondCalls = new Calls();
  secondCalls.add(multicallRead(multicall3, "getBlockNumber"));
  secondCalls.add(multicallRead(multicall3, "getLastBlockHash"));
  const feeAt = venues.map((v, i) => secondCalls.add(v.feeCall(pools[i] as Address)));
  const spotAt = venues.map((v, i) => secondCalls.add(v.spotCall(pools[i] as Address)));
  const liquidityAt = venues.map((v, i) => secondCalls.add(v.liquidityCall(pools[i] as Address)));
  const aloneCalls = new Calls();
  const slot = (v: Venue, call: Call): Slot =>
    v.quoteMeasuresGas ? { alone: aloneCalls.add(call) } : { shared: secondCalls.add(call) };
  const sellAt = buys.map((row) =>
    row.map((o, t) => {
      const buy = filled(o);
      const sellVenue = venues[1 - t] as Venue;
      return buy ? slot(sellVenue, sellVenue.quote(weth, usdc, buy.amountOut)) : undefined;
    }),
  );
  // The first round trip's buys ran in one aggregate3 (their outputs are what the sells spend);
  // the ones whose gas is used are quoted again, each alone, for that gas.
  const coldBuyAt = buys.map((row, k) =>
    row.map((o, t) => {
      const v = venues[t] as Venue;
      return filled(o) && v.quoteMeasuresGas
        ? aloneCalls.add(v.quote(usdc, weth, sizes[k] as bigint))
        : undefined;
    }),
  );
  // A sell transaction carries the WETH amount (18 decimals, more non-zero bytes than the USDC
  // amount of the buy): its L1 data fee is its own, quoted on its own bytes.
  const sellL1At = buys.map((row) =>
    row.map((o, t) => {
      const buy = filled(o);
      return buy
        ? secondCalls.add(l1FeeCall(sampleTransaction(venues[1 - t] as Venue, weth, usdc, buy.amountOut)))
        : undefined;
    }),
  );
  const atomicL1At = buys.map((row, k) =>
    row.map((o, t) => {
      const buy = filled(o);
      if (!atomic || !buy) return undefined;
      const buyVenue = venues[t] as Venue;
      const sellVenue = venues[1 - t] as Venue;
      const transaction = sampleAtomicTransaction(
        buyVenue.swapCalldata(usdc, weth, sizes[k] as bigint),
        sellVenue.swapCalldata(weth, usdc, buy.amountOut),
      );
      return secondCalls.add(l1FeeCall(transaction));
    }),
  );
  // A partial fill of the amount asked for: what input the filled output takes is the largest size.
  const exactAt = (buys[0] as Outcome[]).map((o, t) => {
    const v = venues[t] as Venue;
    return "quote" in o && o.quote.partial && v.quoteExactOutput
      ? secondCalls.add(v.quoteExactOutput(usdc, weth, o.quote.amountOut))
      : undefined;
  });
  const [second, alone] = await Promise.all([
    aggregate(client, multicall3, secondCalls.list, { blockHash }, undefined),
    aggregateEachAlone(client, multicall3, aloneCalls.list, { blockHash }),
  ]).catch((error) => {
    throw rpcProblem(error, undefined);
  });
  const resultAt = (at: Slot): Result | undefined => ("alone" in at ? alone[at.alone] : second[at.shared]);
  if (
    required(second[0], "block number", decodeUint) !== blockNumber ||
    required(second[1], "parent block hash", decodeBytes32).toLowerCase() !== parentHash.toLowerCase()
  ) {
    throw chainUnavailable(`the chain RPC answered for another block than ${blockNumber} (${blockHash})`);
  }
  const fees = venues.map((v, i) => required(second[feeAt[i] as number], `${v.id} fee`, v.decodeFee));
  const empty = venues.map((v, i) =>
    required(second[liquidityAt[i] as number], `${v.id} pool liquidity`, v.decodeEmpty),
  );
  const sellL1Fees = sellL1At.map((row) =>
    row.map((index, t) =>
      index === undefined
        ? undefined
        : required(second[index], `${venues[1 - t]?.id} sell L1 fee (GasPriceOracle)`, decodeUint),
    ),
  );
  const sells = sellAt.map((row) =>
    row.map((at, t) => (at === undefined ? undefined : outcome(venues[1 - t] as Venue, resultAt(at)))),
  );
  for (const [k, row] of coldBuyAt.entries()) {
    for (const [t, index] of row.entries()) {
      if (index === undefined) continue;
      const cold = outcome(venues[t] as Venue, alone[index]);
      const first = filled(buys[k]?.[t]);
      if (!("quote" in cold) || cold.quote.amountOut !== first?.amountOut) {
        throw chainUnavailable(
          `the chain RPC quoted ${venues[t]?.id} differently twice at block ${blockNumber} (${blockHash})`,
        );
      }
      (buys[k] as Outcome[])[t] = cold;
    }
  }

  // The amount asked for must be quoted whole on all four legs. A quoter that fails on a pool with
  // liquidity is the chain's fault (502); an empty pool, or a size a pool cannot take, the request's (400).
  const refusals: { pointer: string; message: string }[] = [];
  const judge = (o: Outcome, venueIndex: number, what: string, fillable?: string) => {
    const v = venues[venueIndex] as Venue;
    if ("failed" in o || o.quote.amountOut === 0n) {
      if (empty[venueIndex]) {
        refusals.push({
          pointer: `/venues/${venueIndex}`,
          message: `${v.id}'s USDC/WETH pool (${pools[venueIndex]}) has no liquidity at block ${blockNumber}`,
        });
        return;
      }
      if ("failed" in o) {
        throw Problem.of(
          "quoter-failed",
          `${v.id}'s quoter failed on ${what} at block ${blockNumber} although its pool has liquidity: ${o.failed}; nothing was charged`,
        );
      }
      refusals.push({
        pointer: "/amountUsdc",
        message: `${v.id} quotes nothing for ${what} at block ${blockNumber} (too small for the pool)`,
      });
      return;
    }
    if (o.quote.partial) {
      refusals.push({
        pointer: "/amountUsdc",
        message:
          `${v.id} can fill only part of ${what} at block ${blockNumber}: its liquidity runs out ${fillable ?? ""}`.trim(),
      });
    }
  };
  (buys[0] as Outcome[]).forEach((o, t) => {
    const index = exactAt[t];
    const filledIn = index === undefined ? undefined : second[index];
    const largest =
      filledIn?.success && venues[t]?.decodeExactOutput
        ? `after ${usdcText(venues[t].decodeExactOutput(filledIn.returnData))} USDC; the largest amountUsdc it can take is ${usdcText(venues[t].decodeExactOutput(filledIn.returnData))}`
        : undefined;
    judge(o, t, `${usdcText(usdcIn)} USDC → WETH`, largest);
  });
  if (refusals.length > 0) throw invalidRequest(refusals);
  const mainBuys = (buys[0] as Outcome[]).map((o) => (o as { quote: Quote }).quote) as [Quote, Quote];
  const mainSells = sells[0] as [Outcome, Outcome];
  for (const t of [0, 1] as const) {
    const o = mainSells[t];
    const wethIn = mainBuys[t].amountOut;
    let largest: string | undefined;
    const sellVenue = venues[1 - t] as Venue;
    if ("quote" in o && o.quote.partial && sellVenue.quoteExactOutput && sellVenue.decodeExactOutput) {
      // Rare: one more request to name the largest size (the sell leg's fillable WETH, back in USDC).
      const wethFillable = await aggregate(
        client,
        multicall3,
        [sellVenue.quoteExactOutput(weth, usdc, o.quote.amountOut)],
        { blockHash },
        undefined,
      )
        .then(([result]) => (result?.success ? sellVenue.decodeExactOutput?.(result.returnData) : undefined))
        .catch(() => undefined);
      if (wethFillable !== undefined) {
        largest = `after ${wethText(wethFillable)} WETH; the largest amountUsdc it can take is about ${usdcText((usdcIn * wethFillable) / wethIn)}`;
      }
    }
    judge(o, 1 - t, `${wethText(wethIn)} WETH → USDC`, largest);
  }
  if (refusals.length > 0) throw invalidRequest(refusals);
  const mainSellQuotes = mainSells.map((o) => (o as { quote: Quote }).quote) as [Quote, Quote];

  // Both protocols order a pool's tokens by address; spot is token1 per token0.
  const wethIsToken0 = weth.toLowerCase() < usdc.toLowerCase();
  const spots = venues.map((v, i) => {
    const spot = required(second[spotAt[i] as number], `${v.id} pool state`, v.decodeSpot);
    if (spot.numerator === 0n || spot.denominator === 0n) {
      throw invalidRequest([
        { pointer: `/venues/${i}`, message: `${v.id}'s USDC/WETH pool has no price at block ${blockNumber}` },
      ]);
    }
    return wethIsToken0 ? spot : { numerator: spot.denominator, denominator: spot.numerator };
  });

  const baseFeeWei = header.baseFeePerGas ?? 0n;
  const gasPriceWei = baseFeeWei + settings.priorityFeeWei;
  const leg = (
    index: number,
    direction: LegFacts["direction"],
    amountIn: bigint,
    quote: Quote,
    l1FeeWei: bigint,
  ) =>
    describeLeg(
      {
        venue: venues[index] as Venue,
        pool: pools[index] as Address,
        direction,
        amountIn,
        quote,
        fee: fees[index] as Ratio,
        spotUsdcPerWei: spots[index] as Ratio,
        l1FeeWei,
      },
      addresses,
      gasPriceWei,
    );
  const buyL1 = (k: number, t: number) => (buyL1Fees[k] as bigint[])[t] as bigint;
  const sellL1 = (k: number, t: number) => (sellL1Fees[k] as (bigint | undefined)[])[t] as bigint;
  const legs = [
    leg(0, "USDC->WETH", usdcIn, mainBuys[0], buyL1(0, 0)),
    leg(1, "WETH->USDC", mainBuys[0].amountOut, mainSellQuotes[0], sellL1(0, 0)),
    leg(1, "USDC->WETH", usdcIn, mainBuys[1], buyL1(0, 1)),
    leg(0, "WETH->USDC", mainBuys[1].amountOut, mainSellQuotes[1], sellL1(0, 1)),
  ];
  // Gas in USDC atomic units: wei × (USD per ETH) / 10^12, rounded up (a cost is never understated).
  const weiToUsdc = (wei: bigint) =>
    divCeil(wei * answer * 10n ** BigInt(USDC_DECIMALS), 10n ** BigInt(WETH_DECIMALS + feedDecimals));
  const swapGas = (quote: Quote) => (quote.gasEstimate ?? AERODROME_VOLATILE_SWAP_GAS) + SWAP_TX_OVERHEAD_GAS;

  /** The round trip t at size k, or why it cannot be done. */
  const trip = (k: number, t: 0 | 1) => {
    const size = sizes[k] as bigint;
    const buyOn = venues[t]?.id as VenueId;
    const sellOn = venues[1 - t]?.id as VenueId;
    const buyOutcome = buys[k]?.[t] as Outcome;
    const buy = filled(buyOutcome);
    const sellOutcome = sells[k]?.[t];
    const sell = filled(sellOutcome);
    if (!buy || !sell) {
      const o = (buy ? sellOutcome : buyOutcome) as Outcome;
      const where = buy ? `${sellOn} (sell)` : `${buyOn} (buy)`;
      const reason =
        "failed" in o
          ? `${where}: no quote (${o.failed})`
          : o.quote.partial
            ? `${where}: the pool's liquidity runs out (partial fill)`
            : `${where}: quotes nothing`;
      return { buyOn, sellOn, size, reason } as const;
    }
    const gasUnits =
      swapGas(buy) +
      swapGas(sell) +
      (atomic ? atomicExecutorGas((venues[t] as Venue).swapTarget, (venues[1 - t] as Venue).swapTarget) : 0n);
    const atomicIndex = atomicL1At[k]?.[t];
    const l1FeeWei = atomic
      ? required(second[atomicIndex as number], "atomic L1 fee (GasPriceOracle)", decodeUint)
      : buyL1(k, t) + sellL1(k, t);
    const gasWei = gasUnits * gasPriceWei + l1FeeWei;
    const gasUsd = weiToUsdc(gasWei);
    const gross = sell.amountOut - size;
    const net = gross - gasUsd;
    return { buyOn, sellOn, size, buy, sell, gasUnits, l1FeeWei, gasWei, gasUsd, gross, net } as const;
  };

  const roundTrips = ([0, 1] as const).map((t) => {
    const result = trip(0, t);
    if ("reason" in result) throw new Error(`round trip ${t} at the amount: ${result.reason}`); // judged above
    return {
      buyOn: result.buyOn,
      sellOn: result.sellOn,
      usdcIn: usdcText(usdcIn),
      wethOut: wethText(result.buy.amountOut),
      usdcBack: usdcText(result.sell.amountOut),
      grossPnlUsdc: usdcText(result.gross),
      gasWei: result.gasWei.toString(),
      gasUsd: usdcText(result.gasUsd),
      netPnlUsdc: usdcText(result.net),
      netBps: ratioBps(result.net, usdcIn),
      transactions: atomic ? 1 : 2,
      gasUnits: Number(result.gasUnits),
      l1FeeWei: result.l1FeeWei.toString(),
      net: result.net,
    };
  });
  const [tripA, tripB] = roundTrips as [(typeof roundTrips)[number], (typeof roundTrips)[number]];
  const best = tripA.net >= tripB.net ? tripA : tripB;

  // The ladder, and the best and break-even sizes over it and the amount asked for.
  const all = sizes.map((_, k) => [trip(k, 0), trip(k, 1)] as const);
  const ladder = all.slice(1).map((trips, j) => ({
    usdcIn: usdcText(sizes[j + 1] as bigint),
    roundTrips: trips.map((r) =>
      "reason" in r
        ? {
            buyOn: r.buyOn,
            sellOn: r.sellOn,
            fillable: false,
            reason: r.reason,
            wethOut: null,
            usdcBack: null,
            grossPnlUsdc: null,
            gasUsd: null,
            netPnlUsdc: null,
            netBps: null,
          }
        : {
            buyOn: r.buyOn,
            sellOn: r.sellOn,
            fillable: true,
            wethOut: wethText(r.buy.amountOut),
            usdcBack: usdcText(r.sell.amountOut),
            grossPnlUsdc: usdcText(r.gross),
            gasUsd: usdcText(r.gasUsd),
            netPnlUsdc: usdcText(r.net),
            netBps: ratioBps(r.net, r.size),
          },
    ),
  }));
  const candidates = all.flat().flatMap((r) => ("reason" in r ? [] : [r]));
  const pick = (r: (typeof candidates)[number]) => ({
    usdcIn: usdcText(r.size),
    buyOn: r.buyOn,
    sellOn: r.sellOn,
    netPnlUsdc: usdcText(r.net),
    netBps: ratioBps(r.net, r.size),
  });
  const bestSize = candidates.reduce<(typeof candidates)[number] | undefined>(
    (top, r) => (!top || r.net > top.net || (r.net === top.net && r.size < top.size) ? r : top),
    undefined,
  );
  const breakEven =
    bestSize && bestSize.net >= 0n
      ? candidates
          .filter((r) => r.buyOn === bestSize.buyOn && r.net >= 0n)
          .reduce((low, r) => (r.size < low.size ? r : low))
      : undefined;
  const profitable = bestSize ? candidates.filter((r) => r.buyOn === bestSize.buyOn && r.net > 0n) : [];
  const largestProfitable = profitable.reduce<(typeof candidates)[number] | undefined>(
    (high, r) => (!high || r.size > high.size ? r : high),
    undefined,
  );

  // The ladder samples sizes: a pick at its end says nothing about the sizes beyond it.
  const largestSize = sizes.reduce((a, b) => (b > a ? b : a));
  const smallestSize = sizes.reduce((a, b) => (b < a ? b : a));
  const largestProfitableOpenEnded = largestProfitable?.size === largestSize;
  const breakEvenOpenEnded = breakEven?.size === smallestSize;
  if (largestProfitableOpenEnded) {
    warnings.push(
      `the largest size quoted (${usdcText(largestSize)} USDC) is still profitable: the largest profitable size may be above it`,
    );
  }
  if (breakEvenOpenEnded) {
    warnings.push(
      `the smallest size quoted (${usdcText(smallestSize)} USDC) already breaks even: the break-even size may be below it`,
    );
  }
  const ageSeconds = Number(header.timestamp - updatedAt);
  if (ageSeconds > settings.feedMaxAgeSeconds) {
    warnings.push(
      `the ETH/USD feed is stale: its answer is ${ageSeconds} s old at this block (more than ${settings.feedMaxAgeSeconds} s); gasUsd uses it anyway`,
    );
  }
  for (const l of legs) {
    if (Math.abs(l.priceImpactBps) > PRICE_IMPACT_WARNING_BPS) {
      warnings.push(`${l.venue} ${l.direction}: price impact ${l.priceImpactBps} bps at this size`);
    }
  }
  const isoSeconds = (seconds: bigint) => new Date(Number(seconds) * 1000).toISOString();
  return {
    simulated: settings.simulated ?? false,
    chainId: Number(chainId),
    blockNumber: Number(blockNumber),
    blockHash,
    blockTimestamp: isoSeconds(header.timestamp),
    blockAgeSeconds,
    execution: input.execution,
    pair: { usdc, weth },
    amountUsdc: usdcText(usdcIn),
    ethUsd: {
      price: formatUnitsExact(answer, feedDecimals),
      source: settings.simulated
        ? `simulated ETH / USD feed on the local chain ${addresses.chainlinkEthUsd} (a stand-in, not Chainlink)`
        : `Chainlink ETH / USD ${addresses.chainlinkEthUsd}`,
      updatedAt: isoSeconds(updatedAt),
      ageSeconds,
    },
    gas: {
      baseFeeWei: baseFeeWei.toString(),
      priorityFeeWei: settings.priorityFeeWei.toString(),
      gasPriceWei: gasPriceWei.toString(),
      overheadPerSwap: Number(SWAP_TX_OVERHEAD_GAS),
    },
    legs: legs.map(({ gasWei: _, ...rest }) => rest),
    roundTrips: roundTrips.map(({ net: _, ...rest }) => rest),
    best: {
      buyOn: best.buyOn,
      sellOn: best.sellOn,
      netPnlUsdc: best.netPnlUsdc,
      netBps: best.netBps,
      profitable: best.net > 0n,
    },
    sizes: {
      ladder,
      best: bestSize ? pick(bestSize) : null,
      breakEven: breakEven ? pick(breakEven) : null,
      largestProfitable: largestProfitable ? pick(largestProfitable) : null,
      largestProfitableOpenEnded,
      breakEvenOpenEnded,
    },
    warnings,
  };
}
