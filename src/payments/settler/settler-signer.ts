import { BaseError, formatTransactionReceipt, type Hex, keccak256, type TransactionReceipt } from "viem";
import { privateKeyToAccount } from "viem/accounts";
import { isTransportError } from "../../chain/transport-failures.ts";
import { FeeCache } from "./fee-cache.ts";
import { GasEstimates } from "./gas-estimates.ts";
import { NonceAllocator, planGapRepair, type SentTransaction, SentTransactions } from "./nonce-allocator.ts";
import type { RawReceipt } from "./receipt-watcher.ts";
import { settlerClients } from "./settler-clients.ts";
import {
  type ContractCall,
  gasLimitFor,
  type SettlementJournal,
  type SettlementTransactionNote,
  type SettlerSigner,
} from "./signer.ts";
import { calldata, transactionSigner } from "./transactions.ts";

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
  /** How long a function's gas estimate is used for its later calls (each still simulated). Default 60 s. */
  gasEstimateMaxAgeMs?: number;
  /** The clock that ages gas estimates (tests move it instead of waiting). Default Date.now. */
  gasEstimateClock?: () => number;
}): SettlerSigner & { stop(): void } {
  const account = privateKeyToAccount(options.privateKey);
  const { publicClient, sender, walletClient, receipts } = settlerClients(options, account);
  const fees = new FeeCache(publicClient, options.pollingIntervalMs);

  const signTransaction = transactionSigner(options.privateKey, options.chainId);

  const sent = new SentTransactions(options.retainSentMs ?? 10 * 60_000);
  const readPendingNonce = () =>
    publicClient.getTransactionCount({ address: account.address, blockTag: "pending" });
  /** A no-op transfer to itself that takes `nonce` (a gap no kept transaction can close). */
  const fillNonce = async (nonce: number) => {
    fees.forget();
    const signed = signTransaction({
      to: account.address,
      data: "0x",
      gas: 21_000n,
      nonce,
      fee: await fees.current(),
    });
    const hash = (await sender.request({ method: "eth_sendRawTransaction", params: [signed] })) as Hex;
    sent.record({ nonce, hash, raw: signed, kind: "filler" });
    return hash;
  };
  // A refused send left a gap before accepted ones: a no-op transfer to itself takes the nonce.
  const nonces = new NonceAllocator(readPendingNonce, fillNonce);

  // A function estimated recently is only simulated (eth_call) with the gas limit its settlement would
  // have, and then takes that estimate. A call that needs more gas (a payer's ERC-1271 wallet that
  // spends more checking its signature) or that fails is estimated: the new estimate, or the refusal.
  const gasEstimates = new GasEstimates(options.gasEstimateMaxAgeMs ?? 60_000, options.gasEstimateClock);
  const estimateContractGas = async (call: ContractCall) => {
    const data = calldata(call);
    const key = `${call.address.toLowerCase()}:${data.slice(0, 10)}`;
    const known = gasEstimates.get(key);
    if (known !== undefined) {
      const simulated = await publicClient
        .call({ account: account.address, to: call.address, data, gas: gasLimitFor(known) })
        .then(
          () => true,
          (error: unknown) => {
            if (isTransportError(error)) throw error;
            return false;
          },
        );
      if (simulated) return known;
    }
    const gas = await publicClient.estimateGas({ account: account.address, to: call.address, data });
    gasEstimates.record(key, gas);
    return gas;
  };

  // On a chain that includes a transaction as it arrives (anvil; sequencers that answer with a
  // preconfirmed receipt) the receipt exists when the send is answered: ask for it in the same
  // JSON-RPC batch, and stop asking once it keeps coming back empty (a chain with block times).
  const receiptsWithSend = new Map<Hex, RawReceipt>();
  let askReceiptWithSend = true;
  let emptyAnswers = 0;

  const broadcast = async (to: Hex, data: Hex, gas: bigint): Promise<Hex> => {
    const send = async () => {
      const fee = await fees.current();
      return nonces.send(async (nonce) => {
        const signed = signTransaction({ to, data, gas, nonce, fee });
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
      fees.forget();
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
    /** Ends the gap check (a service stopped in a process that goes on, such as a test, checks no more). */
    stop: () => clearInterval(gapTimer),
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
