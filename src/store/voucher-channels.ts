import type { StoredOutcome } from "./stored-outcome.ts";

/**
 * The server's state of x402 `batch-settlement` channels (vouchers): one row per channel, and one ledger
 * row per voucher-paid call. The scheme makes the server the sole owner of a channel's
 * `chargedCumulativeAmount`, so every call on a channel is serialised through a lease on its row that
 * holds across instances (a conditional update: whoever set `busyOwner` owns the channel until it
 * commits, releases, or its lease runs out).
 *
 * Amounts are atomic token units as decimal strings (uint128 on chain).
 */

/** The immutable channel config; its EIP-712 hash is the channel id. Addresses lower-cased. */
export interface ChannelConfig {
  payer: string;
  payerAuthorizer: string;
  receiver: string;
  receiverAuthorizer: string;
  token: string;
  withdrawDelay: number;
  salt: string;
}

/** The channel as the chain last showed it (mirrored from a facilitator's verify or settle answer). */
export interface OnchainChannelState {
  balance: string;
  totalClaimed: string;
  /** Unix seconds a timed withdrawal was initiated, 0 if none. */
  withdrawRequestedAt: number;
  refundNonce: string;
}

export interface ChannelRecord {
  channelId: string;
  network: string;
  config: ChannelConfig;
  /**
   * What this server has charged on the channel, in total. Null until the first on-chain snapshot: the
   * baseline of a channel the server has no record of is the chain's totalClaimed, never the client's voucher.
   */
  chargedCumulativeAmount: string | null;
  /** The latest client-signed voucher this server accepted: its ceiling and signature. */
  signedMaxClaimable: string | null;
  signature: string | null;
  onchain: OnchainChannelState | null;
  /** Epoch ms when `onchain` was read. */
  onchainSyncedAt: number | null;
  /** Epoch ms of the last delivered voucher-paid call. */
  lastRequestAt: number | null;
}

/** One delivered voucher-paid call: the ledger row, and the answer a retry of the same voucher gets. */
export interface VoucherCharge {
  channelId: string;
  /** The voucher's maxClaimableAmount: one voucher per cumulative ceiling on a channel. */
  signedMaxClaimable: string;
  signature: string;
  /** sha256 of the canonical signed payload: an exact retry, not a forged reuse of the ceiling. */
  payloadHash: string;
  /** sha256 of the operation and its validated input: the retry of the same request. */
  requestHash: string;
  /** The way the call came in (http, mcp). */
  door: string;
  operationId: string;
  /** This call's charge. */
  amount: string;
  /** chargedCumulativeAmount after this call. */
  cumulative: string;
  requestId: string;
  outcome: StoredOutcome;
}

export interface VoucherChargeRecord extends VoucherCharge {
  createdAt: string;
}

export interface BeginVoucherCall {
  channelId: string;
  network: string;
  config: ChannelConfig;
  signedMaxClaimable: string;
  /** This attempt's id: the lease on the channel is its. */
  owner: string;
  /** Epoch ms. */
  now: number;
  leaseUntil: number;
}

export type TakeVoucherChannel = Pick<BeginVoucherCall, "channelId" | "owner" | "now" | "leaseUntil">;

/**
 * begun: this attempt owns the channel (`channel` is its state under the lease);
 * charged: this voucher was already delivered (its ledger row; no lease taken);
 * busy: another attempt owns the channel until `until` (epoch ms).
 */
export type VoucherCallStart =
  | { kind: "begun"; channel: ChannelRecord }
  | { kind: "charged"; charge: VoucherChargeRecord }
  | { kind: "busy"; until: number };

export interface VoucherChannelStore {
  /**
   * Creates the channel's row when it has none, then takes the channel for `owner` unless another
   * attempt's lease is current. A voucher already charged is answered by its ledger row instead.
   */
  beginCall(start: BeginVoucherCall): Promise<VoucherCallStart>;
  /**
   * Mirrors an on-chain snapshot read at `syncedAt` (an older snapshot never replaces a newer one) and
   * sets a missing baseline: chargedCumulativeAmount becomes at least the chain's totalClaimed.
   * Only the lease's owner may; false if it no longer holds the channel.
   */
  syncOnchain(
    channelId: string,
    owner: string,
    onchain: OnchainChannelState,
    syncedAt: number,
  ): Promise<boolean>;
  /**
   * The delivered call: in one transaction, moves chargedCumulativeAmount from `cumulative - amount` to
   * `cumulative`, keeps the voucher as the latest signed one, writes the ledger row with the answer, and
   * lets the channel go. False (nothing written) if `owner` no longer holds the channel or the charge
   * does not follow the channel's charged amount.
   */
  commitCall(owner: string, charge: VoucherCharge, now: number): Promise<boolean>;
  /** Lets the channel go without a charge (the handler failed, the voucher was refused). */
  releaseCall(channelId: string, owner: string): Promise<void>;
  /**
   * Takes a channel this store has a row of for `owner`, without a charge to follow (a cooperative
   * refund: a payment operation, not a paid call). Undefined when there is no row.
   */
  takeChannel(take: TakeVoucherChannel): Promise<Exclude<VoucherCallStart, { kind: "charged" }> | undefined>;
  getChannel(channelId: string): Promise<ChannelRecord | undefined>;
  getCharge(channelId: string, signedMaxClaimable: string): Promise<VoucherChargeRecord | undefined>;
  /** A channel's ledger rows, oldest first. */
  charges(channelId: string): Promise<VoucherChargeRecord[]>;
  channels(): Promise<ChannelRecord[]>;
}

/** The highest of two decimal amounts. */
export const maxAmount = (a: string, b: string): string => (BigInt(a) >= BigInt(b) ? a : b);

/** The charged amount the channel must show before `charge` may be committed. */
export const chargedBefore = (charge: Pick<VoucherCharge, "cumulative" | "amount">): string =>
  (BigInt(charge.cumulative) - BigInt(charge.amount)).toString();
