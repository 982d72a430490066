// Types of the kit's entry point, for TypeScript buyers (the kit itself is plain JavaScript).

export interface SpendPolicy {
  version: 1;
  networks: string[];
  assets: string[];
  maxPerPayment: string;
  maxPerDay: string;
  maxPerPayeePerDay?: string;
  approvalAbove?: string;
  payees?: string[];
  blockedPayees?: string[];
  hosts?: string[];
  maxPaymentsPerMinute?: number;
  /** IANA time zone whose calendar day the day limits use (default "UTC"). */
  timeZone?: string;
  /** A JSON-RPC URL per CAIP-2 network, to ask the chain whether a lapsed authorization was used. */
  rpc?: Record<string, string>;
  /** Per CAIP-2 network, the block tag the RPC is read at to release a lapsed authorization (default "finalized"). */
  finality?: Record<string, "finalized" | "safe">;
  /** Signed offers (x402 offer-receipt) in a 402: "ignore", "verify" when present (default), or "require". */
  signedOffers?: "ignore" | "verify" | "require";
  /** Per seller origin ("https://seller.example"), the only signers whose offers are accepted: addresses (EIP-712) or did: key ids (JWS). */
  trustedOfferSigners?: Record<string, string[]>;
}

export interface Payment {
  network: string;
  asset: string;
  amount: string;
  payTo: string;
  url?: string;
  /** The signer of the seller's signed offer for this payment, when it sent one. */
  offerSigner?: string;
}

export interface Decision {
  decision: "allow" | "deny" | "approve";
  reasons: string[];
}

export type LedgerState = "reserved" | "signed" | "settled" | "failed" | "expired" | "released" | "refunded";

export interface LedgerEntry extends Partial<Payment> {
  line?: number;
  chainState?: "used" | "unused";
  block?: string;
  at: string;
  id?: string;
  state: LedgerState | string;
  payer?: string;
  nonce?: string;
  validBefore?: string;
  expiresAt?: string;
  transaction?: string;
  status?: number;
  reason?: string;
}

export interface GuardOptions {
  policy: SpendPolicy;
  ledgerPath: string;
  /** Asked for payments above `approvalAbove`; resolve true to sign. Default: refuse. */
  approve?: (request: Payment & { requirements: unknown; reasons: string[] }) => Promise<boolean> | boolean;
  /** Refuse requirements whose maxTimeoutSeconds is longer (default 3600). */
  maxValiditySeconds?: number;
  onDecision?: (event: { payment: Payment; decision: Decision; id?: string }) => void;
  now?: () => Date;
  /** A lock is stale only when its holder's process is gone, or (another host) older than staleMs (default min(5000, timeoutMs / 2); must be shorter than timeoutMs). */
  lock?: { timeoutMs?: number; staleMs?: number };
  /** How long a payment waits for the policy's RPCs; what they did not answer stays counted (default 3000). */
  chainTimeoutMs?: number;
  /** Resolves to the module @x402/extensions/offer-receipt where the kit's folder cannot import it (default: imported from the kit). */
  offerVerifier?: () => Promise<unknown>;
}

/** The hooks of @x402/core's x402Client that the guard uses (x402HTTPClient: pass it, it has `.client`). */
export interface GuardableClient {
  onBeforePaymentCreation(hook: (context: any) => Promise<unknown>): unknown;
  onAfterPaymentCreation(hook: (context: any) => Promise<unknown>): unknown;
  onPaymentCreationFailure?(hook: (context: any) => Promise<unknown>): unknown;
  onPaymentResponse?(hook: (context: any) => Promise<unknown>): unknown;
}

/** `client`: an x402Client, or an x402HTTPClient (whose `.client` is guarded and whose requested URLs are seen). Returns it. */
export function guardClient<C extends GuardableClient | object>(client: C, options: GuardOptions): C;
/** A fetch that records the receipt of every paid request of a guarded client (x402 v1 and v2): give it to wrapFetchWithPayment. */
export function recordReceipts<F extends (input: any, init?: any) => Promise<Response>>(fetchImpl: F, client: object): F;
export function signedTerms(paymentPayload: unknown): { kind: "eip3009" | "permit2"; payer: string; payTo: string; amount: string; nonce: string; validBefore: string } | undefined;
export class PaymentDenied extends Error {
  decision: Decision;
}
/** @deprecated replaced by guardClient; throws. */
export function createBudgetGuard(options?: unknown): never;

