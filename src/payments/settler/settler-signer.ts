import type { ExactEvmScheme } from "@x402/evm/exact/facilitator";
import {
  BaseError,
  type Chain,
  concatHex,
  createPublicClient,
  createWalletClient,
  defineChain,
  encodeFunctionData,
  formatTransactionReceipt,
  type Hex,
  hexToBigInt,
  http,
  keccak256,
  type TransactionReceipt,
} from "viem";
import { privateKeyToAccount } from "viem/accounts";
import { isTransportError } from "../../chain/transport-failures.ts";
import { NonceAllocator, planGapRepair, type SentTransaction, SentTransactions } from "./nonce-allocator.ts";
import { type RawReceipt, ReceiptWatcher } from "./receipt-watcher.ts";

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

/** Fees are read at most this often (in block-time units of the polling interval), shared by all settlements. */
const FEE_READS_PER_POLL = 4;

type Fees = { maxFeePerGas: bigint; maxPriorityFeePerGas: bigint } | { gasPrice: bigint };

/**
 * The in-process facilitator's chain access: reads through one keep-alive, batching RPC client,
 * settlement transactions signed locally and sent through a NonceAllocator, receipts awaited by
 * one batched poller.
 *
 * Per settlement this costs one eth_sendRawTransaction and a share of the batched receipt polls:
 * no eth_chainId, fee or nonce lookups per transaction (viem's writeContract makes those), and
 * fees are read at most every few polling intervals with a margin of twice the base fee.
 */
