import type { PaymentRequirements } from "@x402/core/types";
import {
  type BatchSettlementDepositPayload,
  type BatchSettlementRefundPayload,
  type BatchSettlementVoucherPayload,
  isBatchSettlementDepositPayload,
  isBatchSettlementRefundPayload,
  isBatchSettlementVoucherPayload,
} from "@x402/evm";
import { computeChannelId } from "@x402/evm/batch-settlement/client";
import { getAddress, isAddress, isHex } from "viem";
import type { ChannelConfig, OnchainChannelState } from "../../store/voucher-channels.ts";
import { contractRecoverSigner, voucherDigest } from "./voucher-signature.ts";

/**
 * A batch-settlement payload (deposit, voucher or refund) checked against the route's batch-settlement
 * quote, before anything is read from the store or the chain: the spec's verification rules 1-6 that need
 * no chain (config hashes to the channel id, receiver, token, receiver authorizer, withdraw delay, the
 * voucher's signer). The channel id is hashed by `@x402/evm`'s own `computeChannelId`; the voucher's digest
 * is the EIP-712 digest of its `voucherTypes` in `BATCH_SETTLEMENT_DOMAIN` (voucherDigest, tested equal to
 * viem's), the same bytes the official client signs, and its signer is recovered by the contract's rule.
 */

export interface CheckedVoucherPayload {
  type: "deposit" | "voucher" | "refund";
  channelId: string;
  /** Lower-cased addresses. */
  config: ChannelConfig;
  voucher: { maxClaimableAmount: string; signature: string };
  /**
   * The signer was recovered here (an EOA payerAuthorizer). False: payerAuthorizer is zero, the payer may be
   * a contract wallet (EIP-1271), and only the facilitator's verify can tell.
   */
  signatureChecked: boolean;
  deposit?: BatchSettlementDepositPayload["deposit"];
  /** A refund's requested amount; absent: all that is unclaimed. */
  refundAmount?: string;
}

export interface VoucherPayloadRefusal {
  reason: string;
  message: string;
}

const ZERO_ADDRESS = "0x0000000000000000000000000000000000000000";
const UINT128 = /^(0|[1-9][0-9]{0,38})$/;
const MAX_UINT128 = (1n << 128n) - 1n;

const isAmount = (value: unknown): value is string =>
  typeof value === "string" && UINT128.test(value) && BigInt(value) <= MAX_UINT128;

const refusal = (code: string, message: string): VoucherPayloadRefusal => ({
  reason: `invalid_batch_settlement_evm_${code}`,
  message,
});

