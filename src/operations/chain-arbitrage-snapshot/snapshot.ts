import {
  type Address,
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
import type { ChainArbitrageSnapshotInput, ChainArbitrageSnapshotOutput, VenueId } from "./schema.ts";
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

export interface SnapshotSettings {
  addresses: ChainAddresses;
  /** Added to the block's base fee to price gas (Base's base fee alone does not get a swap included). */
  priorityFeeWei: bigint;
  /** A feed older than this (at the block) is reported in `warnings`. */
  feedMaxAgeSeconds: number;
}

/**
 * Gas every swap transaction costs beyond the quoter's figure: 21,000 intrinsic, ~3,000 of calldata,
 * and the router's own work (entry, deadline, the transferFrom of the input token in the swap
 * callback, which QuoterV2's estimate does not reach because its callback reverts).
 */
export const SWAP_TX_OVERHEAD_GAS = 60_000n;
const PRICE_IMPACT_WARNING_BPS = 50;
const USDC_DECIMALS = 6;
const WETH_DECIMALS = 18;

const MULTICALL3_ABI = parseAbi([
  "function aggregate3((address target, bool allowFailure, bytes callData)[] calls) payable returns ((bool success, bytes returnData)[] returnData)",
  "function getBlockNumber() view returns (uint256 blockNumber)",
  "function getChainId() view returns (uint256 chainid)",
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
  new Problem(502, "chain-unavailable", "Chain RPC unavailable", `${detail}; nothing was charged`);

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
    /not found|out ?of ?range|unknown|future|missing|not available|pruned/i.test(detail)
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
  block: bigint | undefined,
  requestedBlock: number | undefined,
): Promise<readonly Result[]> {
  const { data } = await client.call({
    to: multicall3,
    data: encodeFunctionData({
      abi: MULTICALL3_ABI,
      functionName: "aggregate3",
      args: [calls.map((call) => ({ ...call, allowFailure: true }))],
    }),
    ...(block === undefined ? { blockTag: "latest" as const } : { blockNumber: block }),
  });
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

const multicallRead = (multicall3: Address, functionName: "getBlockNumber" | "getChainId"): Call => ({
  target: multicall3,
  callData: encodeFunctionData({ abi: MULTICALL3_ABI, functionName }),
});
const decodeUint = (data: Hex) =>
  decodeFunctionResult({ abi: MULTICALL3_ABI, functionName: "getBlockNumber", data });

/**
 * The unsigned EIP-1559 transaction a trader would send for this swap: GasPriceOracle.getL1Fee
 * prices its bytes (and adds the signature itself). Nonce, gas and fee fields hold typical values:
 * only their encoded sizes matter.
 */
function sampleTransaction(venue: Venue, tokenIn: Address, tokenOut: Address, amountIn: bigint): Hex {
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

/**
 * One snapshot in two RPC round trips, both at one block:
 *  1. aggregate3 at the requested block (or latest): the block number it ran at, the chain id, the
 *     ETH/USD feed, both pool lookups, the USDC→WETH quote on each venue, the L1 fee of each venue's swap;
 *  2. one JSON-RPC batch at that block number: the block header (timestamp, base fee) and aggregate3 of
 *     the WETH→USDC quotes for the WETH the first legs returned, each pool's fee and spot state.
 * The second legs need the first legs' outputs, which is why one aggregate3 cannot do it all.
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
  const requestedBlock = input.blockNumber === undefined ? undefined : BigInt(input.blockNumber);

  const first = await aggregate(
    client,
    multicall3,
    [
      multicallRead(multicall3, "getBlockNumber"),
      multicallRead(multicall3, "getChainId"),
      {
        target: addresses.chainlinkEthUsd,
        callData: encodeFunctionData({ abi: FEED_ABI, functionName: "latestRoundData" }),
      },
      {
        target: addresses.chainlinkEthUsd,
        callData: encodeFunctionData({ abi: FEED_ABI, functionName: "decimals" }),
      },
      ...venues.map((v) => v.poolLookup),
      ...venues.map((v) => v.quote(usdc, weth, usdcIn)),
      ...venues.map((v) => ({
        target: addresses.gasPriceOracle,
        callData: encodeFunctionData({
          abi: GAS_PRICE_ORACLE_ABI,
          functionName: "getL1Fee",
          args: [sampleTransaction(v, usdc, weth, usdcIn)],
        }),
      })),
    ],
    requestedBlock,
    input.blockNumber,
  ).catch((error) => {
    throw rpcProblem(error, input.blockNumber);
  });
  const blockNumber = required(first[0], "block number", decodeUint);
  // A factory without code at this block (not yet deployed) has no pool either.
  const pools = venues.map((v, i) => {
    const result = first[4 + i];
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
  const chainId = required(first[1], "chain id", decodeUint);
  const [, answer, , updatedAt] = required(first[2], "ETH/USD round (feed latestRoundData)", (data) =>
    decodeFunctionResult({ abi: FEED_ABI, functionName: "latestRoundData", data }),
  );
  const feedDecimals = required(first[3], "ETH/USD feed decimals", (data) =>
    decodeFunctionResult({ abi: FEED_ABI, functionName: "decimals", data }),
  );
  if (answer <= 0n) throw chainUnavailable(`the ETH/USD feed answers ${answer}`);
  const quoteOrRefuse = (v: Venue, result: Result | undefined, what: string): Quote => {
    const quote = result?.success ? v.decodeQuote(result.returnData) : undefined;
    if (!quote || quote.amountOut === 0n) {
      throw invalidRequest([
        {
          pointer: "/amountUsdc",
          message: `${v.id} cannot quote ${what} at block ${blockNumber} (the pool lacks liquidity for this size)`,
        },
      ]);
    }
    return quote;
  };
  const buys = venues.map((v, i) =>
    quoteOrRefuse(v, first[6 + i], `${formatUnitsExact(usdcIn, USDC_DECIMALS)} USDC → WETH`),
  ) as [Quote, Quote];
  const l1Fees = venues.map((v, i) => required(first[8 + i], `${v.id} L1 fee (GasPriceOracle)`, decodeUint));

  // Sell on the other venue the WETH each venue's buy returned.
  const sellCalls = [
    venues[1].quote(weth, usdc, buys[0].amountOut),
    venues[0].quote(weth, usdc, buys[1].amountOut),
  ];
  const [block, second] = await Promise.all([
    client.getBlock({ blockNumber }),
    aggregate(
      client,
      multicall3,
      [
        multicallRead(multicall3, "getBlockNumber"),
        ...sellCalls,
        ...venues.map((v, i) => v.feeCall(pools[i] as Address)),
        ...venues.map((v, i) => v.spotCall(pools[i] as Address)),
      ],
      blockNumber,
      input.blockNumber,
    ),
  ]).catch((error) => {
    throw rpcProblem(error, input.blockNumber);
  });
  if (required(second[0], "block number", decodeUint) !== blockNumber || block.number !== blockNumber) {
    throw chainUnavailable(`the chain RPC answered for another block than ${blockNumber}`);
  }
  const sells = [
    quoteOrRefuse(venues[1], second[1], `${formatUnitsExact(buys[0].amountOut, WETH_DECIMALS)} WETH → USDC`),
    quoteOrRefuse(venues[0], second[2], `${formatUnitsExact(buys[1].amountOut, WETH_DECIMALS)} WETH → USDC`),
  ] as [Quote, Quote];
  const fees = venues.map((v, i) => required(second[3 + i], `${v.id} fee`, v.decodeFee));
  // Both protocols order a pool's tokens by address; spot is token1 per token0.
  const wethIsToken0 = weth.toLowerCase() < usdc.toLowerCase();
  const spots = venues.map((v, i) => {
    const spot = required(second[5 + i], `${v.id} pool state`, v.decodeSpot);
    if (spot.numerator === 0n || spot.denominator === 0n) throw chainUnavailable(`${v.id}'s pool is empty`);
    return wethIsToken0 ? spot : { numerator: spot.denominator, denominator: spot.numerator };
  });

  const baseFeeWei = block.baseFeePerGas ?? 0n;
  const gasPriceWei = baseFeeWei + settings.priorityFeeWei;
  const leg = (index: 0 | 1, direction: LegFacts["direction"], amountIn: bigint, quote: Quote) =>
    describeLeg(
      {
        venue: venues[index],
        pool: pools[index],
        direction,
        amountIn,
        quote,
        fee: fees[index] as Ratio,
        spotUsdcPerWei: spots[index] as Ratio,
        l1FeeWei: l1Fees[index] as bigint,
      },
      addresses,
      gasPriceWei,
    );
  const legs = [
    leg(0, "USDC->WETH", usdcIn, buys[0]),
    leg(1, "WETH->USDC", buys[0].amountOut, sells[0]),
    leg(1, "USDC->WETH", usdcIn, buys[1]),
    leg(0, "WETH->USDC", buys[1].amountOut, sells[1]),
  ];
  // Gas in USDC atomic units: wei × (USD per ETH) / 10^12, rounded up (a cost is never understated).
  const weiToUsdc = (wei: bigint) =>
    divCeil(wei * answer * 10n ** BigInt(USDC_DECIMALS), 10n ** BigInt(WETH_DECIMALS + feedDecimals));
  const roundTrips = ([0, 1] as const).map((first) => {
    const buy = legs[2 * first] as (typeof legs)[number];
    const sell = legs[2 * first + 1] as (typeof legs)[number];
    const usdcBack = sells[first].amountOut;
    const gross = usdcBack - usdcIn;
    const gasWei = buy.gasWei + sell.gasWei;
    const gasUsd = weiToUsdc(gasWei);
    const net = gross - gasUsd;
    return {
      buyOn: buy.venue as VenueId,
      sellOn: sell.venue as VenueId,
      usdcIn: formatUnitsExact(usdcIn, USDC_DECIMALS),
      wethOut: formatUnitsExact(buys[first].amountOut, WETH_DECIMALS),
      usdcBack: formatUnitsExact(usdcBack, USDC_DECIMALS),
      grossPnlUsdc: formatUnitsExact(gross, USDC_DECIMALS),
      gasWei: gasWei.toString(),
      gasUsd: formatUnitsExact(gasUsd, USDC_DECIMALS),
      netPnlUsdc: formatUnitsExact(net, USDC_DECIMALS),
      netBps: ratioBps(net, usdcIn),
      net,
    };
  });
  const best =
    (roundTrips[0] as (typeof roundTrips)[number]).net >= (roundTrips[1] as (typeof roundTrips)[number]).net
      ? (roundTrips[0] as (typeof roundTrips)[number])
      : (roundTrips[1] as (typeof roundTrips)[number]);

  const warnings: string[] = [];
  const ageSeconds = Number(block.timestamp - updatedAt);
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
    chainId: Number(chainId),
    blockNumber: Number(blockNumber),
    blockHash: block.hash as Hex,
    blockTimestamp: isoSeconds(block.timestamp),
    pair: { usdc, weth },
    amountUsdc: formatUnitsExact(usdcIn, USDC_DECIMALS),
    ethUsd: {
      price: formatUnitsExact(answer, feedDecimals),
      source: `Chainlink ETH / USD ${addresses.chainlinkEthUsd}`,
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
    warnings,
  };
}
