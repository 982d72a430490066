import { InMemoryPendingSettlementStore } from "@x402/core/facilitator";
import type {
  FacilitatorContext,
  Network,
  PaymentPayload,
  PaymentRequirements,
  SchemeNetworkFacilitator,
  SettleResponse,
  VerifyResponse,
} from "@x402/core/types";
import { type ExactEIP3009Payload, eip3009ABI, isEIP3009Payload, startAssetContractCheck } from "@x402/evm";
import { ExactEvmScheme } from "@x402/evm/exact/facilitator";
import { type Hex, isAddressEqual, type Log, parseSignature, toEventSelector } from "viem";
import { ChainUnavailableError, isTransportError } from "../../chain/transport-failures.ts";
import { SETTLEMENT_PENDING } from "../settlement-reasons.ts";
import { type ContractCall, gasLimitFor, type SettlerSigner } from "../settler/signer.ts";

/** Reasons as the reference EVM scheme names them (it does not export its constants). */
const TRANSACTION_FAILED = "invalid_exact_evm_transaction_failed";
const TRANSFER_EVENT_MISMATCH = "invalid_exact_evm_transfer_event_mismatch";
/** The reference refuses an authorization that expires within this many seconds. */
const VALID_BEFORE_MARGIN_SECONDS = 6;
/** A verification is trusted for settlement for this long (the operation runs in between). */
const VERIFIED_FOR_MS = 10 * 60_000;
/** At most this many verified, unsettled payments are remembered (oldest forgotten first). */
const VERIFIED_LIMIT = 100_000;

/** The topic of `event Transfer(address indexed from, address indexed to, uint256 value)`. */
const TRANSFER_TOPIC = toEventSelector("Transfer(address,address,uint256)");

/** An ERC-20 Transfer log's parties and amount; undefined for any other log (decoded by hand: viem's
 * parseEventLogs hashes the event's signature on every call). */
function decodeTransfer(log: Log): { from: Hex; to: Hex; value: bigint } | undefined {
  const [topic, from, to] = log.topics;
  if (topic !== TRANSFER_TOPIC || !from || !to || log.topics.length !== 3) return undefined;
  if (!/^0x[0-9a-fA-F]{64}$/.test(log.data)) return undefined;
  return { from: `0x${from.slice(26)}`, to: `0x${to.slice(26)}`, value: BigInt(log.data) };
}

interface PlainTransfer {
  /** Everything the simulation checked: the same payload settles without verifying again. */
  key: string;
  from: Hex;
  call: ContractCall;
  authorization: ExactEIP3009Payload["authorization"];
}

/**
 * The exact scheme for EIP-3009 payments with the token itself as the verifier, each payment
 * verified once.
 *
 * The reference `@x402/evm` scheme recovers the payer's signature in JavaScript (secp256k1) and
 * asks the chain for the payer's code twice per verification, simulates the transfer, then does
 * all of it again before settling: about a third of a paid call's CPU and half its RPC calls.
 * Here a plain (65-byte) EIP-3009 authorization is checked against the terms, then simulated once
 * as the settler would send it (eth_estimateGas, or eth_call with the settler's recent estimate of
 * the same function: `GasEstimates`): the token's own `transferWithAuthorization`
 * checks the signature (ECDSA or ERC-1271, against its real EIP-712 domain), the nonce, the time
 * window, the balance and its blacklist. A payment this instance verified settles without a
 * second verification, with the estimated gas: one signed transaction, one broadcast.
 *
 * Anything else (Permit2, ERC-6492 wrapped signatures, a payment this instance did not verify, a
 * refusal that needs a reason) goes to the reference scheme, which names the reason exactly as
 * clients expect it.
 */
export class ExactEip3009Scheme implements SchemeNetworkFacilitator {
  readonly scheme = "exact";
  readonly caipFamily = "eip155:*";
  private readonly reference: ExactEvmScheme;
  /** Verified payments not settled yet: key → estimated gas and until when the verification counts. */
  private readonly verified: Map<string, { gas: bigint; until: number }>;
  /** Sent settlements whose receipt did not come in time: key → transaction, so they are never sent twice. */
  private readonly pending: Map<string, Hex>;
  /** The reference scheme's own record of settlements in flight. */
  private readonly referencePending: InMemoryPendingSettlementStore;

