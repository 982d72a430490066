import type { x402ResourceServer } from "@x402/core/server";
import pino from "pino";
import type { OperationKind } from "../../contract/operation.ts";
import { Problem } from "../../problem.ts";
import { isStoreOutage } from "../../store/outage.ts";
import type { PaymentRecord, PaymentState, Store, StoredOutcome } from "../../store/store.ts";
import { isVoucherPayment, type VoucherGate } from "../vouchers/voucher-gate.ts";
import type { PaymentGateOptions } from "./gate-options.ts";
import { jobDeadline } from "./job-payment.ts";
import type { KindServices } from "./kind-services.ts";
import { LeaseKeeper } from "./lease-keeper.ts";
import { PAYMENT_KINDS, type PaymentKind } from "./operation-kinds.ts";
import {
  type GateOutcome,
  type KeptAnswers,
  type PaidRequest,
  type PaymentContext,
  paymentsUnavailable,
  RetryLater,
} from "./paid-request.ts";
import { PaymentIdentifiers } from "./payment-identifier.ts";
import { identifyPayment, type PaymentIdentity, safeEqual, sha256 } from "./payment-identity.ts";
import { PaymentWork } from "./payment-work.ts";
import { repeatVerdict } from "./replay-policy.ts";
import { Settlement } from "./settlement.ts";

/**
 * The paid-call pipeline: verify → reserve (payer, nonce) → run → keep the answer → settle only
 * on success (or hold, as the operation's kind says). See docs/payments.md and docs/architecture.md.
 * Transport-neutral: a PaidRequest in, a GateOutcome out; the decisions are pure functions
 * (replay-policy.ts, settlement-verdict.ts), this class does the I/O around them.
 *
 * A payment is reserved in the store before any work, so the same payment arriving twice
 * (concurrently, later, or at another instance sharing the store) runs the work once and is
 * settled at most once; a retry of the identical request gets the stored outcome. A payment whose
 * settlement outcome is unknown (lost receipt, crash) stays open and is resolved from the token's
 * own authorization state on the next retry.
 */
export class PaymentGate {
  private initialized: Promise<void> | undefined;
  private active = 0;
  private idle: (() => void) | undefined;
  private readonly resourceServer: x402ResourceServer;
  private readonly store: Store;
  private readonly now: () => number;
  private readonly settlementTimeoutMs: number;
  private readonly settlement: Settlement;
  private readonly answers: KeptAnswers;
  private readonly kinds: Readonly<Record<OperationKind, PaymentKind>>;
  private readonly services: KindServices;
  private readonly work: PaymentWork;
  private readonly identifiers: PaymentIdentifiers;
  private readonly vouchers: VoucherGate | undefined;
  /** The leases this instance holds on payments it works on, renewed while it works. */
  readonly leases: LeaseKeeper;

  constructor(options: PaymentGateOptions) {
    this.resourceServer = options.resourceServer;
    this.store = options.store;
    this.now = options.now ?? Date.now;
    this.settlementTimeoutMs = options.settlementTimeoutMs;
    this.kinds = options.kinds ?? PAYMENT_KINDS;
    this.answers = options.answers;
    this.leases =
      options.leases ?? new LeaseKeeper(options.store, options.log ?? pino({ level: "silent" }), this.now);
    this.leases.start();
    this.settlement = new Settlement({ ...options, leases: this.leases, now: this.now });
    this.services = {
      settlement: this.settlement,
      store: options.store,
      metrics: options.metrics,
      now: this.now,
      settlementTimeoutMs: options.settlementTimeoutMs,
      maxHeldPerPayer: options.maxHeldPerPayer ?? Number.POSITIVE_INFINITY,
      ...(options.balances ? { balances: options.balances } : {}),
    };
    this.identifiers = new PaymentIdentifiers(options.store, this.now);
    this.vouchers = options.vouchers;
    this.work = new PaymentWork({
      store: this.store,
      leases: this.leases,
      settlement: this.settlement,
      kinds: this.kinds,
      services: this.services,
      now: this.now,
    });
  }

