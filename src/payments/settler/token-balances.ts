import { createPublicClient, parseAbi } from "viem";
import { jsonRpcTransport } from "../../chain/json-rpc-transport.ts";

const BALANCE_OF_ABI = parseAbi(["function balanceOf(address holder) view returns (uint256)"]);

/** A token balance read from the chain: what a payer can still pay at this moment. */
export interface TokenBalances {
  balanceOf(asset: `0x${string}`, holder: `0x${string}`): Promise<bigint>;
}

export function createTokenBalances(rpcUrl: string): TokenBalances {
  const client = createPublicClient({ transport: jsonRpcTransport(rpcUrl, { retryCount: 2 }) });
  return {
    balanceOf: (asset, holder) =>
      client.readContract({ address: asset, abi: BALANCE_OF_ABI, functionName: "balanceOf", args: [holder] }),
  };
}
