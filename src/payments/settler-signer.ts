import type { ExactEvmScheme } from "@x402/evm/exact/facilitator";
import { type Chain, createPublicClient, createWalletClient, defineChain, http } from "viem";
import { privateKeyToAccount } from "viem/accounts";
import { recordingTransportFailures as tracked } from "../chain/transport-failures.ts";
import { NonceAllocator } from "./nonce-allocator.ts";

type FacilitatorEvmSigner = ConstructorParameters<typeof ExactEvmScheme>[0];

export interface SettlerSigner extends FacilitatorEvmSigner {
  readonly address: `0x${string}`;
  /** Latest block number: the chain health probe. */
  blockNumber(): Promise<bigint>;
}

/**
 * The in-process facilitator's chain access: reads and signature checks through the RPC,
 * settlement transactions signed with the operator's key and sent through a NonceAllocator.
 */
export function createSettlerSigner(options: {
  privateKey: `0x${string}`;
  rpcUrl: string;
  chainId: number;
  /** Receipt polling: Base makes a block every 2 s, so viem's default 1 s poll adds up to a second. */
  pollingIntervalMs: number;
  rpcTimeoutMs?: number;
  /** How long to wait for a settlement's receipt. */
  confirmationTimeoutMs: number;
}): SettlerSigner {
  const account = privateKeyToAccount(options.privateKey);
  const chain: Chain = defineChain({
    id: options.chainId,
    name: `eip155:${options.chainId}`,
    nativeCurrency: { name: "Ether", symbol: "ETH", decimals: 18 },
    rpcUrls: { default: { http: [options.rpcUrl] } },
  });
  // Transient RPC errors (5xx, 429, resets) are retried, so one lost poll does not orphan a settlement.
  const transport = http(options.rpcUrl, { timeout: options.rpcTimeoutMs ?? 10_000, retryCount: 2 });
  const publicClient = createPublicClient({ chain, transport, pollingInterval: options.pollingIntervalMs });
  const walletClient = createWalletClient({ chain, transport, account });
  const nonces = new NonceAllocator(() =>
    publicClient.getTransactionCount({ address: account.address, blockTag: "pending" }),
  );

  return {
    address: account.address,
    getAddresses: () => [account.address],
    blockNumber: () => publicClient.getBlockNumber({ cacheTime: 0 }),
    // biome-ignore lint/suspicious/noExplicitAny: the x402 signer interface is ABI-agnostic; viem's typing is not.
    readContract: (args) => tracked(() => publicClient.readContract(args as any)),
    // biome-ignore lint/suspicious/noExplicitAny: as above.
    verifyTypedData: (args) => tracked(() => publicClient.verifyTypedData(args as any)),
    writeContract: (args) =>
      tracked(() =>
        // biome-ignore lint/suspicious/noExplicitAny: as above.
        nonces.send((nonce) => walletClient.writeContract({ ...(args as any), nonce, chain, account })),
      ),
    sendTransaction: (args) =>
      tracked(() => nonces.send((nonce) => walletClient.sendTransaction({ ...args, nonce }))),
    waitForTransactionReceipt: (args) =>
      tracked(() =>
        publicClient.waitForTransactionReceipt({ hash: args.hash, timeout: options.confirmationTimeoutMs }),
      ),
    getCode: (args) => tracked(() => publicClient.getCode(args)),
  };
}