  /** Until when the job of a held payment may run before it is given up and the payment released. */
  jobDeadline(record: Pick<PaymentRecord, "validBefore">): number {
    return jobDeadline(record, this.settlementTimeoutMs);
  }

  /** Resolves when no paid call is between verification and its answer. */
  async drain(): Promise<void> {
    if (this.active === 0) return;
    await new Promise<void>((resolve) => {
      this.idle = resolve;
    });
  }

  async handle(request: PaidRequest): Promise<GateOutcome> {
    if (request.payment === undefined) return { kind: "payment-required", terms: request.terms };
    this.active++;
    try {
      return await this.process(request);
    } catch (error) {
      if (error instanceof RetryLater) {
        return { kind: "retry-later", problem: error.problem, retryAfterSeconds: error.retryAfterSeconds };
      }
      if (error instanceof Problem) return { kind: "refused", problem: error };
      if (isStoreOutage(error)) {
        // Before settlement nothing was sent; after it, finish() answers itself. Either way: retry, not 500.
        request.log.warn({ err: error }, "the ledger cannot be reached");
        const { problem, retryAfterSeconds } = paymentsUnavailable(
          "the payment ledger cannot be reached right now; nothing was charged; retry the same request",
        );
        return { kind: "retry-later", problem, retryAfterSeconds };
      }
      throw error;
    } finally {
      this.active--;
      if (this.active === 0) this.idle?.();
    }
  }

  /**
   * Resolves a payment its owner left unfinished (a crash, a lost store) without waiting for the client:
   * the recovery sweeper calls this (context.unattended) for "verified" payments whose lease ran out; the
   * operation's kind decides it (PaymentKind.recover). Returns the payment's state after the look.
   */
  async recover(record: PaymentRecord, context: PaymentContext): Promise<PaymentState | "busy"> {
    const lease = this.leases.fresh();
    if (
      this.work.running(record.paymentKey) !== undefined ||
      !(await this.store.takeOverPayment(record.paymentKey, this.now(), lease))
    ) {
      return "busy";
    }
    try {
      const kind = this.kinds[context.operation.kind];
      await this.work.track(record.paymentKey, lease, () => kind.recover(record, context, this.services));
    } catch (error) {
      if (!(error instanceof Problem) && !(error instanceof RetryLater)) throw error;
    }
    return (await this.store.getPayment(record.paymentKey))?.state ?? "busy";
  }

  private async process(request: PaidRequest): Promise<GateOutcome> {
    const { payment } = request;
    if (payment === undefined) return { kind: "payment-required", terms: request.terms };
    if ("unreadable" in payment)
      throw this.settlement.rejected(request, "invalid_payload", payment.unreadable);
    // A voucher is charged on its channel, not settled per call: its own path (voucher-gate.ts).
    if (isVoucherPayment(payment)) {
      if (this.vouchers && request.terms.voucher) return this.vouchers.handle(request, payment);
      throw this.settlement.rejected(
        request,
        "payment_terms_mismatch",
        `${request.operation.path} is not paid with batch-settlement here; pay with the exact scheme`,
      );
    }
    const identity = identifyPayment(request, payment, (payload) =>
      this.resourceServer.findMatchingRequirements([request.terms.requirements], payload),
    );
    if (!("paymentKey" in identity))
      throw this.settlement.rejected(request, identity.reason, identity.message);
    const known = await this.store.getPayment(identity.paymentKey);
    if (known) return this.repeat(known, identity, request);

    await this.ensureInitialized();
    const kind = this.kinds[request.operation.kind];
    await kind.admit(identity, request, this.services);
    try {
      await this.settlement.verify(identity, request);
    } catch (error) {
      // A duplicate of this payment sent at the same time (maybe to another instance) may have settled it
      // between the lookup above and this verification: the nonce is then spent and verification refuses
      // it. That payment's outcome is the answer, never a rejection the client would pay again after.
      const meanwhile = await this.store.getPayment(identity.paymentKey);
      if (meanwhile) return this.repeat(meanwhile, identity, request);
      throw error;
    }
    // Verified (its signer is the payer): a retry under a payment-identifier another payment holds gets that one's.
    const first = await this.identifiers.holder(request, identity);
    if (first) return this.repeat(first, identity, request, "identifier");
    const lease = this.leases.fresh();
    const reservation = await kind.reserve(
      {
        ...identity.facts,
        payloadHash: identity.payloadHash,
        requestHash: identity.requestHash,
        operationId: request.operation.id,
        requestId: request.requestId,
        leaseUntil: lease,
      },
      identity,
      request,
      this.services,
    );
    if (!reservation.reserved) return this.repeat(reservation.existing, identity, request);
    this.services.metrics.paymentState(request.operation.id, "verified");
    return { kind: "answer", answer: await this.work.start(identity, request, lease), replayed: false };
  }

