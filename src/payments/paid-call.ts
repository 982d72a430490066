import { createHash } from "node:crypto";
import {
  decodePaymentSignatureHeader,
  encodePaymentRequiredHeader,
  encodePaymentResponseHeader,
} from "@x402/core/http";
import type { x402ResourceServer } from "@x402/core/server";
import {
  type PaymentPayload,
  type PaymentRequirements,
  type SettleResponse,
  VerifyError,
} from "@x402/core/types";
import type { Logger } from "pino";
import { canonicalJson } from "../canonical-json.ts";
import type { AnyOperation, OperationResult } from "../catalog/operation.ts";
import type { Metrics } from "../metrics.ts";
import { Problem } from "../problem.ts";
import type { PaymentRecord, PaymentState, Store, StoredOutcome } from "../store/store.ts";
import type { PaymentTerms } from "./terms.ts";

export const PAYMENT_SIGNATURE_HEADER = "PAYMENT-SIGNATURE";
export const PAYMENT_REQUIRED_HEADER = "PAYMENT-REQUIRED";
export const PAYMENT_RESPONSE_HEADER = "PAYMENT-RESPONSE";
/** Seconds a client should wait before retrying when payments cannot be processed right now. */
const RETRY_AFTER_SECONDS = "5";
/** How long a duplicate request waits for the first one carrying the same payment. */
const DUPLICATE_WAIT_MS = 60_000;

export interface PaidCall {
  operation: AnyOperation;
  terms: PaymentTerms;
  input: unknown;
  paymentHeader: string;
  requestId: string;
  log: Logger;
  run: () => Promise<OperationResult<unknown>>;
}

const problemOutcome = (problem: Problem, extraHeaders: Record<string, string> = {}): StoredOutcome => ({
  status: problem.status,
  headers: { "content-type": "application/problem+json", ...problem.headers, ...extraHeaders },
  body: JSON.stringify(problem.body()),
});

const sha256 = (text: string) => createHash("sha256").update(text).digest("hex");

/**
 * The paid-call pipeline: verify → reserve (payer, nonce) → run → settle only on success.
 *
 * A payment is reserved in the store before any work, so the same payment arriving twice
 * (concurrently, later, or at another instance sharing the store) runs the work once and is
 * settled at most once; a retry of the identical request gets the stored outcome.
 */
export class PaymentGate {
  private readonly inflight = new Map<string, Promise<StoredOutcome>>();
  private initialized: Promise<void> | undefined;
  private active = 0;
  private idle: (() => void) | undefined;

  constructor(
    private readonly resourceServer: x402ResourceServer,
    private readonly store: Store,
    private readonly metrics: Metrics,
  ) {}

  /** 402 for a call that carries no payment: the route's static terms, as header and as problem+json body. */
  static unpaid(terms: PaymentTerms): StoredOutcome {
    return {
      status: 402,
      headers: {
        "content-type": "application/problem+json",
        [PAYMENT_REQUIRED_HEADER]: terms.header,
        "cache-control": "no-store",
      },
      body: JSON.stringify({
        ...new Problem(402, "payment-required", "Payment required", paymentRequiredDetail(terms)).body(),
        ...terms.paymentRequired,
      }),
    };
  }

  /** Resolves when no paid call is between verification and its final ledger state. */
  async drain(): Promise<void> {
    if (this.active === 0) return;
    await new Promise<void>((resolve) => {
      this.idle = resolve;
    });
  }

  async handle(call: PaidCall): Promise<StoredOutcome> {
    this.active++;
    try {
      return await this.process(call);
    } catch (error) {
      if (error instanceof Problem) return problemOutcome(error);
      throw error;
    } finally {
      this.active--;
      if (this.active === 0) this.idle?.();
    }
  }