  constructor(
    private readonly signer: SettlerSigner,
    private readonly now: () => number = Date.now,
    shared?: {
      verified: Map<string, { gas: bigint; until: number }>;
      pending: Map<string, Hex>;
      referencePending: InMemoryPendingSettlementStore;
    },
  ) {
    this.verified = shared?.verified ?? new Map();
    this.pending = shared?.pending ?? new Map();
    this.referencePending = shared?.referencePending ?? new InMemoryPendingSettlementStore();
    this.reference = new ExactEvmScheme(signer, { pendingSettlementStore: this.referencePending });
  }

  /** The same scheme (what it verified and sent is shared) making its chain calls through `signer`. */
  through(signer: SettlerSigner): ExactEip3009Scheme {
    const { verified, pending, referencePending } = this;
    return new ExactEip3009Scheme(signer, this.now, { verified, pending, referencePending });
  }

  getExtra(network: Network): Record<string, unknown> | undefined {
    return this.reference.getExtra(network);
  }

  getSigners(network: string): string[] {
    return this.reference.getSigners(network);
  }

  async verify(
    payload: PaymentPayload,
    requirements: PaymentRequirements,
    context?: FacilitatorContext,
  ): Promise<VerifyResponse> {
    const transfer = this.plainTransfer(payload, requirements);
    if (transfer) {
      // A call to an address without code "succeeds": the asset must be a contract (the reference's
      // check and its shared cache, so a cached answer costs no RPC call). Both calls go in one batch.
      const [asset, estimate] = await Promise.allSettled([
        startAssetContractCheck(this.signer, requirements.network, requirements.asset).await(),
        this.signer.estimateContractGas(transfer.call),
      ]);
      // The asset check fails only when its eth_getCode did not get through.
      if (asset.status === "rejected") throw new ChainUnavailableError(asset.reason as Error);
      if (estimate.status === "rejected" && isTransportError(estimate.reason)) throw estimate.reason;
      if (asset.status === "fulfilled" && asset.value === "" && estimate.status === "fulfilled") {
        this.remember(transfer.key, estimate.value);
        return { isValid: true, payer: transfer.from };
      }
      // The token refuses it (or the asset is no contract): the reference scheme names the reason.
    }
    return this.reference.verify(payload, requirements, context);
  }

  async settle(
    payload: PaymentPayload,
    requirements: PaymentRequirements,
    context?: FacilitatorContext,
  ): Promise<SettleResponse> {
    // A transaction already sent for this payment is waited for, whatever the time now.
    const known = this.plainTransfer(payload, requirements, { anyTime: true });
    const sent = known && this.pending.get(known.key);
    if (known && sent) return this.confirm(known, requirements, sent);
    const transfer = this.plainTransfer(payload, requirements);
    const gas = transfer && this.take(transfer.key);
    if (!transfer || gas === undefined) return this.reference.settle(payload, requirements, context);

    let transaction: Hex;
    try {
      transaction = await this.signer.sendContractCall({ ...transfer.call, gas: gasLimitFor(gas) });
    } catch (error) {
      // A transport failure was recorded in the facilitator call's scope: the outcome is unknown, not refused.
      return {
        success: false,
        errorReason: TRANSACTION_FAILED,
        errorMessage: (error as Error).message,
        transaction: "",
        network: requirements.network,
        payer: transfer.from,
      };
    }
    return this.confirm(transfer, requirements, transaction);
  }