export async function checkVoucherPayload(
  payload: unknown,
  requirements: PaymentRequirements,
): Promise<CheckedVoucherPayload | VoucherPayloadRefusal> {
  const typed = payloadOfType(payload);
  if ("reason" in typed) return typed;
  const { channelConfig: config, voucher } = typed.payload;
  const addresses = [
    config.payer,
    config.payerAuthorizer,
    config.receiver,
    config.receiverAuthorizer,
    config.token,
  ];
  if (!addresses.every((value) => typeof value === "string" && isAddress(value, { strict: false }))) {
    return refusal(`${typed.type}_payload`, "channelConfig: an address is not a 20-byte hex address");
  }
  if (!isHex(config.salt) || config.salt.length !== 66) {
    return refusal(`${typed.type}_payload`, "channelConfig.salt: must be 32 bytes of hex");
  }
  if (!Number.isSafeInteger(config.withdrawDelay)) {
    return refusal(`${typed.type}_payload`, "channelConfig.withdrawDelay: must be a whole number of seconds");
  }
  if (!isHex(voucher.channelId) || voucher.channelId.length !== 66 || !isHex(voucher.signature)) {
    return refusal(`${typed.type}_payload`, "voucher: channelId and signature must be hex");
  }
  if (!isAmount(voucher.maxClaimableAmount)) {
    return refusal(`${typed.type}_payload`, "voucher.maxClaimableAmount: must be a uint128 in decimal");
  }
  const extra = requirements.extra as { receiverAuthorizer?: string; withdrawDelay?: number };
  const same = (a: string, b: string | undefined) => a.toLowerCase() === b?.toLowerCase();
  if (!same(computeChannelId(config, requirements.network), voucher.channelId)) {
    return refusal("channel_id_mismatch", "the channel config does not hash to voucher.channelId");
  }
  if (!same(config.receiver, requirements.payTo)) {
    return refusal("receiver_mismatch", "channelConfig.receiver is not the quote's payTo");
  }
  if (!same(config.token, requirements.asset)) {
    return refusal("token_mismatch", "channelConfig.token is not the quote's asset");
  }
  if (!same(config.receiverAuthorizer, extra.receiverAuthorizer)) {
    return refusal("receiver_authorizer_mismatch", "channelConfig.receiverAuthorizer is not the quote's");
  }
  if (config.withdrawDelay !== extra.withdrawDelay) {
    return refusal("withdraw_delay_mismatch", "channelConfig.withdrawDelay is not the quote's");
  }
  const signatureChecked = !same(config.payerAuthorizer, ZERO_ADDRESS);
  if (signatureChecked) {
    const chainId = Number(requirements.network.split(":")[1]);
    const digest = voucherDigest(chainId, voucher.channelId, BigInt(voucher.maxClaimableAmount));
    const signer = contractRecoverSigner(digest, voucher.signature);
    if (!signer || !same(signer, config.payerAuthorizer)) {
      return refusal("voucher_signature", "the voucher is not signed by the channel's payerAuthorizer");
    }
  }
  if (typed.type === "deposit" && !isAmount(typed.payload.deposit.amount)) {
    return refusal("deposit_payload", "deposit.amount: must be a uint128 in decimal");
  }
  if (typed.type === "refund" && typed.payload.amount !== undefined) {
    const amount = typed.payload.amount;
    if (!isAmount(amount) || amount === "0") {
      return refusal("refund_amount_invalid", "amount: must be a positive uint128 in decimal");
    }
  }
  return {
    type: typed.type,
    channelId: voucher.channelId.toLowerCase(),
    config: {
      payer: config.payer.toLowerCase(),
      payerAuthorizer: config.payerAuthorizer.toLowerCase(),
      receiver: config.receiver.toLowerCase(),
      receiverAuthorizer: config.receiverAuthorizer.toLowerCase(),
      token: config.token.toLowerCase(),
      withdrawDelay: config.withdrawDelay,
      salt: config.salt.toLowerCase(),
    },
    voucher: { maxClaimableAmount: voucher.maxClaimableAmount, signature: voucher.signature },
    signatureChecked,
    ...(typed.type === "deposit" ? { deposit: typed.payload.deposit } : {}),
    ...(typed.type === "refund" && typed.payload.amount !== undefined
      ? { refundAmount: typed.payload.amount }
      : {}),
  };
}

type TypedPayload =
  | { type: "deposit"; payload: BatchSettlementDepositPayload }
  | { type: "voucher"; payload: BatchSettlementVoucherPayload }
  | { type: "refund"; payload: BatchSettlementRefundPayload };

function payloadOfType(payload: unknown): TypedPayload | VoucherPayloadRefusal {
  if (isBatchSettlementDepositPayload(payload)) return { type: "deposit", payload };
  if (isBatchSettlementVoucherPayload(payload)) return { type: "voucher", payload };
  if (isBatchSettlementRefundPayload(payload)) return { type: "refund", payload };
  const type = (payload as { type?: unknown } | null)?.type;
  return type === "deposit" || type === "voucher" || type === "refund"
    ? refusal(`${type}_payload`, `a ${type} payload without its required fields`)
    : refusal("payload_type", "payload.type: must be deposit, voucher or refund");
}

/** The channel on chain as the facilitator reports it (verify's extra, or a settle's channelState). */
export function onchainStateOf(extra: unknown): OnchainChannelState {
  const state = (extra ?? {}) as Record<string, unknown>;
  return {
    balance: String(state.balance ?? "0"),
    totalClaimed: String(state.totalClaimed ?? "0"),
    withdrawRequestedAt: Number(state.withdrawRequestedAt ?? 0),
    refundNonce: String(state.refundNonce ?? "0"),
  };
}

/** A stored (lower-cased) channel config as the contract's calls take it: checksummed addresses. */
export const checksummedConfig = (config: ChannelConfig) => ({
  payer: getAddress(config.payer),
  payerAuthorizer: getAddress(config.payerAuthorizer),
  receiver: getAddress(config.receiver),
  receiverAuthorizer: getAddress(config.receiverAuthorizer),
  token: getAddress(config.token),
  withdrawDelay: config.withdrawDelay,
  salt: config.salt as `0x${string}`,
});