export function createSettlerSigner(options: {
  privateKey: Hex;
  rpcUrl: string;
  chainId: number;
  /** Receipt polling: tune to the chain's block time (a fresh transaction is checked at once anyway). */
  pollingIntervalMs: number;
  rpcTimeoutMs?: number;
  /** How long to wait for a settlement's receipt. */
  confirmationTimeoutMs: number;
  /**
   * How often the chain's pending nonce is compared with this settler's (while it sent anything in
   * the last `retainSentMs`): a gap seen on two checks in a row is repaired. Default: 4 polling
   * intervals, at least 500 ms.
   */
  gapCheckMs?: number;
  /** How long sent transactions are kept to be sent again if the chain loses them. Default 10 min. */
  retainSentMs?: number;
  /** Where what became of the transactions the chain lost is reported; without one the settler only logs. */
  journal?: SettlementJournal;
}): SettlerSigner {
  const account = privateKeyToAccount(options.privateKey);
  const chain: Chain = defineChain({
    id: options.chainId,
    name: `eip155:${options.chainId}`,
    nativeCurrency: { name: "Ether", symbol: "ETH", decimals: 18 },
    rpcUrls: { default: { http: [options.rpcUrl] } },
  });
  // Calls made in the same tick travel as one JSON-RPC batch over a kept-alive connection.
  // Transient RPC errors (5xx, 429, resets) are retried, so one lost poll does not orphan a settlement.
  const transport = http(options.rpcUrl, {
    timeout: options.rpcTimeoutMs ?? 10_000,
    retryCount: 2,
    batch: { wait: 0 },
  });
  // Broadcasts are never retried by the transport: an unanswered send is an unknown outcome.
  const sendTransport = http(options.rpcUrl, {
    timeout: options.rpcTimeoutMs ?? 10_000,
    retryCount: 0,
    batch: { wait: 0 },
  });
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

  let fees: { value: Promise<Fees>; readAt: number } | undefined;
  const currentFees = (): Promise<Fees> => {
    const now = Date.now();
    if (!fees || now - fees.readAt > options.pollingIntervalMs * FEE_READS_PER_POLL) {
      const value = readFees();
      fees = { value, readAt: now };
      value.catch(() => {
        if (fees?.value === value) fees = undefined;
      });
    }
    return fees.value;
  };
  const readFees = async (): Promise<Fees> => {
    const [block, tip] = await Promise.all([
      publicClient.getBlock({ blockTag: "latest" }),
      publicClient
        .request({ method: "eth_maxPriorityFeePerGas" })
        .then((value) => hexToBigInt(value))
        .catch(() => undefined),
    ]);
    if (block.baseFeePerGas == null) return { gasPrice: await publicClient.getGasPrice() };
    const maxPriorityFeePerGas = tip ?? 1_000_000n;
    // Twice the base fee survives several blocks of rising fees while the cached value is used.
    return { maxFeePerGas: 2n * block.baseFeePerGas + maxPriorityFeePerGas, maxPriorityFeePerGas };
  };

  function signTransaction(tx: { to: Hex; data: Hex; gas: bigint; nonce: number; fee: Fees }): Promise<Hex> {
    const { fee, ...rest } = tx;
    return account.signTransaction({
      chainId: options.chainId,
      value: 0n,
      ...rest,
      ...("gasPrice" in fee ? { type: "legacy", gasPrice: fee.gasPrice } : { type: "eip1559", ...fee }),
    });
  }

  const calldata = (call: ContractCall): Hex => {
    const data = encodeFunctionData({
      // biome-ignore lint/suspicious/noExplicitAny: the x402 signer interface is ABI-agnostic; viem's typing is not.
      abi: call.abi as any,
      functionName: call.functionName,
      args: call.args,
    });
    return call.dataSuffix ? concatHex([data, call.dataSuffix]) : data;
  };

  const sent = new SentTransactions(options.retainSentMs ?? 10 * 60_000);
  const readPendingNonce = () =>
    publicClient.getTransactionCount({ address: account.address, blockTag: "pending" });
  /** A no-op transfer to itself that takes `nonce` (a gap no kept transaction can close). */
  const fillNonce = async (nonce: number) => {
    fees = undefined;
    const signed = await signTransaction({
      to: account.address,
      data: "0x",
      gas: 21_000n,
      nonce,
      fee: await currentFees(),
    });
    const hash = (await sender.request({ method: "eth_sendRawTransaction", params: [signed] })) as Hex;
    sent.record({ nonce, hash, raw: signed, kind: "filler" });
    return hash;
  };
  // A refused send left a gap before accepted ones: a no-op transfer to itself takes the nonce.
  const nonces = new NonceAllocator(readPendingNonce, fillNonce);

  const estimateContractGas = (call: ContractCall) =>
    publicClient.estimateGas({ account: account.address, to: call.address, data: calldata(call) });

  // On a chain that includes a transaction as it arrives (anvil; sequencers that answer with a
  // preconfirmed receipt) the receipt exists when the send is answered: ask for it in the same
  // JSON-RPC batch, and stop asking once it keeps coming back empty (a chain with block times).
  const receiptsWithSend = new Map<Hex, RawReceipt>();
  let askReceiptWithSend = true;
  let emptyAnswers = 0;

  const broadcast = async (to: Hex, data: Hex, gas: bigint): Promise<Hex> => {
    const send = async () => {
      const fee = await currentFees();
      return nonces.send(async (nonce) => {
        const signed = await signTransaction({ to, data, gas, nonce, fee });
        const hash = keccak256(signed);
        // Both requests leave in one batch, the send first.
        const sending = sender.request({
          method: "eth_sendRawTransaction",
          params: [signed],
        }) as Promise<Hex>;
        const receipt = askReceiptWithSend
          ? (sender.request({
              method: "eth_getTransactionReceipt",
              params: [hash],
            }) as Promise<RawReceipt | null>)
          : undefined;
        let sent_: Hex;
        try {
          sent_ = await sending;
        } catch (error) {
          receipt?.catch(() => undefined);
          // The node already has this very transaction (a resent broadcast): it is sent.
          if (!/already known|known transaction/i.test((error as Error).message)) throw error;
          sent_ = hash;
        }
        sent.record({ nonce, hash: sent_, raw: signed, kind: "call" });
        const mined = await receipt?.catch(() => null);
        if (mined) {
          receiptsWithSend.set(sent_, mined);
          emptyAnswers = 0;
        } else if (receipt && ++emptyAnswers >= 3) {
          askReceiptWithSend = false;
        }
        return sent_;
      });
    };
    try {
      return await send();
    } catch (error) {
      fees = undefined;
      // A transport failure may hide an accepted broadcast: never send the authorization again (a second
      // transaction would revert after the first paid); the failure is recorded and the outcome is unknown.
      if (isTransportError(error)) throw error;
      // The node refused a stale nonce or fee: the allocator has re-read the account's nonce; read fees
      // anew, try once more. Only the node's own words count (a viem message also quotes the request).
      if (/nonce|fee|underpriced/i.test(nodeMessage(error))) return send();
      throw error;
    }
  };

  // The chain may lose what it accepted (a node restart, a mempool eviction, a reorg, a chain restored
  // from an earlier state): every later transaction then waits behind the missing nonces and no
  // settlement lands. A regular check finds such a gap and closes it.
  const note = (tx: SentTransaction, event: SettlementTransactionNote["event"], detail?: string) =>
    options.journal?.note({
      account: account.address.toLowerCase(),
      txHash: tx.hash,
      nonce: tx.nonce,
      kind: tx.kind,
      event,
      resent: tx.resent,
      detail,
    });
  /** The nonce a gap was first seen at; repaired when the next check sees it again. */
  let suspectedGap: number | undefined;
  const repairGap = () =>
    nonces.exclusive(async (counter) => {
      if (counter.next === undefined) return;
      const plan = planGapRepair({
        pendingNonce: await readPendingNonce(),
        nextNonce: counter.next,
        sent: sent.view,
      });
      if (plan.kind === "none") {
        suspectedGap = undefined;
        return;
      }
      if (plan.kind === "ahead") {
        counter.next = undefined;
        return;
      }
      if (suspectedGap !== plan.from) {
        suspectedGap = plan.from; // a lagging node may answer late: act when the next check agrees
        return;
      }
      suspectedGap = undefined;
      let complete = true;
      // In nonce order: each one lets the next one in.
      for (let nonce = plan.from; nonce < plan.to; nonce++) {
        const tx = plan.resend.find((kept) => kept.nonce === nonce);
        if (!tx) {
          await fillNonce(nonce).then(
            (hash) =>
              options.journal?.note({
                account: account.address.toLowerCase(),
                txHash: hash,
                nonce,
                kind: "filler",
                event: "filled",
                resent: 0,
              }),
            () => {
              complete = false;
            },
          );
          continue;
        }
        note(tx, "dropped");
        try {
          await sender
            .request({ method: "eth_sendRawTransaction", params: [tx.raw] })
            .catch((error: unknown) => {
              if (!/already known|known transaction/i.test((error as Error).message)) throw error;
            });
          tx.resent++;
          tx.sentAt = Date.now();
          note(tx, "resent");
          if (tx.kind === "call") {
            receipts.wait(tx.hash, options.confirmationTimeoutMs).then(
              (receipt) => note(tx, receipt.status === "0x1" ? "landed" : "reverted"),
              () => undefined, // not mined in time: the next check sees the gap again
            );
          }
        } catch (error) {
          // The nonce is taken by another transaction (this one can never land), or the node refuses it.
          note(tx, "lost", nodeMessage(error).slice(0, 300));
          if (!/nonce too low|nonce.*(already|used)/i.test(nodeMessage(error))) {
            await fillNonce(nonce).catch(() => {
              complete = false;
            });
          }
        }
      }
      if (!complete) counter.next = undefined;
    });
  const gapCheckMs = options.gapCheckMs ?? Math.max(500, options.pollingIntervalMs * 4);
  let checking = false;
  const gapTimer = setInterval(() => {
    if (checking || !sent.prune()) return;
    checking = true;
    repairGap()
      .catch(() => undefined) // the chain did not answer: the next check tries again
      .finally(() => {
        checking = false;
      });
  }, gapCheckMs);
  gapTimer.unref();

  return {
    address: account.address,
    getAddresses: () => [account.address],
    blockNumber: () => publicClient.getBlockNumber({ cacheTime: 0 }),
    estimateContractGas,
    sendContractCall: (call) => broadcast(call.address, calldata(call), call.gas),
    // biome-ignore lint/suspicious/noExplicitAny: the x402 signer interface is ABI-agnostic; viem's typing is not.
    readContract: (args) => publicClient.readContract(args as any),
    // biome-ignore lint/suspicious/noExplicitAny: as above.
    verifyTypedData: (args) => publicClient.verifyTypedData(args as any),
    writeContract: async (args) => {
      const call = { ...args, args: args.args } as ContractCall;
      const gas = args.gas ?? gasLimitFor(await estimateContractGas(call));
      return broadcast(call.address, calldata(call), gas);
    },
    sendTransaction: (args) => nonces.send((nonce) => walletClient.sendTransaction({ ...args, nonce })),
    waitForTransactionReceipt: async (args) => {
      const known = receiptsWithSend.get(args.hash);
      receiptsWithSend.delete(args.hash);
      const receipt = known ?? (await receipts.wait(args.hash, options.confirmationTimeoutMs));
      return formatTransactionReceipt(receipt as never) as TransactionReceipt;
    },
    getCode: (args) => publicClient.getCode(args),
  };
}

/** What the node said about a refused call: viem's short message and details, not the quoted request. */
function nodeMessage(error: unknown): string {
  if (error instanceof BaseError) return `${error.shortMessage} ${error.details ?? ""}`;
  return error instanceof Error ? error.message : String(error);
}
