import {
  type Address,
  decodeAbiParameters,
  decodeFunctionResult,
  encodeFunctionData,
  type Hex,
  parseAbi,
  zeroAddress,
} from "viem";
import type { ChainAddresses } from "./addresses.ts";
import type { VenueId } from "./schema.ts";

/** One read for Multicall3's aggregate3. */
export interface Call {
  target: Address;
  callData: Hex;
}

/** A fraction; fees and spot prices are exact rationals until the final rounding. */
export interface Ratio {
  numerator: bigint;
  denominator: bigint;
}

export interface Quote {
  amountOut: bigint;
  /** The quoter's own gas figure for the swap, when it gives one. */
  gasEstimate?: bigint;
  /**
   * The quote is for less than the whole input: QuoterV2 (sqrtPriceLimitX96 0 means "no limit", which
   * it turns into the extreme price MIN_SQRT_RATIO + 1 or MAX_SQRT_RATIO − 1) ran out of liquidity,
   * stopped at that price and returned what it filled.
   */
  partial: boolean;
}

/** Uniswap V3's TickMath bounds (v3-core TickMath.sol): QuoterV2's price limit when the caller gives none. */
export const MIN_SQRT_RATIO = 4295128739n;
export const MAX_SQRT_RATIO = 1461446703485210103287273052203988822378723970342n;

/** How a venue is read: the same interface on Base mainnet and on the local chain. */
export interface Venue {
  id: VenueId;
  /** The factory lookup of the USDC/WETH pool (zero address: no pool). */
  poolLookup: Call;
  quote(tokenIn: Address, tokenOut: Address, amountIn: bigint): Call;
  decodeQuote(data: Hex): Quote;
  /** The quote measures the swap's gas (QuoterV2), so it depends on which storage the call found warm. */
  quoteMeasuresGas: boolean;
  /** The swap fee as read on-chain at the block. */
  feeCall(pool: Address): Call;
  decodeFee(data: Hex): Ratio;
  /** The pool's spot state: token1 per token0 in atomic units, before fees. */
  spotCall(pool: Address): Call;
  decodeSpot(data: Hex): Ratio;
  /** The pool's liquidity where a swap would start (concentrated liquidity) or its reserves. */
  liquidityCall(pool: Address): Call;
  /** No liquidity to swap against: nothing at the current price, or an empty reserve. */
  decodeEmpty(data: Hex): boolean;
  /**
   * The exact-output quote that gives the input a partial fill consumed (concentrated liquidity
   * quoters have one; Aerodrome's x·y = k pool never fills partially).
   */
  quoteExactOutput?(tokenIn: Address, tokenOut: Address, amountOut: bigint): Call;
  decodeExactOutput?(data: Hex): bigint;
  /** Calldata of the swap a trader would send (for the L1 data fee, which depends on its size). */
  swapCalldata(tokenIn: Address, tokenOut: Address, amountIn: bigint): Hex;
  /** Where that swap goes. */
  swapTarget: Address;
}

/** Venues without a quoter gas figure (Aerodrome's Router quotes with a view call): a fixed estimate of the swap. */
export const AERODROME_VOLATILE_SWAP_GAS = 100_000n;

