import type { PaymentPayload, PaymentRequirements } from "@x402/core/types";
import type { JobQueue, JobState } from "../jobs/queue.ts";
import type { StoredOutcome } from "./stored-outcome.ts";
import type { VoucherChannelStore } from "./voucher-channels.ts";

export type { FileBody } from "../contract/operation.ts";
export type { StoredOutcome } from "./stored-outcome.ts";

/**
 * The persistence boundary. Everything the service keeps (payments, their stored outcomes,
 * jobs) goes through this async interface, so SQLite (one machine) and PostgreSQL (many
 * instances) are interchangeable.
 */

/**
 * verified → settled | released | failed for work delivered in the request (settled once it is done);
 * verified → held → settled | released | failed for a job: the signed authorization is kept, unsettled,
 * until the job delivers (settled), fails or runs out of time (released: nothing was ever sent).
 */
export type PaymentState = "verified" | "held" | "settled" | "released" | "failed";

/** What settling a held payment later needs: the signed payload and the terms it was verified against. */
export interface HeldAuthorization {
  payload: PaymentPayload;
  requirements: PaymentRequirements;
  /** The way its call came in (PaidCall.door), for the revenue metric; absent on payments held before it was kept. */
  door?: string;
}

export interface NewPayment {
  /** network:asset:payer:nonce, lower-cased: what makes a payment unique on chain. */
  paymentKey: string;
  /** sha256 of the canonical signed payload: tells an exact replay from a forged reuse of the nonce. */
  payloadHash: string;
  /** sha256 of the operation id and the canonical validated input. */
  requestHash: string;
  operationId: string;
  network: string;
  asset: string;
  amount: string;
  payer: string;
  payTo: string;
  nonce: string;
  /** Unix seconds after which the authorization can no longer be settled. */
  validBefore: number;
  requestId: string;
  /** Epoch ms until which the reserving request owns the payment; a later request may take over after. */
  leaseUntil: number;
}

export interface PaymentRecord extends NewPayment {
  state: PaymentState;
  txHash: string | null;
  error: string | null;
  outcome: StoredOutcome | null;
  /** The operation's successful answer, kept from before settlement until the payment is final. */
  pendingOutcome: StoredOutcome | null;
  /** A held payment's authorization (state "held", and kept after it for the record). */
  held: HeldAuthorization | null;
  createdAt: string;
  updatedAt: string;
}

export interface PaymentCompletion {
  state: Exclude<PaymentState, "verified" | "held">;
  txHash?: string | null;
  error?: string | null;
  outcome: StoredOutcome;
  /**
   * The lease the writer holds on the payment (its compare-and-set): a release or a failure is refused
   * once another attempt has taken the payment over. A settlement is written whoever saw it (money moved).
   * Omitted only by tools and tests that own the whole ledger.
   */
  lease?: number;
}

/** A lease value no payment ever has: the writer lost its lease, so its non-settling write must not land. */
export const NO_LEASE = -1;

/**
 * What a held payment's reservation is checked against, under one serialisation per payer (an IMMEDIATE
 * transaction on SQLite, a transaction-scoped advisory lock on PostgreSQL), so that concurrent admissions
 * of one payer, at any number of instances, are counted one after the other.
 */
export interface HeldAdmission {
  /** Unfinished (verified or held) payments of this operation one payer may have at once, this one included. */
  maxOutstanding: number;
  /**
   * The payer's balance of the asset read for this admission (atomic units, decimal): it must cover every
   * unfinished authorization of the payer on this network and asset plus this one. Absent: not checked.
   */
  balance?: string;
}

/** Why a held payment was not reserved: what the payer already has outstanding. */
export interface HeldRefusal {
  why: "cap" | "funds";
  /** The payer's unfinished payments of this operation. */
  outstanding: number;
  /** The sum of all the payer's unfinished authorizations on this network and asset (atomic, decimal). */
  outstandingAmount: string;
  /** funds: how much the balance lacks to cover them all plus this one (atomic, decimal). */
  shortfall?: string;
}

/** The admission rule, engine-neutral: the stores count under their lock, this decides. */
export function heldRefusal(
  counted: { sameOperation: number; amount: string },
  amount: string,
  admission: HeldAdmission,
): HeldRefusal | undefined {
  const outstanding = { outstanding: counted.sameOperation, outstandingAmount: counted.amount };
  if (counted.sameOperation >= admission.maxOutstanding) return { why: "cap", ...outstanding };
  if (admission.balance === undefined) return undefined;
  const needed = BigInt(counted.amount) + BigInt(amount);
  const shortfall = needed - BigInt(admission.balance);
  return shortfall > 0n ? { why: "funds", ...outstanding, shortfall: shortfall.toString() } : undefined;
}

/** How long after its validBefore a signed authorization may still land (a transfer already in flight). */
export const LATE_LANDING_MS = 30_000;

export interface RevenueRow {
  day: string;
  operationId: string;
  payments: number;
  /** Sum of settled atomic amounts, as a decimal string. */
  atomicAmount: string;
}

