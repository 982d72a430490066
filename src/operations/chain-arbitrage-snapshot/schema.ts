import { z } from "zod";

export const VENUES = [
  "uniswap-v3:500",
  "uniswap-v3:3000",
  "aerodrome:volatile",
  "aerodrome-slipstream:100",
] as const;
export type VenueId = (typeof VENUES)[number];

export const DEFAULT_VENUES: [VenueId, VenueId] = ["uniswap-v3:500", "aerodrome:volatile"];
export const MIN_AMOUNT_USDC = 10;
export const MAX_AMOUNT_USDC = 1_000_000;
/** Sizes of the ladder: log-spaced from amountUsdc / 100 to amountUsdc × 100, within the bounds. */
export const LADDER_SIZES = 8;
export const EXECUTIONS = ["separate", "atomic"] as const;

const venue = z.enum(VENUES, { error: `must be one of ${VENUES.join(", ")}` });

export const ChainArbitrageSnapshotRequest = z
  .strictObject({
    amountUsdc: z
      .number()
      .min(MIN_AMOUNT_USDC)
      .max(MAX_AMOUNT_USDC)
      // USDC has 6 decimals: a finer amount has no on-chain form.
      .refine((value) => /^\d+(\.\d{1,6})?$/.test(String(value)), {
        message: "must have at most 6 decimals (USDC's precision)",
      })
      .default(1000)
      .meta({ description: "USDC to send round (10 to 1,000,000, at most 6 decimals). Default 1000." }),
    venues: z
      .tuple([venue, venue])
      .refine(([a, b]) => a !== b, { message: "the two venues must differ", path: [1] })
      .default(DEFAULT_VENUES)
      .meta({
        description:
          "The two venues A and B. Round trips: buy WETH on A and sell on B, and buy on B and sell on A. " +
          "Default uniswap-v3:500 and aerodrome:volatile.",
        // What the tuple enforces, said in every document: exactly two venues, two different ones (the
        // OpenAPI generator keeps only `prefixItems`, which would let a third item through).
        items: { type: "string", enum: [...VENUES] },
        minItems: 2,
        maxItems: 2,
        uniqueItems: true,
      }),
    execution: z
      .enum(EXECUTIONS, { error: `must be one of ${EXECUTIONS.join(", ")}` })
      .default("separate")
      .meta({
        description:
          'How the round trip is sent: "separate" (two swap transactions, each with its own 21,000 ' +
          'intrinsic gas and L1 data fee) or "atomic" (both swaps in one transaction through an executor ' +
          "contract: one intrinsic gas and one L1 data fee for both calldatas, plus the executor's cold call to " +
          "each router and its dispatch). Default separate.",
      }),
    blockNumber: z
      .int()
      .min(1)
      .max(Number.MAX_SAFE_INTEGER)
      .optional()
      .meta({ description: "Quote at this block (needs an archive RPC for old blocks). Default: latest." }),
  })
  .meta({
    id: "ChainArbitrageSnapshotRequest",
    description: "A fee-inclusive USDC→WETH→USDC round trip between two Base DEXes, both directions.",
  });
export type ChainArbitrageSnapshotInput = z.output<typeof ChainArbitrageSnapshotRequest>;

const address = z.string().regex(/^0x[0-9a-fA-F]{40}$/);
const decimal = (description: string) =>
  z
    .string()
    .regex(/^-?\d+(\.\d+)?$/)
    .meta({ description });

const Leg = z.object({
  venue: z.enum(VENUES),
  pool: address.meta({ description: "The pool the quote went through." }),
  direction: z.enum(["USDC->WETH", "WETH->USDC"]),
  tokenIn: address,
  tokenOut: address,
  feeBps: z
    .number()
    .meta({ description: "The pool's swap fee as read on-chain at the block, in basis points." }),
  amountIn: decimal("Exact on-chain input, in token units."),
  amountOut: decimal("Exact on-chain quote, in token units."),
  effectivePrice: decimal("USDC per WETH of this leg, fee included (rounded half up to 6 decimals)."),
  priceImpactBps: z.number().meta({
    description:
      "How far amountOut falls short of the pool's spot price after its fee, in basis points (2 decimals).",
  }),
  gasUnits: z
    .int()
    .meta({ description: "Quoter estimate (or the venue's fixed figure) plus the fixed overhead." }),
  gasEstimateSource: z.enum(["quoter", "fixed"]),
  l1FeeWei: decimal("Base's L1 data fee for a transaction of this swap's size (GasPriceOracle.getL1Fee)."),
  gasCostWei: decimal("gasUnits × gas price + l1FeeWei, in wei."),
});

const RoundTrip = z.object({
  buyOn: z.enum(VENUES),
  sellOn: z.enum(VENUES),
  usdcIn: decimal("USDC sent into the buy leg."),
  wethOut: decimal("WETH the buy leg returns (and the sell leg spends)."),
  usdcBack: decimal("USDC the sell leg returns."),
  grossPnlUsdc: decimal("usdcBack − usdcIn, exact."),
  gasWei: decimal("Both legs' gasCostWei."),
  gasUsd: decimal("gasWei at the feed's ETH/USD price, rounded up to a whole USDC atomic unit (6 decimals)."),
  netPnlUsdc: decimal("grossPnlUsdc − gasUsd, exact."),
  netBps: z
    .number()
    .meta({ description: "netPnlUsdc / usdcIn in basis points (rounded half away from 0, 2 decimals)." }),
  transactions: z.int().min(1).max(2).meta({ description: "2 when execution is separate, 1 when atomic." }),
  gasUnits: z.int().meta({
    description:
      "separate: both legs' gasUnits; atomic: both legs' gasUnits − 21,000 (one transaction's intrinsic gas) " +
      "+ 2,600 per router the executor calls (cold, EIP-2929) + 5,000 for the executor's dispatch.",
  }),
  l1FeeWei: decimal(
    "separate: both legs' l1FeeWei; atomic: GasPriceOracle.getL1Fee of one transaction carrying both swaps.",
  ),
});

