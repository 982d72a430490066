import type { LocalAccount } from "viem";
import { type Chain, createPublicClient, createWalletClient, defineChain } from "viem";
import { jsonRpcTransport } from "../../chain/json-rpc-transport.ts";
import { type RawReceipt, ReceiptWatcher } from "./receipt-watcher.ts";

/**
 * The settler's connections to the chain: reads batched over a kept-alive connection with transient
 * errors retried, broadcasts never retried (an unanswered send is an unknown outcome), and one receipt
 * poller for every pending settlement.
 */
export function settlerClients(
  options: { rpcUrl: string; chainId: number; pollingIntervalMs: number; rpcTimeoutMs?: number },
  account: LocalAccount,
) {
  const chain: Chain = defineChain({
    id: options.chainId,
    name: `eip155:${options.chainId}`,
    nativeCurrency: { name: "Ether", symbol: "ETH", decimals: 18 },
    rpcUrls: { default: { http: [options.rpcUrl] } },
  });
  // Calls made in the same tick travel as one JSON-RPC batch over a kept-alive connection.
  // Transient RPC errors (5xx, 429, resets) are retried, so one lost poll does not orphan a settlement.
  const transport = jsonRpcTransport(options.rpcUrl, { timeoutMs: options.rpcTimeoutMs, retryCount: 2 });
  // Broadcasts are never retried by the transport: an unanswered send is an unknown outcome.
  const sendTransport = jsonRpcTransport(options.rpcUrl, { timeoutMs: options.rpcTimeoutMs, retryCount: 0 });
  const publicClient = createPublicClient({ chain, transport, pollingInterval: options.pollingIntervalMs });
  const sender = createPublicClient({ chain, transport: sendTransport });
  const walletClient = createWalletClient({ chain, transport, account });
  const receipts = new ReceiptWatcher(
    (hashes) =>
      Promise.all(
        hashes.map(
          (hash) =>
            publicClient.request({
              method: "eth_getTransactionReceipt",
              params: [hash],
            }) as Promise<RawReceipt | null>,
        ),
      ),
    options.pollingIntervalMs,
  );

  return { publicClient, sender, walletClient, receipts };
}