export interface PaymentCounts {
  operationId: string;
  state: PaymentState;
  count: number;
}

/** One instance's hold on a settlement account, so two instances never send from the same key. */
export interface SettlerClaim {
  /** network:address of the settlement account, lower-cased. */
  account: string;
  instanceId: string;
  /** Epoch ms; the holder renews before this, and a claim past it may be taken by another instance. */
  leaseUntil: number;
  now: number;
}

export type SettlerClaimResult = { claimed: true } | { claimed: false; holder: string; leaseUntil: number };

/** A value several instances share through the store (the tender search cache). */
export interface CacheEntry {
  value: string;
  /** Epoch ms when it was stored. */
  storedAt: number;
}

/**
 * A settlement transaction the chain lost (dropped, or undone by a reorg or a restored state) and what
 * became of it: kept so that a payment recorded `settled` whose transfer vanished is never settled
 * silently. `state` is the last event: dropped → resent → landed (the transfer is true again), or
 * reverted / lost (it did not happen: the ledger's `settled` is not backed by the chain).
 */
export interface SettlementTransactionNote {
  txHash: string;
  /** The settler's address, lower-cased. */
  account: string;
  nonce: number;
  kind: "call" | "filler";
  state: "dropped" | "resent" | "landed" | "reverted" | "lost" | "filled";
  /** How many times it was sent again. */
  resent: number;
  detail?: string | null;
  /** Epoch ms. */
  at: number;
}

export interface SettlementTransactionRecord extends Omit<SettlementTransactionNote, "at"> {
  updatedAt: string;
  /** The payment this transaction settled (by its transaction hash), if the ledger has one. */
  paymentKey: string | null;
  paymentState: PaymentState | null;
  operationId: string | null;
  amount: string | null;
}

/** A payer's place: its address and the asset and network its payments are in. */
export interface PayerAccount {
  payer: string;
  network: string;
  asset: string;
}

/** One unfinished (verified or held) payment of a payer, with the job it pays for, if any yet. */
export interface UnfinishedPayment {
  paymentKey: string;
  /** Atomic units, decimal. */
  amount: string;
  state: "verified" | "held";
  nonce: string;
  payTo: string;
  jobId: string | null;
  jobState: JobState | null;
}

/** unfinishedPaymentsOf's row, as both engines select it (amount as text). */
export interface UnfinishedPaymentRow {
  payment_key: string;
  amount: string;
  state: "verified" | "held";
  nonce: string;
  pay_to: string;
  job_id: string | null;
  job_state: JobState | null;
}

export const toUnfinished = (row: UnfinishedPaymentRow): UnfinishedPayment => ({
  paymentKey: row.payment_key,
  amount: String(row.amount),
  state: row.state,
  nonce: row.nonce,
  payTo: row.pay_to,
  jobId: row.job_id,
  jobState: row.job_state,
});

/** A reservation made, or the payment already in the ledger. */
export type Reservation = { reserved: true } | { reserved: false; existing: PaymentRecord };

export type ReserveResult = Reservation | { reserved: false; refused: HeldRefusal };

export interface PayerPaymentsQuery {
  payer: string;
  operationIds: readonly string[];
  states: readonly PaymentState[];
  limit: number;
}

/** A client's idempotency key (the x402 payment-identifier, scoped to its payer) claimed for a payment. */
export interface PaymentIdentifierClaim {
  /** payer:id */
  key: string;
  paymentKey: string;
  /** Epoch ms. */
  now: number;
  /** A claim made before this (epoch ms) whose payment never reached the ledger is free again. */
  staleBefore: number;
}