  private async process(call: PaidCall): Promise<StoredOutcome> {
    const { operation, terms } = call;
    const payload = decodePayment(call.paymentHeader, terms);
    const requirements = this.resourceServer.findMatchingRequirements([terms.requirements], payload);
    if (!requirements) {
      throw paymentRejected(
        terms,
        "payment_terms_mismatch",
        `the payment does not match this route's terms (exact scheme, ${terms.requirements.network}, ` +
          `asset ${terms.requirements.asset}, amount ${terms.requirements.amount}, payTo ${terms.requirements.payTo})`,
      );
    }
    const authorization = (payload.payload as { authorization?: { from?: unknown; nonce?: unknown } })
      .authorization;
    if (typeof authorization?.from !== "string" || typeof authorization.nonce !== "string") {
      throw paymentRejected(
        terms,
        "unsupported_payload",
        "only EIP-3009 transferWithAuthorization payments are accepted",
      );
    }
    const payer = authorization.from.toLowerCase();
    const nonce = authorization.nonce.toLowerCase();
    const paymentKey = `${requirements.network}:${requirements.asset}:${payer}:${nonce}`.toLowerCase();
    const payloadHash = sha256(canonicalJson(payload.payload));
    const requestHash = sha256(`${operation.id}\n${canonicalJson(call.input)}`);

    const known = await this.store.getPayment(paymentKey);
    if (known) return this.repeat(known, payloadHash, requestHash, terms);

    await this.ensureInitialized();
    let verification: Awaited<ReturnType<x402ResourceServer["verifyPayment"]>>;
    try {
      verification = await this.resourceServer.verifyPayment(payload, requirements);
    } catch (error) {
      if (error instanceof VerifyError) {
        throw paymentRejected(
          terms,
          error.invalidReason ?? "invalid_payment",
          error.invalidMessage ?? error.message,
        );
      }
      call.log.warn({ err: error }, "payment verification unavailable");
      throw paymentsUnavailable(
        "the payment facilitator or the chain could not be reached to verify the payment; nothing was charged",
      );
    }
    if (!verification.isValid) {
      this.metrics.paymentRejected(operation.id, verification.invalidReason ?? "invalid");
      throw paymentRejected(
        terms,
        verification.invalidReason ?? "invalid_payment",
        verification.invalidMessage ?? verification.invalidReason ?? "the payment is not valid",
      );
    }

    const reservation = await this.store.reservePayment({
      paymentKey,
      payloadHash,
      requestHash,
      operationId: operation.id,
      network: requirements.network,
      asset: requirements.asset,
      amount: requirements.amount,
      payer,
      payTo: requirements.payTo,
      nonce,
      requestId: call.requestId,
    });
    if (!reservation.reserved) return this.repeat(reservation.existing, payloadHash, requestHash, terms);
    this.metrics.paymentState(operation.id, "verified");

    const work = this.runAndSettle(call, payload, requirements, paymentKey);
    this.inflight.set(paymentKey, work);
    try {
      return await work;
    } finally {
      this.inflight.delete(paymentKey);
    }
  }

  private async runAndSettle(
    call: PaidCall,
    payload: PaymentPayload,
    requirements: PaymentRequirements,
    paymentKey: string,
  ): Promise<StoredOutcome> {
    const { operation, terms, log } = call;
    const finish = async (state: Exclude<PaymentState, "verified">, outcome: StoredOutcome, extra = {}) => {
      await this.store.completePayment(paymentKey, { state, outcome, ...extra });
      this.metrics.paymentState(operation.id, state);
      return outcome;
    };

    let result: OperationResult<unknown>;
    try {
      result = await call.run();
    } catch (error) {
      const problem =
        error instanceof Problem
          ? error
          : new Problem(
              500,
              "internal-error",
              "Internal error",
              "the operation failed unexpectedly; nothing was charged",
            );
      if (!(error instanceof Problem)) log.error({ err: error }, "operation failed");
      log.info({ status: problem.status }, "operation failed: payment released, nothing charged");
      return finish("released", problemOutcome(problem), { error: problem.detail });
    }

    let settlement: SettleResponse;
    try {
      settlement = await this.resourceServer.settlePayment(payload, requirements);
    } catch (error) {
      log.error({ err: error }, "settlement could not be completed");
      return finish(
        "failed",
        problemOutcome(
          paymentsUnavailable(
            "the payment could not be settled (facilitator or chain unreachable); the result is withheld",
          ),
        ),
        { error: error instanceof Error ? error.message : String(error) },
      );
    }
    if (!settlement.success) {
      // Keep the first line: viem appends a multi-line call dump to revert messages.
      const reason = (settlement.errorMessage ?? settlement.errorReason ?? "settlement failed").split(
        "\n",
      )[0] as string;
      log.warn({ settlement }, "settlement failed: result withheld");
      const rejected = paymentRejected(terms, settlement.errorReason ?? "settlement_failed", reason);
      return finish(
        "failed",
        problemOutcome(rejected, { [PAYMENT_RESPONSE_HEADER]: encodePaymentResponseHeader(settlement) }),
        { error: reason },
      );
    }
    const outcome: StoredOutcome = {
      status: result.status ?? 200,
      headers: {
        "content-type": operation.outputContentType,
        [PAYMENT_RESPONSE_HEADER]: encodePaymentResponseHeader(settlement),
      },
      body: JSON.stringify(result.body),
    };
    log.info({ transaction: settlement.transaction, payer: settlement.payer }, "payment settled");
    return finish("settled", outcome, { txHash: settlement.transaction });
  }

