import { createPublicClient, parseAbi, parseAbiItem } from "viem";
import { jsonRpcTransport } from "../../chain/json-rpc-transport.ts";

const BALANCE_OF_ABI = parseAbi(["function balanceOf(address holder) view returns (uint256)"]);
const TRANSFER = parseAbiItem("event Transfer(address indexed from, address indexed to, uint256 value)");
/** Senders per eth_getLogs call: an OR of topics nodes accept without complaint. */
const SENDERS_PER_QUERY = 100;

/** A token balance read from the chain: what a payer can still pay at this moment (or at `block`). */
export interface TokenBalances {
  balanceOf(asset: `0x${string}`, holder: `0x${string}`, block?: bigint): Promise<bigint>;
}

/** What watching payers' cover needs of the chain: balances at a block and who sent the token when. */
export interface TokenTransfers extends TokenBalances {
  latestBlock(): Promise<bigint>;
  /** Of `holders`, those (lower-cased) that sent `asset` in blocks fromBlock..toBlock, both included. */
  sendersAmong(
    asset: `0x${string}`,
    holders: readonly `0x${string}`[],
    fromBlock: bigint,
    toBlock: bigint,
  ): Promise<Set<string>>;
}

export function createTokenBalances(rpcUrl: string): TokenTransfers {
  const client = createPublicClient({ transport: jsonRpcTransport(rpcUrl, { retryCount: 2 }) });
  return {
    balanceOf: (asset, holder, block) =>
      client.readContract({
        address: asset,
        abi: BALANCE_OF_ABI,
        functionName: "balanceOf",
        args: [holder],
        ...(block === undefined ? {} : { blockNumber: block }),
      }),
    latestBlock: () => client.getBlockNumber({ cacheTime: 0 }),
    async sendersAmong(asset, holders, fromBlock, toBlock) {
      const senders = new Set<string>();
      for (let at = 0; at < holders.length; at += SENDERS_PER_QUERY) {
        const logs = await client.getLogs({
          address: asset,
          event: TRANSFER,
          args: { from: holders.slice(at, at + SENDERS_PER_QUERY) },
          fromBlock,
          toBlock,
        });
        for (const log of logs) if (log.args.from) senders.add(log.args.from.toLowerCase());
      }
      return senders;
    },
  };
}
