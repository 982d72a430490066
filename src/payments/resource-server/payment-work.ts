import type { Logger } from "pino";
import type { OperationKind } from "../../contract/operation.ts";
import { Problem } from "../../problem.ts";
import type { PaymentRecord, Store, StoredOutcome } from "../../store/store.ts";
import type { KindServices } from "./kind-services.ts";
import type { LeaseKeeper } from "./lease-keeper.ts";
import { STALE_LEASE_MS } from "./lease-keeper.ts";
import type { PaymentKind } from "./operation-kinds.ts";
import { type GateOutcome, inProgress, type PaidRequest, RETRY_AFTER_SECONDS } from "./paid-request.ts";
import type { PaymentIdentity } from "./payment-identity.ts";
import { ownerVerdict } from "./replay-policy.ts";
import type { Settlement } from "./settlement.ts";
import { resumeVerdict } from "./settlement-verdict.ts";

/** How long a request waits for another one (maybe at another instance) working on the same payment. */
export const DUPLICATE_WAIT_MS = 15_000;

/**
 * The work on one payment under its lease: run the operation, keep its answer, let the operation's kind
 * conclude it; resume a payment whose owner stopped; wait for an owner that is still at it. One per gate:
 * it knows which payments this instance works on (a repeat joins that work).
 */
export class PaymentWork {
  private readonly inflight = new Map<string, Promise<StoredOutcome>>();

  constructor(
    private readonly options: {
      store: Store;
      leases: LeaseKeeper;
      settlement: Settlement;
      kinds: Readonly<Record<OperationKind, PaymentKind>>;
      services: KindServices;
      now: () => number;
    },
  ) {}

  private get store() {
    return this.options.store;
  }
  private get leases() {
    return this.options.leases;
  }
  private get settlement() {
    return this.options.settlement;
  }
  private get kinds() {
    return this.options.kinds;
  }
  private get services() {
    return this.options.services;
  }
  private now() {
    return this.options.now();
  }

  /**
   * A kept outcome as the answer to a repeat of its payment. One that awaited its client (decided by the
   * sweeper after the client was told to retry) is delivered now, and its replay window starts now; should
   * the ledger fail to say so, the answer is given all the same (it then stays replayable a while longer).
   */
  async replayed(record: PaymentRecord, kept: StoredOutcome, log: Logger): Promise<GateOutcome> {
    if (kept.awaitingClient) {
      await this.store
        .markOutcomeDelivered(record.paymentKey, this.now())
        .catch((error) => log.warn({ err: error }, "could not record the delivery of a kept outcome"));
    }
    return { kind: "answer", answer: kept, replayed: true };
  }

  /** The work this instance does on this payment right now, if any. */
  running(paymentKey: string): Promise<StoredOutcome> | undefined {
    return this.inflight.get(paymentKey);
  }

  /** A payment just reserved: run and conclude it under its lease. */
  start(identity: PaymentIdentity, request: PaidRequest, lease: number): Promise<StoredOutcome> {
    return this.track(identity.paymentKey, lease, () => this.runAndConclude(identity, request, null, false));
  }

  /** An unfinished payment seen again: take it over and resume it once its lease is free, or wait for its owner. */
  async takeOverOrWait(
    record: PaymentRecord,
    identity: PaymentIdentity,
    request: PaidRequest,
  ): Promise<StoredOutcome> {
    const deadline = Date.now() + DUPLICATE_WAIT_MS;
    for (;;) {
      const lease = this.leases.fresh();
      if (await this.store.takeOverPayment(record.paymentKey, this.now(), lease)) {
        return this.track(record.paymentKey, lease, () => this.resume(record, identity, request));
      }
      // Neither taken over nor waited for (its row gone, or lost to other takers again and again): retry later.
      if (Date.now() >= deadline) throw inProgress(RETRY_AFTER_SECONDS);
      const outcome = await this.awaitOwner(record.paymentKey, deadline);
      if (outcome) return outcome;
      // Free to take over again at once: pause first, or a row that is gone would be asked for in a tight loop.
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
  }

  /** Another attempt's outcome, waited for but never taken over; retry later if its owner stopped (the sweeper resumes it). */
  async outcomeOf(paymentKey: string): Promise<StoredOutcome> {
    const outcome = await this.awaitOwner(paymentKey, Date.now() + DUPLICATE_WAIT_MS);
    return outcome ?? Promise.reject(inProgress(RETRY_AFTER_SECONDS));
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
            : Problem.of("internal-error", "the operation failed unexpectedly; nothing was charged");
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
  async track(paymentKey: string, lease: number, work: () => Promise<StoredOutcome>): Promise<StoredOutcome> {
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
}