  /** The same payment seen again: the stored outcome, a wait for the first attempt, or a refusal. */
  private async repeat(
    record: PaymentRecord,
    payloadHash: string,
    requestHash: string,
    terms: PaymentTerms,
  ): Promise<StoredOutcome> {
    if (record.payloadHash !== payloadHash) {
      throw paymentRejected(
        terms,
        "nonce_already_used",
        "this payment authorization nonce has already been used",
      );
    }
    if (record.requestHash !== requestHash) {
      throw new Problem(
        409,
        "payment-already-used",
        "Payment already used",
        "this payment was made for a different request; sign a new payment for this one",
      );
    }
    const outcome =
      record.outcome ??
      (await this.inflight.get(record.paymentKey)) ??
      (await this.waitForOutcome(record.paymentKey));
    return { ...outcome, headers: { ...outcome.headers, "x-payment-replayed": "true" } };
  }

  /** Another instance (or a request this process no longer tracks) holds the reservation: poll the store. */
  private async waitForOutcome(paymentKey: string): Promise<StoredOutcome> {
    const deadline = Date.now() + DUPLICATE_WAIT_MS;
    while (Date.now() < deadline) {
      await new Promise((resolve) => setTimeout(resolve, 100));
      const record = await this.store.getPayment(paymentKey);
      if (record?.outcome) return record.outcome;
    }
    throw new Problem(
      409,
      "payment-in-progress",
      "Payment in progress",
      "this payment is still being processed",
      {
        headers: { "retry-after": RETRY_AFTER_SECONDS },
      },
    );
  }

  private ensureInitialized(): Promise<void> {
    this.initialized ??= this.resourceServer.initialize().catch((error) => {
      this.initialized = undefined;
      throw paymentsUnavailable(
        `the payment facilitator is unreachable (${(error as Error).message}); nothing was charged`,
      );
    });
    return this.initialized;
  }
}

function decodePayment(header: string, terms: PaymentTerms): PaymentPayload {
  let payload: PaymentPayload;
  try {
    payload = decodePaymentSignatureHeader(header);
  } catch {
    throw paymentRejected(
      terms,
      "invalid_payload",
      `${PAYMENT_SIGNATURE_HEADER} is not a base64-encoded x402 payment`,
    );
  }
  if (payload?.x402Version !== 2 || typeof payload.payload !== "object" || payload.payload === null) {
    throw paymentRejected(terms, "invalid_x402_version", "only x402 version 2 payment payloads are accepted");
  }
  return payload;
}

function paymentRequiredDetail(terms: PaymentTerms): string {
  const { amount, asset, network, payTo } = terms.requirements;
  return `pay ${amount} atomic units of ${asset} on ${network} to ${payTo} with x402 v2 (send the PAYMENT-SIGNATURE header)`;
}

/** 402 for a payment that was presented but cannot be accepted: the terms again, with the reason. */
function paymentRejected(terms: PaymentTerms, reason: string, message: string): Problem {
  const paymentRequired = { ...terms.paymentRequired, error: `${reason}: ${message}` };
  return new Problem(402, "payment-rejected", "Payment rejected", message, {
    headers: {
      [PAYMENT_REQUIRED_HEADER]: encodePaymentRequiredHeader(paymentRequired),
      "cache-control": "no-store",
    },
    extensions: { reason, ...paymentRequired },
  });
}

function paymentsUnavailable(detail: string): Problem {
  return new Problem(503, "payments-unavailable", "Payments temporarily unavailable", detail, {
    headers: { "retry-after": RETRY_AFTER_SECONDS },
  });
}
