/** How long after a payment became final its outcome is replayed to the same payment and request. */
export const REPLAY_WINDOW_MS = 120_000;
/**
 * A sold download may be resumed (Range) with the same payment for an hour: a large file on a slow or
 * broken link takes more than two minutes. A resume must carry the download token its first answer gave
 * (DOWNLOAD_TOKEN_HEADER), except the first caller's own prompt retry: the payment itself is public on
 * chain once settled, and must not let anyone who reads the chain download the product.
 */
export const PRODUCT_REPLAY_WINDOW_MS = 3600_000;

export interface ReplayFacts {
  /**
   * The payment is still held (a job's 202, nothing settled): not used yet, and not public (nothing was
   * sent to the chain), so its 202 is replayed for as long as it is held; a 409 would invite paying twice.
   */
  held?: boolean;
  /**
   * A job's 202 whose payment settled: never replayed. The settled payment is public on chain (the
   * transfer's calldata holds the authorization and its signature), and the 202 names the job whose id
   * alone reads the brief paid for; the payer finds its job by signing in (GET /v1/jobs).
   */
  settledJob?: boolean;
  /** A sold download (a product whose payment settled) keeps its outcome longer, behind its token. */
  soldDownload: boolean;
  /**
   * Made final while no client waited for it (the recovery sweeper decided it after its client was told to
   * retry), and not delivered since: the client has not received what it paid for, so its retry with the
   * same payment gets it however late it comes, never a 409 that invites a second payment.
   */
  awaitingClient?: boolean;
  /** Milliseconds since the payment became final, or since its outcome was first delivered if it awaited its client. */
  ageMs: number;
  /** The download token of the first answer, if it gave one. */
  token: string | undefined;
  /** Whether the request presented that very token. */
  tokenPresented: boolean;
  /** Whether the request comes from the client the first answer went to (as far as it can be told). */
  firstCaller: boolean;
}

/** What a repeat of a final payment gets: its outcome, or a 409 saying why not. */
export type ReplayVerdict = "serve" | "expired" | "needs-token";

/**
 * The replay rule. The signed payload is public once settled (the transaction's calldata holds it), so
 * an outcome is replayed only to the client's own prompt retries (two minutes) — a held payment's 202 for
 * as long as it is held, since nothing was sent, and never once it settled; an outcome no client received
 * yet whenever its client retries, the two minutes counted from that delivery — and a sold download,
 * resumable for an hour, only to whoever holds its download token or, within those two minutes, to
 * the client its first answer went to.
 */
export function replayVerdict(facts: ReplayFacts): ReplayVerdict {
  if (facts.held) return "serve";
  if (facts.settledJob) return "expired";
  // A sold download its client never received: its token never reached anyone, so its first caller is who
  // may still take it, however late; anyone else who read the payment from the chain still needs the token.
  if (facts.awaitingClient && (facts.token === undefined || facts.firstCaller)) return "serve";
  const window = facts.soldDownload ? PRODUCT_REPLAY_WINDOW_MS : REPLAY_WINDOW_MS;
  if (facts.ageMs > window) return "expired";
  if (facts.token === undefined) return facts.ageMs > REPLAY_WINDOW_MS ? "expired" : "serve";
  if (facts.tokenPresented) return "serve";
  return facts.ageMs <= REPLAY_WINDOW_MS && facts.firstCaller ? "serve" : "needs-token";
}

/** What is known when a payment already in the ledger is presented again. */
export interface RepeatFacts {
  /** The ledger's payload for this nonce is the one presented (not another signature over the same nonce). */
  samePayload: boolean;
  /** It pays for the very request it was first presented with (same operation, same input). */
  sameRequest: boolean;
  /** When the payment is final: what its replay rule looks at. */
  final?: ReplayFacts;
  /** This instance is working on the payment right now. */
  runningHere: boolean;
}

export type RepeatVerdict =
  /** Another payload with this nonce: the nonce is spent (402, nothing charged). */
  | { verdict: "reject"; why: "nonce-used" }
  /** The payment was made for another request: it pays for that one only (409). */
  | { verdict: "reject"; why: "other-request" }
  /** Final, and replayed to this request: the kept outcome. */
  | { verdict: "serve" }
  /** Final, and no longer served to this request (409): too old, or a download resumed without its token. */
  | { verdict: "refuse-replay"; why: Exclude<ReplayVerdict, "serve"> }
  /** This instance works on it: the answer of that work. */
  | { verdict: "join" }
  /** Unfinished elsewhere: resume it once its lease is free, meanwhile wait for its owner. */
  | { verdict: "take-over" };

/** What a repeated payment gets: serve the kept outcome, reject it for another request, join, or resume/wait. */
export function repeatVerdict(facts: RepeatFacts): RepeatVerdict {
  if (!facts.samePayload) return { verdict: "reject", why: "nonce-used" };
  if (!facts.sameRequest) return { verdict: "reject", why: "other-request" };
  if (facts.final) {
    const replay = replayVerdict(facts.final);
    return replay === "serve" ? { verdict: "serve" } : { verdict: "refuse-replay", why: replay };
  }
  return facts.runningHere ? { verdict: "join" } : { verdict: "take-over" };
}

/** What a request waiting on another attempt's payment sees at one look at the ledger. */
export interface OwnerFacts {
  /** The payment is still in the ledger. */
  recorded: boolean;
  /** Its outcome is final. */
  final: boolean;
  /** Milliseconds left on its owner's lease. */
  leaseLeftMs: number;
  /** A lease with less than this left was not renewed on time: its owner stopped or stalls. */
  staleLeaseMs: number;
  /** The wait has run past its deadline. */
  waitedTooLong: boolean;
  /** Seconds a client is told to wait when the owner is alive but the wait is over. */
  retryAfterSeconds: number;
}

export type OwnerVerdict =
  /** The owner finished: its outcome is the answer. */
  | { verdict: "outcome" }
  /** The owner is gone (lease run out, or the payment left the ledger): take the payment over. */
  | { verdict: "take-over" }
  /** "In progress, retry the same request after this long" (409, never a rejection). */
  | { verdict: "in-progress"; retryAfterSeconds: number }
  /** The owner is alive and working: look again shortly. */
  | { verdict: "look-again" };

/**
 * Waiting for another attempt's payment: its outcome once final; a take-over once its lease has run
 * out; "in progress, retry after the lease" at once when the lease went stale (its owner stopped
 * renewing it), or after the wait's deadline; otherwise look again.
 */
export function ownerVerdict(facts: OwnerFacts): OwnerVerdict {
  if (!facts.recorded) return { verdict: "take-over" };
  if (facts.final) return { verdict: "outcome" };
  if (facts.leaseLeftMs <= 0) return { verdict: "take-over" };
  if (facts.leaseLeftMs < facts.staleLeaseMs) {
    return { verdict: "in-progress", retryAfterSeconds: Math.max(1, Math.ceil(facts.leaseLeftMs / 1000)) };
  }
  if (facts.waitedTooLong) return { verdict: "in-progress", retryAfterSeconds: facts.retryAfterSeconds };
  return { verdict: "look-again" };
}
