/**
 * What the voucher tests read from and do to the local chain, and the official client they pay with
 * (`@x402/fetch` with @x402/evm's batch-settlement client scheme alone). Money is read from the chain:
 * the settlement contract's channel state and payTo's USDC, never from what the service says.
 */
import { toClientEvmSigner } from "@x402/evm";
import { BatchSettlementEvmScheme, InMemoryClientChannelStorage } from "@x402/evm/batch-settlement/client";
import { wrapFetchWithPayment, x402Client } from "@x402/fetch";
import { createPublicClient, http, parseAbiItem } from "viem";
import { privateKeyToAccount } from "viem/accounts";
import { BATCH_SETTLEMENT_ADDRESS, batchSettlementAbi } from "../../src/chain/batch-settlement.ts";
import { jsonPost } from "../helpers/service.ts";

const SETTLED = parseAbiItem(
  "event Settled(address indexed receiver, address indexed token, address indexed sender, uint128 amount)",
);

export function voucherChain(rpcUrl: string) {
  const client = createPublicClient({ transport: http(rpcUrl), pollingInterval: 50 });
  const rpc = async (method: string, params: unknown[] = []) => {
    const answer = (await (
      await fetch(rpcUrl, jsonPost({ jsonrpc: "2.0", id: 1, method, params }))
    ).json()) as {
      result?: unknown;
      error?: { message: string };
    };
    if (answer.error) throw new Error(`${method}: ${answer.error.message}`);
    return answer.result;
  };
  return {
    client,
    rpc,
    /** The channel on chain: balance and totalClaimed. */
    async channel(channelId: string): Promise<{ balance: bigint; totalClaimed: bigint }> {
      const [balance, totalClaimed] = (await client.readContract({
        address: BATCH_SETTLEMENT_ADDRESS,
        abi: batchSettlementAbi,
        functionName: "channels",
        args: [channelId as `0x${string}`],
      })) as [bigint, bigint];
      return { balance, totalClaimed };
    },
    /** The settle transactions that paid `receiver`, from block `fromBlock` on. */
    async settlements(receiver: `0x${string}`, fromBlock: bigint) {
      return client.getLogs({
        address: BATCH_SETTLEMENT_ADDRESS,
        event: SETTLED,
        args: { receiver },
        fromBlock,
      });
    },
    /** Transactions waiting in the pool (automine off). */
    async pending(): Promise<number> {
      const status = (await rpc("txpool_status")) as { pending?: string };
      return Number.parseInt(status.pending ?? "0x0", 16);
    },
  };
}

/** The official client on its own channel storage. */
export function officialVoucherClient(
  rpcUrl: string,
  network: `${string}:${string}`,
  privateKey: `0x${string}`,
  storage = new InMemoryClientChannelStorage(),
  salt?: `0x${string}`,
) {
  const publicClient = createPublicClient({ transport: http(rpcUrl), pollingInterval: 50 });
  const account = privateKeyToAccount(privateKey);
  const scheme = new BatchSettlementEvmScheme(toClientEvmSigner(account, publicClient as never), {
    storage,
    ...(salt ? { salt } : {}),
  });
  const client = new x402Client().register(network, scheme);
  return { pay: wrapFetchWithPayment(fetch, client), client, scheme, storage, account };
}
