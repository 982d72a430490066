import { z } from "zod";

export const VENUES = [
  "uniswap-v3:500",
  "uniswap-v3:3000",
  "aerodrome:volatile",
  "aerodrome-slipstream:100",
] as const;

export const ChainArbitrageSnapshotRequest = z
  .strictObject({
    amountUsdc: z.number().min(10).max(1_000_000).default(1000),
    venues: z
      .tuple([z.enum(VENUES), z.enum(VENUES)])
      .refine(([a, b]) => a !== b, "the two venues must differ")
      .default(["uniswap-v3:500", "aerodrome:volatile"]),
    blockNumber: z.int().min(0).optional(),
  })
  .meta({ id: "ChainArbitrageSnapshotRequest" });

export const ChainArbitrageSnapshotResponse = z
  .looseObject({ blockNumber: z.int().min(0) })
  .meta({ id: "ChainArbitrageSnapshotResponse" });