const UNISWAP_V3_ABI = parseAbi([
  "function getPool(address tokenA, address tokenB, uint24 fee) view returns (address)",
  "function quoteExactInputSingle((address tokenIn, address tokenOut, uint256 amountIn, uint24 fee, uint160 sqrtPriceLimitX96) params) returns (uint256 amountOut, uint160 sqrtPriceX96After, uint32 initializedTicksCrossed, uint256 gasEstimate)",
  "function fee() view returns (uint24)",
  "function liquidity() view returns (uint128)",
  "function quoteExactOutputSingle((address tokenIn, address tokenOut, uint256 amount, uint24 fee, uint160 sqrtPriceLimitX96) params) returns (uint256 amountIn, uint160 sqrtPriceX96After, uint32 initializedTicksCrossed, uint256 gasEstimate)",
  // SwapRouter02 on Base
  "function exactInputSingle((address tokenIn, address tokenOut, uint24 fee, address recipient, uint256 amountIn, uint256 amountOutMinimum, uint160 sqrtPriceLimitX96) params) payable returns (uint256 amountOut)",
]);
const SLIPSTREAM_ABI = parseAbi([
  "function getPool(address tokenA, address tokenB, int24 tickSpacing) view returns (address)",
  "function quoteExactInputSingle((address tokenIn, address tokenOut, uint256 amountIn, int24 tickSpacing, uint160 sqrtPriceLimitX96) params) returns (uint256 amountOut, uint160 sqrtPriceX96After, uint32 initializedTicksCrossed, uint256 gasEstimate)",
  "function fee() view returns (uint24)",
  "function quoteExactOutputSingle((address tokenIn, address tokenOut, uint256 amount, int24 tickSpacing, uint160 sqrtPriceLimitX96) params) returns (uint256 amountIn, uint160 sqrtPriceX96After, uint32 initializedTicksCrossed, uint256 gasEstimate)",
  // Slipstream's SwapRouter
  "function exactInputSingle((address tokenIn, address tokenOut, int24 tickSpacing, address recipient, uint256 deadline, uint256 amountIn, uint256 amountOutMinimum, uint160 sqrtPriceLimitX96) params) payable returns (uint256 amountOut)",
]);
const AERODROME_ABI = parseAbi([
  "struct Route { address from; address to; bool stable; address factory; }",
  "function getPool(address tokenA, address tokenB, bool stable) view returns (address)",
  "function getAmountsOut(uint256 amountIn, Route[] routes) view returns (uint256[] amounts)",
  "function getFee(address pool, bool stable) view returns (uint256)",
  "function getReserves() view returns (uint256 reserve0, uint256 reserve1, uint256 blockTimestampLast)",
  "function swapExactTokensForTokens(uint256 amountIn, uint256 amountOutMin, Route[] routes, address to, uint256 deadline) returns (uint256[] amounts)",
]);
const SLOT0_ABI = parseAbi(["function slot0() view returns (uint160 sqrtPriceX96)"]);
/** Any recipient: the L1 fee depends on the transaction's bytes, and a real address is 20 nonzero bytes. */
const SAMPLE_RECIPIENT: Address = "0x5a11e5d0c4d7a3b2f41e9c6b8a07d3f2e1c9b8a7";
const SAMPLE_DEADLINE = 4_102_444_800n; // 2100-01-01: a deadline as wide as a real one
const Q192 = 1n << 192n;

/** slot0's first word (Uniswap V3 and Slipstream differ after it): price = sqrtPriceX96² / 2^192. */
function decodeSqrtPrice(data: Hex): Ratio {
  const [sqrtPriceX96] = decodeAbiParameters([{ type: "uint160" }], `0x${data.slice(2, 66)}`);
  return { numerator: sqrtPriceX96 * sqrtPriceX96, denominator: Q192 };
}

function concentratedLiquidity(
  id: VenueId,
  key: number,
  abi: typeof UNISWAP_V3_ABI | typeof SLIPSTREAM_ABI,
  factory: Address,
  quoter: Address,
  usdc: Address,
  weth: Address,
): Venue {
  // The two ABIs share function names with different key types (fee or tick spacing).
  const encode = (target: Address, functionName: string, args: readonly unknown[]): Call => ({
    target,
    callData: encodeFunctionData({ abi, functionName, args } as Parameters<typeof encodeFunctionData>[0]),
  });
  const keyField = abi === SLIPSTREAM_ABI ? "tickSpacing" : "fee";
  return {
    id,
    poolLookup: encode(factory, "getPool", [usdc, weth, key]),
    quote: (tokenIn, tokenOut, amountIn) =>
      encode(quoter, "quoteExactInputSingle", [
        { tokenIn, tokenOut, amountIn, [keyField]: key, sqrtPriceLimitX96: 0n },
      ]),
    quoteMeasuresGas: true,
    decodeQuote(data) {
      const [amountOut, sqrtPriceX96After, , gasEstimate] = decodeFunctionResult({
        abi: UNISWAP_V3_ABI,
        functionName: "quoteExactInputSingle",
        data,
      });
      const partial = sqrtPriceX96After === MIN_SQRT_RATIO + 1n || sqrtPriceX96After === MAX_SQRT_RATIO - 1n;
      return { amountOut, gasEstimate, partial };
    },
    quoteExactOutput: (tokenIn, tokenOut, amount) =>
      encode(quoter, "quoteExactOutputSingle", [
        { tokenIn, tokenOut, amount, [keyField]: key, sqrtPriceLimitX96: 0n },
      ]),
    decodeExactOutput: (data) =>
      decodeFunctionResult({ abi: UNISWAP_V3_ABI, functionName: "quoteExactOutputSingle", data })[0],
    liquidityCall: (pool) => ({
      target: pool,
      callData: encodeFunctionData({ abi: UNISWAP_V3_ABI, functionName: "liquidity" }),
    }),
    decodeEmpty: (data) =>
      decodeFunctionResult({ abi: UNISWAP_V3_ABI, functionName: "liquidity", data }) === 0n,
    feeCall: (pool) => encode(pool, "fee", []),
    decodeFee: (data) => ({
      numerator: BigInt(decodeFunctionResult({ abi: UNISWAP_V3_ABI, functionName: "fee", data })),
      denominator: 1_000_000n, // hundredths of a basis point
    }),
    spotCall: (pool) => ({
      target: pool,
      callData: encodeFunctionData({ abi: SLOT0_ABI, functionName: "slot0" }),
    }),
    decodeSpot: decodeSqrtPrice,
    swapCalldata: (tokenIn, tokenOut, amountIn) =>
      encodeFunctionData({
        abi,
        functionName: "exactInputSingle",
        args: [
          abi === SLIPSTREAM_ABI
            ? {
                tokenIn,
                tokenOut,
                tickSpacing: key,
                recipient: SAMPLE_RECIPIENT,
                deadline: SAMPLE_DEADLINE,
                amountIn,
                amountOutMinimum: amountIn,
                sqrtPriceLimitX96: 0n,
              }
            : {
                tokenIn,
                tokenOut,
                fee: key,
                recipient: SAMPLE_RECIPIENT,
                amountIn,
                amountOutMinimum: amountIn,
                sqrtPriceLimitX96: 0n,
              },
        ],
      } as Parameters<typeof encodeFunctionData>[0]),
    swapTarget: quoter,
  };
}