export interface Store {
  readonly kind: "sqlite" | "postgres";
  ping(): Promise<void>;
  /**
   * Inserts the payment in state "verified" unless its key exists; never overwrites. With an admission
   * (a held payment), first counts the payer's unfinished payments under the per-payer serialisation and
   * refuses the reservation when they reach the cap or the balance does not cover them all plus this one.
   */
  reservePayment(payment: NewPayment): Promise<Reservation>;
  reservePayment(payment: NewPayment, admission: HeldAdmission): Promise<ReserveResult>;
  getPayment(paymentKey: string): Promise<PaymentRecord | undefined>;
  /** Keeps the operation's answer before settling, so a crash or a lost receipt cannot lose a paid result. */
  recordPendingOutcome(paymentKey: string, outcome: StoredOutcome): Promise<void>;
  /**
   * verified → held: the answer (a job's 202) is the payment's outcome from now on, the authorization is
   * kept to be settled when the job delivers, and the lease is let go (whoever settles takes it anew).
   * False if the payment was not "verified" (another attempt already moved it on).
   */
  holdPayment(
    paymentKey: string,
    hold: { outcome: StoredOutcome; held: HeldAuthorization },
  ): Promise<boolean>;
  /**
   * The keys of held payments that need a look, oldest first, at most `limit`: those whose job is not
   * queued or running (ready, failed, awaiting payment, missing), and those whose authorization expires
   * before `expiringBefore` (unix seconds; their job's deadline is near). A held payment whose job simply
   * waits or runs is not read at all.
   */
  heldPaymentsToDecide(options: { expiringBefore: number; limit: number }): Promise<string[]>;
  /** Payers with unfinished (verified or held) payments on `network`: whose outgoing transfers may uncover them. */
  payersWithUnfinishedPayments(network: string): Promise<PayerAccount[]>;
  /** A payer's unfinished payments on its network and asset, oldest first, each with its job (if any). */
  unfinishedPaymentsOf(account: PayerAccount): Promise<UnfinishedPayment[]>;
  /**
   * Payments left "verified" whose lease ran out (their owner stopped: a crash, a lost store): what the
   * recovery sweeper resolves, oldest lease first, at most `limit`.
   */
  orphanedPayments(now: number, limit: number): Promise<PaymentRecord[]>;
  /** Takes over an unfinished (verified or held) payment whose lease expired; true if taken. */
  takeOverPayment(paymentKey: string, now: number, leaseUntil: number): Promise<boolean>;
  /**
   * Extends the owner's lease on an unfinished payment (before a settlement that may take a while), only
   * while it is still the lease the owner holds (`heldUntil`); false if another attempt took it over.
   */
  renewLease(paymentKey: string, heldUntil: number, leaseUntil: number): Promise<boolean>;
  /**
   * Gives up ownership of an unfinished payment so that the next retry may resume it at once; with
   * `heldUntil`, only while that is still the lease (an attempt that outlived it leaves the new owner's).
   */
  releaseLease(paymentKey: string, heldUntil?: number): Promise<void>;
  /**
   * Moves a "verified" or "held" payment to its final state with the outcome; false if it was already final.
   * "settled" is the one exception: it also replaces "released" or "failed", because only the chain
   * decides that money moved (a late attempt's settlement can land after a faster one gave up).
   */
  completePayment(paymentKey: string, completion: PaymentCompletion): Promise<boolean>;
  /**
   * A final payment's outcome that was awaiting its client (`awaitingClient`) has been delivered at
   * `deliveredAt` (epoch ms): kept as delivered then. No change to any other payment, nor to updated_at
   * (the day its revenue counts on).
   */
  markOutcomeDelivered(paymentKey: string, deliveredAt: number): Promise<void>;
  revenueByOperationAndDay(): Promise<RevenueRow[]>;
  paymentCounts(): Promise<PaymentCounts[]>;
  /** Takes (or renews) the account for this instance unless another instance holds an unexpired claim. */
  claimSettler(claim: SettlerClaim): Promise<SettlerClaimResult>;
  /** Gives the account up at shutdown, so a replacement instance may take it at once. */
  releaseSettler(account: string, instanceId: string): Promise<void>;
  /** Records what became of a settlement transaction the chain lost (its latest event wins). */
  noteSettlementTransaction(note: SettlementTransactionNote): Promise<void>;
  /** Every settlement transaction the chain lost, with the payment it settled, newest first. */
  settlementTransactions(): Promise<SettlementTransactionRecord[]>;
  /**
   * Binds a payment-identifier to this payment unless another payment holds it (one in the ledger that was
   * not released, nor failed with an authorization that can no longer land — `now` past its validBefore +
   * LATE_LANDING_MS: "settled may replace failed" — or a fresh claim whose payment is not in the ledger
   * yet); answers the payment
   * key that holds it after the attempt (this one's, or the holder's).
   */
  claimPaymentIdentifier(claim: PaymentIdentifierClaim): Promise<string>;
  /** The entry stored under `key`, whatever its age (the caller applies its TTL). */
  getCacheEntry(key: string): Promise<CacheEntry | undefined>;
  /** Stores the entry (ending any load claim on it) and deletes idle entries stored before `expireBefore`. */
  putCacheEntry(key: string, entry: CacheEntry, expireBefore: number): Promise<void>;
  /** Claims the right to load `key` until `until` unless another owner's unexpired claim holds it: single flight across instances. */
  claimCacheLoad(key: string, owner: string, until: number, now: number): Promise<boolean>;
  releaseCacheLoad(key: string, owner: string): Promise<void>;
  /**
   * A payer's payments of these operations in these states, newest first, at most `limit`: what a wallet
   * that signs in (sign-in-with-x) bought. `payer` is matched lower-cased, as the ledger keeps it.
   */
  paymentsOfPayer(query: PayerPaymentsQuery): Promise<PaymentRecord[]>;
  /**
   * Marks a sign-in nonce used: true the first time, false if it was used before (a replay). The row is
   * kept until `keepUntil` (epoch ms, when a message with this nonce can no longer be accepted anyway);
   * rows past their time (before `now`) are deleted on the way.
   */
  useSignInNonce(nonce: string, keepUntil: number, now: number): Promise<boolean>;
  /** The durable job queue, in the same database as the ledger (a job is linked to its payment). */
  readonly jobs: JobQueue;
  /** The x402 batch-settlement channels and their ledger of voucher-paid calls. */
  readonly vouchers: VoucherChannelStore;
  close(): Promise<void>;
}
