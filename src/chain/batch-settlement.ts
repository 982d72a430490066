/**
 * The x402 `batch-settlement` escrow on the local chain: our own `x402BatchSettlement` and
 * `ERC3009DepositCollector` (contracts/, compiled by scripts/build-contracts.ts) placed at the
 * canonical addresses the official `@x402/evm` client, server and facilitator use. No package ships
 * their bytecode; see docs/batch-settlement-contract.md for what they do and what they leave out.
 *
 * The server side imports from here: the addresses, the ABIs (with our events and custom errors, a
 * superset of what `@x402/evm` calls) and `deployBatchSettlement` for a chain of its own.
 */
import { BATCH_SETTLEMENT_ADDRESS, ERC3009_DEPOSIT_COLLECTOR_ADDRESS } from "@x402/evm";
import {
  type Abi,
  type Address,
  createPublicClient,
  createTestClient,
  encodeAbiParameters,
  type Hex,
  http,
} from "viem";
import { ownArtifact } from "./dex/artifacts.ts";

export { BATCH_SETTLEMENT_ADDRESS, ERC3009_DEPOSIT_COLLECTOR_ADDRESS };

const settlementArtifact = ownArtifact("x402BatchSettlement");
const collectorArtifact = ownArtifact("ERC3009DepositCollector");

/** ABI of x402BatchSettlement: deposit, claim, claimWithSignature, settle, refund(WithSignature), withdrawals, views. */
export const batchSettlementAbi: Abi = settlementArtifact.abi;
/** ABI of ERC3009DepositCollector (`collect`, callable only by the settlement contract). */
export const erc3009DepositCollectorAbi: Abi = collectorArtifact.abi;

/** The withdrawal delay bounds the contract enforces (seconds): 15 minutes to 30 days. */
export const MIN_WITHDRAW_DELAY = 900;
export const MAX_WITHDRAW_DELAY = 2_592_000;

/**
 * The collector's runtime for the canonical settlement address. Its only immutable is that address,
 * so the runtime is what the constructor returns: an `eth_call` of the creation code computes it
 * without a transaction (no account's nonce moves).
 */
async function collectorRuntime(rpcUrl: string): Promise<Hex> {
  const client = createPublicClient({ transport: http(rpcUrl) });
  const args = encodeAbiParameters([{ type: "address" }], [BATCH_SETTLEMENT_ADDRESS]);
  const { data } = await client.call({ data: `${collectorArtifact.bytecode}${args.slice(2)}` as Hex });
  if (!data || data === "0x") throw new Error("ERC3009DepositCollector: constructor returned no runtime");
  return data;
}

/**
 * Puts x402BatchSettlement and the ERC-3009 deposit collector at their canonical addresses on an
 * anvil chain (anvil_setCode), unless that exact code is already there (a restored state). The
 * settlement contract has no immutables and computes its EIP-712 domain from `block.chainid` and
 * `address(this)`, so its runtime at the canonical address behaves as if deployed there.
 */
export async function deployBatchSettlement(
  rpcUrl: string,
): Promise<{ settlement: Address; collector: Address }> {
  const transport = http(rpcUrl);
  const client = createPublicClient({ transport });
  const testClient = createTestClient({ mode: "anvil", transport });
  const wanted: [Address, Hex][] = [
    [BATCH_SETTLEMENT_ADDRESS, settlementArtifact.deployedBytecode],
    [ERC3009_DEPOSIT_COLLECTOR_ADDRESS, await collectorRuntime(rpcUrl)],
  ];
  for (const [address, runtime] of wanted) {
    const existing = await client.getCode({ address });
    if (existing?.toLowerCase() !== runtime.toLowerCase())
      await testClient.setCode({ address, bytecode: runtime });
  }
  return { settlement: BATCH_SETTLEMENT_ADDRESS, collector: ERC3009_DEPOSIT_COLLECTOR_ADDRESS };
}