export function checkPolicy(policy: unknown): string[];
export function decide(policy: SpendPolicy, payment: Payment, spent?: LedgerEntry[], now?: Date, ledgerName?: string): Decision;
/** The cheapest entry the whole policy allows now (per payee and per day included), alone, or none. */
export function rankRequirements<R extends Record<string, unknown>>(
  policy: SpendPolicy,
  requirements: R[],
  spent?: LedgerEntry[],
  now?: Date,
  version?: 1 | 2,
): R[];
/** v1 entries are read by `maxAmountRequired` (what the v1 client signs), v2 by `amount`. */
export function paymentOf(requirements: Record<string, unknown>, url?: string, version?: 1 | 2): Payment;
export function termsFrom402(headerValue: string | null | undefined, body?: unknown, policy?: SpendPolicy): Payment & Record<string, unknown>;
export const V1_NETWORKS: Record<string, string>;

export const LEDGER_FIELDS: string[];
export const STATES: Record<LedgerState, string>;
export class LedgerError extends Error {}
export function readLedger(file: string): LedgerEntry[];
export function repairLedger(file: string): boolean;
export function dayIn(timeZone: string, date: Date): string;
export function unknownAuthorizations(entries: LedgerEntry[], now?: Date): LedgerEntry[];
export function authorizationStatus(
  rpcUrl: string,
  authorization: { asset: string; payer: string; nonce: string; validBefore: string },
  options?: { timeoutMs?: number },
): Promise<{ state: "used" | "unused" | "pending"; block: string }>;
export function resolveLapsedAuthorizations(
  ledgerPath: string,
  policy: SpendPolicy,
  options?: {
    now?: Date;
    lock?: { timeoutMs?: number; staleMs?: number };
    timeoutMs?: number;
    /** Look up every unanswered authorization, not only those that count today (the ledger script). */
    all?: boolean;
    records?: LedgerEntry[];
    concurrency?: number;
    maxLookups?: number;
  },
): Promise<{ id: string; nonce: string; state: "used" | "unused" | "pending" | "unknown"; block?: string; reason?: string }[]>;
export function appendEntry(file: string, entry: Partial<LedgerEntry>): void;
export function foldLedger(entries: LedgerEntry[]): (LedgerEntry & { line: number; lines: number[]; updatedAt: string })[];
export function counts(record: LedgerEntry, now?: Date): boolean;
export function openAuthorizations(entries: LedgerEntry[], now?: Date): LedgerEntry[];
export function auditLedger(entries: LedgerEntry[]): string[];
export function summarise(entries: LedgerEntry[], timeZone?: string): Record<string, string>;

export class LockTimeout extends Error {}
export function withLedgerLock<T>(ledgerPath: string, work: () => T, options?: { timeoutMs?: number; staleMs?: number }): Promise<T>;

/** [name, global RegExp, optional check(matchText, text, match)]. */
export const SECRET_RULES: [string, RegExp, ((match: string, text: string, groups: RegExpMatchArray) => boolean)?][];
/** Text, or a file's bytes (UTF-8, or UTF-16 with a byte-order mark). Excerpts are redacted. */
export function scanSecrets(input: string | Uint8Array): { rule: string; line: number; excerpt: string }[];

export declare const OFFER_RECEIPT_PACKAGE: "@x402/extensions/offer-receipt";
export declare const SIGNED_OFFER_MODES: readonly ["ignore", "verify", "require"];
/** The signed-offer check of one entry about to be signed: `reasons` to refuse, else the offer's signer (if any). */
export declare function checkSignedOffer(
  policy: SpendPolicy,
  context: { paymentRequired: unknown; requirements: unknown; payment: Payment; url?: string; now: Date; load?: () => Promise<unknown> },
): Promise<{ reasons?: string[]; offerSigner?: string }>;