  /**
   * The same payment seen again (the same authorization, or another under the payment-identifier `record`
   * holds): the stored outcome, the first attempt's answer, a resumption, or a refusal.
   */
  private async repeat(
    record: PaymentRecord,
    identity: PaymentIdentity,
    request: PaidRequest,
    sameBy: "authorization" | "identifier" = "authorization",
  ): Promise<GateOutcome> {
    const token = record.outcome ? this.answers.downloadToken(record.outcome) : undefined;
    const { firstCaller } = record.outcome ?? {};
    const verdict = repeatVerdict({
      samePayload: sameBy === "identifier" || record.payloadHash === identity.payloadHash,
      sameRequest: record.requestHash === identity.requestHash,
      runningHere: this.work.running(record.paymentKey) !== undefined,
      final: record.outcome
        ? {
            held: record.state === "held",
            settledJob: this.kinds[request.operation.kind].holdsPayment && record.state === "settled",
            soldDownload: this.kinds[request.operation.kind].soldDownload(record.state),
            awaitingClient: record.outcome.awaitingClient === true,
            ageMs: this.now() - (record.outcome.deliveredAt ?? Date.parse(record.updatedAt)),
            token,
            tokenPresented:
              token !== undefined &&
              request.downloadToken !== undefined &&
              safeEqual(request.downloadToken, token),
            firstCaller:
              firstCaller !== undefined &&
              request.client !== undefined &&
              safeEqual(sha256(request.client), firstCaller),
          }
        : undefined,
    });
    const replayed = (kept: StoredOutcome) => this.work.replayed(record, kept, request.log);
    switch (verdict.verdict) {
      case "reject":
        if (verdict.why === "nonce-used") {
          throw this.settlement.rejected(
            request,
            "nonce_already_used",
            "this payment authorization nonce has already been used",
          );
        }
        throw alreadyUsed(
          sameBy === "identifier"
            ? "this payment-identifier was used for a different request; choose a new id for this one"
            : "this payment was made for a different request; sign a new payment for this one",
        );
      case "refuse-replay":
        throw alreadyUsed(
          verdict.why === "expired"
            ? this.kinds[request.operation.kind].expiredReplay
            : `this download is resumed with its payment and ${this.answers.downloadTokenName} its first answer carried`,
        );
      case "serve":
        return replayed(record.outcome as StoredOutcome);
      case "join":
        return replayed(await (this.work.running(record.paymentKey) as Promise<StoredOutcome>));
      case "take-over":
        // Another authorization's payment is never resumed with this one: its owner's outcome, or retry later.
        if (sameBy === "identifier") return replayed(await this.work.outcomeOf(record.paymentKey));
        return replayed(await this.work.takeOverOrWait(record, identity, request));
    }
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

const alreadyUsed = (detail: string) => Problem.of("payment-already-used", detail);
