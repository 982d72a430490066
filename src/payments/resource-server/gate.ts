import type { x402ResourceServer } from "@x402/core/server";
import pino, { type Logger } from "pino";
import type { OperationKind } from "../../catalog/operation.ts";
import type { Metrics } from "../../metrics.ts";
import { Problem } from "../../problem.ts";
import { isStoreOutage } from "../../store/outage.ts";
import type { PaymentRecord, PaymentState, Store, StoredOutcome } from "../../store/store.ts";
import type { AuthorizationChecker } from "../settler/authorization-state.ts";
import { jobDeadline } from "./held-payment-settler.ts";
import { LeaseKeeper, STALE_LEASE_MS } from "./lease-keeper.ts";
import { type KindServices, PAYMENT_KINDS, type PaymentKind } from "./operation-kinds.ts";
import {
  type GateOutcome,
  inProgress,
  type KeptAnswers,
  type PaidRequest,
  type PaymentContext,
  paymentsUnavailable,
  RETRY_AFTER_SECONDS,
  RetryLater,
} from "./paid-request.ts";
import { identifyPayment, type PaymentIdentity, safeEqual, sha256 } from "./payment-identity.ts";
import { ownerVerdict, repeatVerdict } from "./replay-policy.ts";
import { Settlement } from "./settlement.ts";
import { resumeVerdict } from "./settlement-verdict.ts";