  /**
   * Waits for the settlement transaction. Without a receipt in time the answer is "pending" and the
   * transaction is remembered: a settle of the same payment again (x402 core retries a pending
   * settlement once; a client's retry may follow) waits for that transaction instead of sending the
   * authorization a second time, which would revert after the first one paid.
   */
  private async confirm(
    transfer: PlainTransfer,
    requirements: PaymentRequirements,
    transaction: Hex,
  ): Promise<SettleResponse> {
    const network = requirements.network;
    const payer = transfer.from;
    let receipt: { status: string; logs?: readonly Log[] };
    try {
      receipt = await this.signer.waitForTransactionReceipt({ hash: transaction });
    } catch (error) {
      this.rememberPending(transfer.key, transaction);
      return {
        success: false,
        errorReason: SETTLEMENT_PENDING,
        errorMessage: (error as Error).message,
        transaction,
        network,
        payer,
      };
    }
    this.pending.delete(transfer.key);
    if (receipt.status !== "success") {
      return { success: false, errorReason: TRANSACTION_FAILED, transaction, network, payer };
    }
    const { from, to, value } = transfer.authorization;
    const paid = (receipt.logs ?? []).some((log) => {
      const moved = decodeTransfer(log);
      return (
        moved !== undefined &&
        isAddressEqual(log.address, requirements.asset as Hex) &&
        isAddressEqual(moved.from, from) &&
        isAddressEqual(moved.to, to) &&
        moved.value === BigInt(value)
      );
    });
    if (!paid) return { success: false, errorReason: TRANSFER_EVENT_MISMATCH, transaction, network, payer };
    return { success: true, transaction, network, payer };
  }

  private rememberPending(key: string, transaction: Hex): void {
    this.pending.delete(key);
    this.pending.set(key, transaction);
    while (this.pending.size > VERIFIED_LIMIT)
      this.pending.delete(this.pending.keys().next().value as string);
  }

  /** A plain EIP-3009 payment that matches the terms and is valid now; undefined for anything else. */
  private plainTransfer(
    payload: PaymentPayload,
    requirements: PaymentRequirements,
    options: { anyTime?: boolean } = {},
  ): PlainTransfer | undefined {
    const raw = payload.payload as ExactEIP3009Payload;
    if (!isEIP3009Payload(raw) || !raw.signature || !/^0x[0-9a-fA-F]{130}$/.test(raw.signature))
      return undefined;
    if (payload.accepted?.scheme !== "exact" || requirements.scheme !== "exact") return undefined;
    if (payload.accepted.network !== requirements.network) return undefined;
    if (!requirements.extra?.name || !requirements.extra?.version) return undefined;
    const { authorization } = raw;
    const nowSeconds = Math.floor(this.now() / 1000);
    try {
      if (!isAddressEqual(authorization.to, requirements.payTo as Hex)) return undefined;
      if (BigInt(authorization.value) !== BigInt(requirements.amount)) return undefined;
      if (!options.anyTime) {
        if (BigInt(authorization.validBefore) < BigInt(nowSeconds + VALID_BEFORE_MARGIN_SECONDS))
          return undefined;
        if (BigInt(authorization.validAfter) > BigInt(nowSeconds)) return undefined;
      }
      const { r, s, v, yParity } = parseSignature(raw.signature);
      const call: ContractCall = {
        address: requirements.asset as Hex,
        abi: eip3009ABI,
        functionName: "transferWithAuthorization",
        args: [
          authorization.from,
          authorization.to,
          BigInt(authorization.value),
          BigInt(authorization.validAfter),
          BigInt(authorization.validBefore),
          authorization.nonce,
          Number(v ?? BigInt(yParity + 27)),
          r,
          s,
        ],
      };
      const key = [requirements.asset, ...Object.values(authorization), raw.signature]
        .join(":")
        .toLowerCase();
      return { key, from: authorization.from, call, authorization };
    } catch {
      return undefined; // malformed numbers or addresses: the reference explains
    }
  }

  private remember(key: string, gas: bigint): void {
    const now = this.now();
    for (const [oldKey, entry] of this.verified) {
      if (entry.until > now && this.verified.size < VERIFIED_LIMIT) break;
      this.verified.delete(oldKey);
    }
    this.verified.delete(key);
    this.verified.set(key, { gas, until: now + VERIFIED_FOR_MS });
  }

  /** The estimate of a payment this instance verified (and still trusts), used once. */
  private take(key: string): bigint | undefined {
    const entry = this.verified.get(key);
    if (!entry) return undefined;
    this.verified.delete(key);
    return entry.until > this.now() ? entry.gas : undefined;
  }
}