const LadderTrip = z.object({
  buyOn: z.enum(VENUES),
  sellOn: z.enum(VENUES),
  fillable: z.boolean().meta({
    description:
      "false when a leg's pool cannot take this size (a partial fill, no quote): the figures are then null.",
  }),
  reason: z.string().optional().meta({ description: "Why a size is not fillable." }),
  wethOut: decimal("WETH the buy leg returns.").nullable(),
  usdcBack: decimal("USDC the sell leg returns.").nullable(),
  grossPnlUsdc: decimal("usdcBack − usdcIn, exact.").nullable(),
  gasUsd: decimal("The round trip's gas in USD (same rules as roundTrips).").nullable(),
  netPnlUsdc: decimal("grossPnlUsdc − gasUsd, exact.").nullable(),
  netBps: z.number().nullable(),
});

const SizePick = z.object({
  usdcIn: decimal("The size, in USDC."),
  buyOn: z.enum(VENUES),
  sellOn: z.enum(VENUES),
  netPnlUsdc: decimal("Net result at this size."),
  netBps: z.number(),
});

export const ChainArbitrageSnapshotResponse = z
  .object({
    simulated: z.boolean().meta({
      description:
        "true in local mode: the quotes come from the service's local test chain (which reports Base's chain id " +
        "8453), its own deployment of the DEX contracts and a stand-in ETH/USD feed, not from Base. Such an " +
        "answer says nothing about Base's markets.",
    }),
    chainId: z
      .int()
      .meta({ description: "As the chain reports it (8453 also on the local test chain: see simulated)." }),
    blockNumber: z.int().min(0),
    blockHash: z.string().regex(/^0x[0-9a-f]{64}$/),
    blockTimestamp: z.iso.datetime(),
    blockAgeSeconds: z.int().meta({
      description:
        "Service clock − blockTimestamp when it quoted (a lagging RPC serves an old `latest`); in local " +
        "mode the local chain's latest block timestamp − blockTimestamp, as that chain mines on demand. " +
        "Above ARBITRAGE_BLOCK_WARN_AGE_SECONDS it is a warning; for `latest`, above " +
        "ARBITRAGE_BLOCK_MAX_AGE_SECONDS a 502.",
    }),
    execution: z.enum(EXECUTIONS),
    pair: z.object({ usdc: address, weth: address }),
    amountUsdc: decimal("The USDC amount of each round trip."),
    ethUsd: z.object({
      price: decimal("The feed's answer, exact."),
      source: z.string().meta({
        description:
          "The feed and its address: Chainlink ETH / USD on Base; in local mode (simulated) a stand-in feed, named as one.",
      }),
      updatedAt: z.iso.datetime(),
      ageSeconds: z.int().meta({ description: "blockTimestamp − updatedAt." }),
    }),
    gas: z.object({
      baseFeeWei: decimal("The block's base fee."),
      priorityFeeWei: decimal("The configured priority fee (ARBITRAGE_PRIORITY_FEE_WEI)."),
      gasPriceWei: decimal("baseFeeWei + priorityFeeWei: what each swap's gas is priced at."),
      overheadPerSwap: z.int().meta({ description: "Fixed gas added to each swap's estimate." }),
    }),
    legs: z.array(Leg).length(4).meta({
      description: "Buy on A, sell on B, buy on B, sell on A: all quoted at blockNumber.",
    }),
    roundTrips: z.array(RoundTrip).length(2),
    best: z.object({
      buyOn: z.enum(VENUES),
      sellOn: z.enum(VENUES),
      netPnlUsdc: decimal("The better round trip's net result."),
      netBps: z.number(),
      profitable: z.boolean(),
    }),
    sizes: z
      .object({
        ladder: z
          .array(
            z.object({ usdcIn: decimal("The size, in USDC."), roundTrips: z.array(LadderTrip).length(2) }),
          )
          .meta({
            description:
              "Log-spaced sizes from amountUsdc / 100 to amountUsdc × 100 (within 10 and 1,000,000 USDC), " +
              "both directions each, quoted at blockNumber in the same two RPC round trips. Every size's gas is " +
              "measured cold (each quote that measures gas in an eth_call of its own), as a swap sent alone costs: " +
              "the same size costs the same gas wherever it stands in the ladder.",
          }),
        best: SizePick.nullable().meta({
          description: "The fillable size and direction with the highest netPnlUsdc (amountUsdc included).",
        }),
        breakEven: SizePick.nullable().meta({
          description:
            "The smallest ladder size (or amountUsdc) where the best direction nets ≥ 0 after gas; null if none.",
        }),
        largestProfitable: SizePick.nullable().meta({
          description:
            "The largest ladder size (or amountUsdc) where the best direction nets > 0 after gas; null if none. " +
            "Between breakEven and this size the ladder's sizes are the ones sampled: a size between two of them is not quoted.",
        }),
        largestProfitableOpenEnded: z.boolean().meta({
          description:
            "True when largestProfitable is the largest size quoted: the true largest profitable size may be above it (a warning says so).",
        }),
        breakEvenOpenEnded: z.boolean().meta({
          description:
            "True when breakEven is the smallest size quoted: the true break-even size may be below it (a warning says so).",
        }),
      })
      .meta({ description: "The answer at other sizes: one size per answer is rarely the right one." }),
    warnings: z.array(z.string()),
  })
  .meta({ id: "ChainArbitrageSnapshotResponse" });
export type ChainArbitrageSnapshotOutput = z.output<typeof ChainArbitrageSnapshotResponse>;
