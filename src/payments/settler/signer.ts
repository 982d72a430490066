import type { ExactEvmScheme } from "@x402/evm/exact/facilitator";
import type { Hex } from "viem";

type FacilitatorEvmSigner = ConstructorParameters<typeof ExactEvmScheme>[0];

export interface ContractCall {
  address: Hex;
  abi: readonly unknown[];
  functionName: string;
  args: readonly unknown[];
  dataSuffix?: Hex;
}

export interface SettlerSigner extends FacilitatorEvmSigner {
  readonly address: Hex;
  /** Latest block number: the chain health probe. */
  blockNumber(): Promise<bigint>;
  /** The gas a call from the settler would use; throws with the revert when it would fail (a simulation). */
  estimateContractGas(call: ContractCall): Promise<bigint>;
  /** Signs a contract call locally and broadcasts it: one RPC call (nonce from the allocator, fees cached). */
  sendContractCall(call: ContractCall & { gas: bigint }): Promise<Hex>;
}

/**
 * What became of a transaction the chain lost (see `planGapRepair`), for the ledger and the metrics:
 * - `dropped`: the chain no longer holds it (not mined, not in the mempool);
 * - `resent`: its very bytes were broadcast again (same hash);
 * - `landed`: the re-sent transaction was mined and succeeded: its transfer is true again;
 * - `reverted`: the re-sent transaction was mined but reverted (the authorization had expired or was
 *   used meanwhile): what it paid did not happen;
 * - `lost`: it could not be sent again (its nonce was taken by another transaction, or the node
 *   refused it): what it paid did not happen;
 * - `filled`: a no-op took a nonce no kept transaction had.
 */
export type SettlementTransactionEvent = "dropped" | "resent" | "landed" | "reverted" | "lost" | "filled";

export interface SettlementTransactionNote {
  /** network-independent: the settler's address, lower-cased. */
  account: string;
  txHash: Hex;
  nonce: number;
  kind: "call" | "filler";
  event: SettlementTransactionEvent;
  /** How many times it was sent again. */
  resent: number;
  detail?: string;
}

/** Where a settler reports what became of the transactions the chain lost (the ledger, metrics, the log). */
export interface SettlementJournal {
  note(note: SettlementTransactionNote): void;
}

/** A gas limit from an estimate: a quarter more, plus a fresh storage slot (payTo's balance may have been emptied). */
export const gasLimitFor = (estimate: bigint) => (estimate * 5n) / 4n + 25_000n;