/** How long a request waits for another one (maybe at another instance) working on the same payment. */
const DUPLICATE_WAIT_MS = 15_000;

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
  private readonly inflight = new Map<string, Promise<StoredOutcome>>();
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
  /** The leases this instance holds on payments it works on, renewed while it works. */
  readonly leases: LeaseKeeper;

  constructor(options: {
    resourceServer: x402ResourceServer;
    store: Store;
    metrics: Metrics;
    /** How the ledger keeps answers: the transport's form (src/http/x402-answers.ts). */
    answers: KeptAnswers;
    /** Chain access to resolve unknown settlements; absent in facilitator mode without RPC_URL. */
    authorizations?: AuthorizationChecker;
    /** Epoch milliseconds; injectable so tests can move past leases and replay windows. */
    now?: () => number;
    /** How long one settlement may wait for its receipt; leases cover two of them. */
    settlementTimeoutMs: number;
    /** Jobs one payer may run at once on held payments. */
    maxHeldPerPayer?: number;
    /** How each kind of operation is paid; by default PAYMENT_KINDS. */
    kinds?: Readonly<Record<OperationKind, PaymentKind>>;
    /** Shared with the recovery sweeper; by default one of the gate's own. */
    leases?: LeaseKeeper;
    log?: Logger;
  }) {
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
    };
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
   * the recovery sweeper calls this for "verified" payments whose lease ran out; the operation's kind
   * decides it (PaymentKind.recover). Returns the payment's state after the look.
   */
  async recover(record: PaymentRecord, context: PaymentContext): Promise<PaymentState | "busy"> {
    const lease = this.leases.fresh();
    if (
      this.inflight.has(record.paymentKey) ||
      !(await this.store.takeOverPayment(record.paymentKey, this.now(), lease))
    ) {
      return "busy";
    }
    try {
      const kind = this.kinds[context.operation.kind];
      await this.track(record.paymentKey, lease, () => kind.recover(record, context, this.services));
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
    const lease = this.leases.fresh();
    const reservation = await this.store.reservePayment({
      ...identity.facts,
      payloadHash: identity.payloadHash,
      requestHash: identity.requestHash,
      operationId: request.operation.id,
      requestId: request.requestId,
      leaseUntil: lease,
    });
    if (!reservation.reserved) return this.repeat(reservation.existing, identity, request);
    this.services.metrics.paymentState(request.operation.id, "verified");
    const answer = await this.track(identity.paymentKey, lease, () =>
      this.runAndConclude(identity, request, null, false),
    );
    return { kind: "answer", answer, replayed: false };
  }

  /** The same payment seen again: the stored outcome, the first attempt's answer, a resumption, or a refusal. */
  private async repeat(
    record: PaymentRecord,
    identity: PaymentIdentity,
    request: PaidRequest,
  ): Promise<GateOutcome> {
    const token = record.outcome ? this.answers.downloadToken(record.outcome) : undefined;
    const { firstCaller } = record.outcome ?? {};
    const verdict = repeatVerdict({
      samePayload: record.payloadHash === identity.payloadHash,
      sameRequest: record.requestHash === identity.requestHash,
      runningHere: this.inflight.has(record.paymentKey),
      final: record.outcome
        ? {
            soldDownload: this.kinds[request.operation.kind].soldDownload(record.state),
            ageMs: this.now() - Date.parse(record.updatedAt),
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
    const replayed = (answer: StoredOutcome): GateOutcome => ({ kind: "answer", answer, replayed: true });
    switch (verdict.verdict) {
      case "reject":
        if (verdict.why === "nonce-used") {
          throw this.settlement.rejected(
            request,
            "nonce_already_used",
            "this payment authorization nonce has already been used",
          );
        }
        throw alreadyUsed("this payment was made for a different request; sign a new payment for this one");
      case "refuse-replay":
        throw alreadyUsed(
          verdict.why === "expired"
            ? "this payment was already used and its outcome is no longer served; sign a new payment"
            : `this download is resumed with its payment and ${this.answers.downloadTokenName} its first answer carried`,
        );
      case "serve":
        return replayed(record.outcome as StoredOutcome);
      case "join":
        return replayed(await (this.inflight.get(record.paymentKey) as Promise<StoredOutcome>));
      case "take-over": {
        const deadline = Date.now() + DUPLICATE_WAIT_MS;
        for (;;) {
          const lease = this.leases.fresh();
          if (await this.store.takeOverPayment(record.paymentKey, this.now(), lease)) {
            return replayed(
              await this.track(record.paymentKey, lease, () => this.resume(record, identity, request)),
            );
          }
          const outcome = await this.awaitOwner(record.paymentKey, deadline);
          if (outcome) return replayed(outcome);
        }
      }
    }
  }

  /** Finishes a payment whose owner stopped before its final state (a crash, or an unknown settlement). */
  private async resume(
    record: PaymentRecord,
    presented: PaymentIdentity,
    request: PaidRequest,
  ): Promise<StoredOutcome> {
    request.log.info({ paymentKey: record.paymentKey }, "resuming an unfinished payment");
    // Accepted when it was first reserved, not now (its settlement latency counts from then).
    const identity = { ...presented, facts: { ...presented.facts, createdAt: record.createdAt } };
    let onChain: Awaited<ReturnType<Settlement["chainOutcome"]>>;
    try {
      onChain = await this.settlement.chainOutcome(identity.facts);
    } catch (error) {
      request.log.warn({ err: error }, "cannot read the authorization state to resume the payment");
      return this.settlement.keepOpen(identity.facts);
    }
    if (resumeVerdict({ onChain, nowMs: this.now(), validBefore: identity.facts.validBefore }) === "settle") {
      return this.runAndConclude(identity, request, record.pendingOutcome, true);
    }
    // Paid or used meanwhile, or too late to settle (whether an earlier broadcast may still land is decided there).
    const expired = !onChain || onChain.state === "unused";
    return this.settlement.resolve(identity.facts, request, record.pendingOutcome, {
      onChain,
      ...(expired ? { refusal: "the authorization expired" } : {}),
    });
  }

  /**
   * Runs the operation (unless its answer is already kept from an earlier attempt), keeps the answer,
   * then lets the operation's kind settle or hold it. A failed operation releases the payment.
   */
  private async runAndConclude(
    identity: PaymentIdentity,
    request: PaidRequest,
    kept: StoredOutcome | null,
    resumed: boolean,
  ): Promise<StoredOutcome> {
    const { operation, log } = request;
    const kind = this.kinds[operation.kind];
    let answer = kept;
    if (!answer) {
      try {
        const result = await request.run({ paymentKey: identity.paymentKey, payer: identity.facts.payer });
        answer = kind.keep(
          {
            status: result.status ?? 200,
            headers: { "content-type": operation.outputContentType, ...result.headers },
            ...(result.file
              ? { body: "", file: result.file }
              : { body: result.bodyText ?? JSON.stringify(result.body) }),
          },
          request,
        );
      } catch (error) {
        if (!(error instanceof Problem)) log.error({ err: error }, "operation failed");
        const problem =
          error instanceof Problem
            ? error
            : new Problem(
                500,
                "internal-error",
                "Internal error",
                "the operation failed unexpectedly; nothing was charged",
              );
        log.info({ status: problem.status }, "operation failed: payment released, nothing charged");
        return this.settlement.finish(
          identity.facts,
          request,
          "released",
          problem.toResponse(operation.path),
          {
            error: problem.detail,
          },
        );
      }
      await this.store.recordPendingOutcome(identity.paymentKey, answer);
    }
    const concluded = await kind.conclude(identity, request, answer, resumed, this.services);
    if (concluded) return concluded;
    return (
      (await this.awaitOwner(identity.paymentKey, Date.now() + DUPLICATE_WAIT_MS)) ??
      Promise.reject(inProgress(1))
    );
  }

  /** Runs the work of this instance on a payment whose lease it holds, renewing the lease until it ends. */
  private async track(
    paymentKey: string,
    lease: number,
    work: () => Promise<StoredOutcome>,
  ): Promise<StoredOutcome> {
    this.leases.hold(paymentKey, lease);
    const promise = work();
    this.inflight.set(paymentKey, promise);
    try {
      return await promise;
    } finally {
      this.inflight.delete(paymentKey);
      this.leases.forget(paymentKey);
    }
  }

  /** Another attempt works on the payment: its outcome once final, or undefined to take it over (ownerVerdict). */
  private async awaitOwner(paymentKey: string, deadline: number): Promise<StoredOutcome | undefined> {
    for (;;) {
      const record = await this.store.getPayment(paymentKey);
      const verdict = ownerVerdict({
        recorded: record !== undefined,
        final: record?.outcome != null,
        leaseLeftMs: (record?.leaseUntil ?? 0) - this.now(),
        staleLeaseMs: STALE_LEASE_MS,
        waitedTooLong: Date.now() >= deadline,
        retryAfterSeconds: RETRY_AFTER_SECONDS,
      });
      if (verdict.verdict === "outcome") return record?.outcome as StoredOutcome;
      if (verdict.verdict === "take-over") return undefined;
      if (verdict.verdict === "in-progress") throw inProgress(verdict.retryAfterSeconds);
      await new Promise((resolve) => setTimeout(resolve, 100));
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

const alreadyUsed = (detail: string) =>
  new Problem(409, "payment-already-used", "Payment already used", detail);
