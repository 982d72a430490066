import type { PaymentPayload, SettleResponse } from "@x402/core/types";
import type { Logger } from "pino";
import type { AnyOperation, OperationResult, StartedOperation } from "../../contract/operation.ts";
import { Problem } from "../../problem.ts";
import type { PaymentState, StoredOutcome } from "../../store/store.ts";
import { paymentBoundsProblem } from "./payload-bounds.ts";
import { paymentWithIdentifier } from "./payment-identifier-extension.ts";
import type { PaymentTerms } from "./terms.ts";

/**
 * A door's decoded payment as the gate takes it: an object within the payload bounds (payload-bounds.ts),
 * or unreadable (refused with `what` named). JSON that decodes to null, a number, a string or an array is
 * not a payment.
 */
export function asPaymentPayload(value: unknown, what: string): PaymentPayload | { unreadable: string } {
  if (typeof value !== "object" || value === null || Array.isArray(value)) {
    return { unreadable: `${what} is not an x402 PaymentPayload object` };
  }
  const problem = paymentBoundsProblem(value);
  if (problem !== undefined) return { unreadable: `${what} is refused unread: ${problem}` };
  return value as PaymentPayload;
}

/**
 * The PaidRequest of one call through a door to a started operation: the decoded payment with its
 * payment-identifier, and the operation's work under the payment (run, onFinal). Every door builds it so.
 */
export function paidRequestOf(call: {
  operation: AnyOperation;
  terms: PaymentTerms;
  input: unknown;
  decoded: PaymentPayload | { unreadable: string } | undefined;
  handler: StartedOperation<unknown, unknown>;
  requestId: string;
  log: Logger;
  now: () => Date;
  door: string;
  downloadToken?: string;
  client?: string;
}): PaidRequest {
  const { decoded, handler, now, ...request } = call;
  const { input, requestId, log } = call;
  return {
    ...request,
    ...paymentWithIdentifier(decoded),
    run: ({ paymentKey, payer }) => handler.handle(input, { requestId, log, now, paymentKey, payer }),
    onFinal: handler.paymentFinal?.bind(handler),
  };
}

/**
 * What the gate is asked, whatever the door it came through (HTTP today, MCP next): nothing in it is a
 * header. The transport decodes the payment and names the client; the gate decides and does the I/O.
 */
export interface PaidRequest {
  operation: AnyOperation;
  terms: PaymentTerms;
  /** The operation's input, already validated. */
  input: unknown;
  /** The decoded x402 payment payload; none → payment required; unreadable → refused with that reason. */
  payment: PaymentPayload | { unreadable: string } | undefined;
  requestId: string;
  log: Logger;
  /** The way the call came in ("http" today; MCP and x402 v1 later): labels its revenue in /metrics. */
  door: string;
  /**
   * The client's idempotency key, the x402 `payment-identifier` extension's id (see payment-identifier-extension.ts:
   * a door reads it with paymentWithIdentifier). A retry under the same key with a new payment for the same
   * request gets the first payment's answer; the new payment is verified, never settled.
   */
  paymentIdentifier?: string;
  /** The download token the client presented to resume a paid download. */
  downloadToken?: string;
  /** The client's address (behind a trusted proxy, the forwarded one): a sold download is bound to its first caller. */
  client?: string;
  /** Runs the operation; an async one records its job under this payment (see onFinal). */
  run: (payment: { paymentKey: string; payer: string }) => Promise<OperationResult<unknown>>;
  /**
   * Async operations: told when the payment is held (after the ledger says so: the job recorded by
   * run() is queued) or ends unheld (released, failed: the job is dropped), exactly once whichever
   * attempt (this request, a retry, another instance) gets there. Must be idempotent.
   */
  onFinal?: (paymentKey: string, state: Exclude<PaymentState, "verified" | "settled">) => Promise<void>;
}

/** What deciding a payment's outcome needs of its request; a recovery without a client has no more than this. */
export type PaymentContext = Pick<PaidRequest, "operation" | "terms" | "log" | "onFinal"> &
  Partial<Pick<PaidRequest, "door">> & {
    /** Decided with no client to answer (the recovery sweeper): the outcome is kept awaiting its client. */
    unattended?: boolean;
  };

/**
 * What the gate answers, for any transport to render: the terms (no payment), an answer (the
 * operation's result with its receipt, or a final refusal, as the ledger keeps it; `replayed` when it is
 * another attempt's), a refusal that settles nothing (a payment not accepted, another request's
 * payment), or "retry later" (nothing was charged, or the payment is being worked on).
 */
export type GateOutcome =
  | { kind: "payment-required"; terms: PaymentTerms }
  | { kind: "answer"; answer: StoredOutcome; replayed: boolean }
  | { kind: "refused"; problem: Problem }
  | { kind: "retry-later"; problem: Problem; retryAfterSeconds: number };

/**
 * The answers the ledger keeps are in the form of the transport that made them (x402 over HTTP today):
 * the gate never writes that form itself, it is given this. See src/http/x402-answers.ts.
 */
export interface KeptAnswers {
  /** A presented payment refused with a reason: the terms again. */
  rejection(terms: PaymentTerms, reason: string, message: string): Problem;
  /** The answer with the settlement's receipt. */
  withReceipt(answer: StoredOutcome, settlement: SettleResponse): StoredOutcome;
  /** The download token a kept answer gave its buyer, if it gave one. */
  downloadToken(answer: StoredOutcome): string | undefined;
  /** How the transport names the download token, for a client told to present it. */
  downloadTokenName: string;
}

/** Seconds a client should wait before retrying when payments cannot be processed right now. */
export const RETRY_AFTER_SECONDS = 5;

/** Thrown inside the gate for "nothing decided, retry later"; handle() answers it as a retry-later outcome. */
export class RetryLater extends Error {
  constructor(
    readonly problem: Problem,
    readonly retryAfterSeconds: number,
  ) {
    super(problem.detail);
  }
}

/** Payments cannot be processed right now (facilitator, chain or ledger unreachable): 503, retry. */
export function paymentsUnavailable(detail: string): RetryLater {
  return new RetryLater(Problem.of("payments-unavailable", detail), RETRY_AFTER_SECONDS);
}

/** Another attempt works on this payment: never a rejection, a retry with the same payment gets its outcome. */
export function inProgress(retryAfterSeconds: number): RetryLater {
  const seconds = Math.max(1, retryAfterSeconds);
  return new RetryLater(
    Problem.of(
      "payment-in-progress",
      `this payment is being processed; retry the same request with the same payment in ${seconds} s to receive its outcome; it is charged at most once`,
    ),
    seconds,
  );
}
