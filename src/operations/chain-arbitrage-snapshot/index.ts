import { defineOperation } from "../../catalog/operation.ts";
import { ChainArbitrageSnapshotRequest, ChainArbitrageSnapshotResponse } from "./schema.ts";

export const chainArbitrageSnapshot = defineOperation({
  id: "chain-arbitrage-snapshot",
  method: "POST",
  path: "/v1/chain-arbitrage-snapshot",
  priceUsd: "0.03",
  kind: "sync",
  summary: "Fee-inclusive USDC/WETH round trip between two Base DEXes",
  description:
    "Quotes a USDC→WETH→USDC round trip across two decentralized exchanges on Base at one block, " +
    "including pool fees, gas and the L1 data fee.",
  tags: ["chain"],
  inputFrom: "body",
  bodyOptional: true,
  input: ChainArbitrageSnapshotRequest,
  output: ChainArbitrageSnapshotResponse,
  outputContentType: "application/json",
  example: { input: { amountUsdc: 1000 } },
  errorResponses: [{ status: 502, description: "The chain RPC is unavailable; nothing is charged." }],
});