function aerodromeVolatile(addresses: ChainAddresses): Venue {
  const { aerodromeFactory: factory, aerodromeRouter: router, usdc, weth } = addresses;
  const route = (from: Address, to: Address) => [{ from, to, stable: false, factory }];
  return {
    id: "aerodrome:volatile",
    poolLookup: {
      target: factory,
      callData: encodeFunctionData({
        abi: AERODROME_ABI,
        functionName: "getPool",
        args: [usdc, weth, false],
      }),
    },
    quote: (tokenIn, tokenOut, amountIn) => ({
      target: router,
      callData: encodeFunctionData({
        abi: AERODROME_ABI,
        functionName: "getAmountsOut",
        args: [amountIn, route(tokenIn, tokenOut)],
      }),
    }),
    quoteMeasuresGas: false,
    decodeQuote(data) {
      const amounts = decodeFunctionResult({ abi: AERODROME_ABI, functionName: "getAmountsOut", data });
      return { amountOut: amounts[amounts.length - 1] ?? 0n, partial: false };
    },
    liquidityCall: (pool) => ({
      target: pool,
      callData: encodeFunctionData({ abi: AERODROME_ABI, functionName: "getReserves" }),
    }),
    decodeEmpty(data) {
      const [reserve0, reserve1] = decodeFunctionResult({
        abi: AERODROME_ABI,
        functionName: "getReserves",
        data,
      });
      return reserve0 === 0n || reserve1 === 0n;
    },
    feeCall: (pool) => ({
      target: factory,
      callData: encodeFunctionData({ abi: AERODROME_ABI, functionName: "getFee", args: [pool, false] }),
    }),
    decodeFee: (data) => ({
      numerator: decodeFunctionResult({ abi: AERODROME_ABI, functionName: "getFee", data }),
      denominator: 10_000n, // basis points
    }),
    spotCall: (pool) => ({
      target: pool,
      callData: encodeFunctionData({ abi: AERODROME_ABI, functionName: "getReserves" }),
    }),
    decodeSpot(data) {
      const [reserve0, reserve1] = decodeFunctionResult({
        abi: AERODROME_ABI,
        functionName: "getReserves",
        data,
      });
      return { numerator: reserve1, denominator: reserve0 };
    },
    swapCalldata: (tokenIn, tokenOut, amountIn) =>
      encodeFunctionData({
        abi: AERODROME_ABI,
        functionName: "swapExactTokensForTokens",
        args: [amountIn, amountIn, route(tokenIn, tokenOut), SAMPLE_RECIPIENT, SAMPLE_DEADLINE],
      }),
    swapTarget: router,
  };
}

/** The venue as read through the configured contracts. */
export function venue(id: VenueId, addresses: ChainAddresses): Venue {
  const { usdc, weth } = addresses;
  switch (id) {
    case "uniswap-v3:500":
    case "uniswap-v3:3000":
      return concentratedLiquidity(
        id,
        Number(id.split(":")[1]),
        UNISWAP_V3_ABI,
        addresses.uniswapV3Factory,
        addresses.uniswapV3Quoter,
        usdc,
        weth,
      );
    case "aerodrome-slipstream:100":
      return concentratedLiquidity(
        id,
        100,
        SLIPSTREAM_ABI,
        addresses.slipstreamFactory,
        addresses.slipstreamQuoter,
        usdc,
        weth,
      );
    case "aerodrome:volatile":
      return aerodromeVolatile(addresses);
  }
}

export const decodeAddress = (data: Hex): Address => {
  const [value] = decodeAbiParameters([{ type: "address" }], data);
  return value;
};

export const isZeroAddress = (value: Address) => value.toLowerCase() === zeroAddress;
