import type { x402ResourceServer } from "@x402/core/server";
import type { SettleResponse } from "@x402/core/types";
import type { Logger } from "pino";
import type { Job } from "../../jobs/queue.ts";
import type { Metrics } from "../../metrics.ts";
import type { PaymentCompletion, PaymentRecord, Store } from "../../store/store.ts";
import type { AuthorizationChecker, AuthorizationOutcome } from "../settler/authorization-state.ts";
import { countFinalState } from "./final-state-metrics.ts";
import { deadlinePassed, jobDeadline, paymentRefused, SETTLE_MARGIN_MS, settleHeld } from "./job-payment.ts";
import type { KeptAnswers } from "./paid-request.ts";
import { RetryBackoff } from "./retry-backoff.ts";
import { onChainReceipt, settlementVerdict } from "./settlement-verdict.ts";
import { SweepLoop } from "./sweep-loop.ts";

/**
 * How often held payments and ready jobs are looked at (a finished in-process job wakes it at once), how many
 * side by side (each may wait for a receipt), and how many are read at most per sweep (the rest: the next).
 */
const [SWEEP_INTERVAL_MS, SWEEP_CONCURRENCY, SWEEP_LIMIT] = [500, 4, 500];

export interface HeldPaymentSettlerOptions {
  store: Store;
  resourceServer: x402ResourceServer;
  metrics: Metrics;
  /** How the ledger keeps answers (the receipt a delivered job's answer carries). */
  answers: KeptAnswers;
  log: Logger;
  /**
   * The token's record of each authorization: what became of a settlement whose answer was lost or that
   * was refused. Required: a held payment is never decided without it (RPC_URL in facilitator mode).
   */
  authorizations: AuthorizationChecker;
  /** How long one settlement may wait for its receipt. */
  settlementTimeoutMs: number;
  /** A settled job payment's settlement with its signed receipt (receiptedSettlement); absent: none. */
  receipted?: (settlement: SettleResponse, record: PaymentRecord) => Promise<SettleResponse>;
  now?: () => number;
}

/** What became of one held payment in one look. */
export type HeldOutcome = "settled" | "failed" | "released" | "waiting" | "open";

/**
 * Settles the payments of jobs when, and only when, their result is ready (docs/jobs.md). Run by every
 * API instance; it looks at the held payments that need it (store.heldPaymentsToDecide) and every ready job:
 * job ready → verify again and settle (refused or unknown → retried with backoff; the token decides the
 * end: paid → settled, spent elsewhere → `payment_failed`, unused after validBefore + 30 s → released);
 * job failed → released, nothing ever sent; job queued or running at its deadline → failed
 * `deadline_passed`, released; job awaiting payment under a held payment (a crash between writes) → queued.
 * Every final write is a compare-and-set under the payment's lease: two instances never decide the same
 * payment, and a crash anywhere is picked up by the next look.
 */
export class HeldPaymentSettler {
  private readonly now: () => number;
  private readonly loop: SweepLoop;
  /** Payments whose settlement was refused or unknown: not tried again at once. */
  private readonly backoff: RetryBackoff;

  constructor(private readonly options: HeldPaymentSettlerOptions) {
    this.now = options.now ?? Date.now;
    this.backoff = new RetryBackoff(this.now);
    this.loop = new SweepLoop(() => this.sweep(), SWEEP_INTERVAL_MS, options.log, "held payment sweep");
  }

  start(): void {
    this.loop.start();
  }

  /** Stops looking; resolves once a look in progress has ended. */
  stop(): Promise<void> {
    return this.loop.stop();
  }

  /** Looks now (a job just finished); a look already running is followed by one more. */
  wake(): void {
    this.loop.wake();
  }

  /** One look at the held payments that need it and every ready job, a few at a time. */
  async sweep(): Promise<void> {
    const { store } = this.options;
    // Not read: held payments whose job waits or runs before its deadline (validBefore ≤ this: deadline reached).
    const deadlineAt = (this.now() + 2 * this.options.settlementTimeoutMs + SETTLE_MARGIN_MS) / 1000;
    const expiringBefore = Math.floor(deadlineAt) + 1;
    const [held, ready] = await Promise.all([
      store.heldPaymentsToDecide({ expiringBefore, limit: SWEEP_LIMIT }),
      store.jobs.readyJobs(),
    ]);
    const queue = [...new Set([...held, ...ready.flatMap((job) => job.paymentKey ?? [])])];
    const lane = async () => {
      for (let key = queue.shift(); key !== undefined && !this.loop.isStopped; key = queue.shift()) {
        await this.reconcile(key).catch((error) =>
          this.options.log.warn({ err: error, paymentKey: key }, "could not settle a held payment"),
        );
      }
    };
    await Promise.all(Array.from({ length: SWEEP_CONCURRENCY }, lane));
  }

  /** Brings one held payment and its job one step closer to agreeing; returns what happened. */
  async reconcile(paymentKey: string): Promise<HeldOutcome> {
    const { store } = this.options;
    const [record, job] = await Promise.all([
      store.getPayment(paymentKey),
      store.jobs.getByPayment(paymentKey),
    ]);
    if (!record) return "waiting";
    if (record.state !== "held") {
      // The ledger is final and the job not yet told (a crash between the two writes).
      if (job?.state === "ready") {
        if (record.state === "settled") await store.jobs.deliver(job.id);
        else await store.jobs.withhold(job.id, paymentRefused(record.error ?? "the payment was not settled"));
      }
      return "waiting";
    }
    if (job?.state === "awaiting_payment") {
      await store.jobs.markPaid(job.id);
      return "waiting";
    }
    if (
      (job?.state === "queued" || job?.state === "running") &&
      this.now() < jobDeadline(record, this.options.settlementTimeoutMs)
    ) {
      return "waiting";
    }
    if (this.backoff.waiting(paymentKey)) return "waiting";
    // Every final write below happens under the payment's lease: one instance at a time decides.
    const lease = this.now() + 2 * this.options.settlementTimeoutMs + SETTLE_MARGIN_MS;
    if (!(await store.takeOverPayment(paymentKey, this.now(), lease))) return "waiting";
    try {
      return await this.decide(record, job, lease);
    } catch (error) {
      await store.releaseLease(paymentKey, lease).catch(() => undefined);
      throw error;
    }
  }

  /** Holding the lease: release, expire or settle, from what the job says. */
  private async decide(record: PaymentRecord, job: Job | undefined, lease: number): Promise<HeldOutcome> {
    const { store } = this.options;
    if (!job) return this.release(record, lease, "the payment's job is missing");
    switch (job.state) {
      case "awaiting_payment":
        await store.jobs.markPaid(job.id);
        return this.keepOpen(record, lease);
      case "queued":
      case "running":
        // expire() is a compare-and-set: a worker that completed the job meanwhile wins, and it is settled next.
        if (!(await store.jobs.expire(job.id, deadlinePassed(record)))) return this.keepOpen(record, lease);
        return this.release(record, lease, `the job did not finish before its deadline (${job.state})`);
      case "failed":
        return this.release(record, lease, `the job failed: ${job.error?.code ?? "unknown"}`);
      case "ready":
      case "succeeded":
        return this.settle(record, job, lease);
    }
  }

  /** Nothing was ever sent for this payment (its job never reached ready): released, charged nothing. */
  private async release(record: PaymentRecord, lease: number, why: string): Promise<HeldOutcome> {
    return (await this.complete(record, { state: "released", error: why, lease })) ? "released" : "waiting";
  }

  /**
   * The job's result is ready: verify again (the payer's balance may have moved since acceptance; a
   * transfer that would revert is never sent), settle, and show the result. A refusal is not final
   * while the authorization is valid: it is tried again with backoff (funds may come back, a node may
   * recover). Only the token decides the end: paid → settled; used otherwise → failed; unused once
   * validBefore (plus clock skew) has passed → released, nothing charged.
   */
  private async settle(record: PaymentRecord, job: Job, lease: number): Promise<HeldOutcome> {
    const { resourceServer, log } = this.options;
    const held = record.held;
    if (!held) {
      log.error({ paymentKey: record.paymentKey }, "a held payment has no authorization kept");
      await this.options.store.jobs.withhold(
        job.id,
        paymentRefused("the payment's authorization was not kept"),
      );
      return (await this.complete(record, { state: "failed", error: "authorization not kept", lease }))
        ? "failed"
        : "waiting";
    }
    let refusal: string | undefined;
    if (this.now() / 1000 < record.validBefore) {
      const attempt = await settleHeld(resourceServer, held, (error) =>
        log.warn({ err: error, paymentKey: record.paymentKey }, "held payment: settlement outcome unknown"),
      );
      if ("transaction" in attempt) return this.settled(record, job, attempt.transaction);
      refusal = attempt.refusal;
    }
    // Refused, pending or unknown: the token says what became of the authorization.
    let onChain: AuthorizationOutcome;
    try {
      onChain = await this.options.authorizations.check({
        asset: held.requirements.asset as `0x${string}`,
        payer: record.payer as `0x${string}`,
        nonce: record.nonce as `0x${string}`,
        payTo: held.requirements.payTo as `0x${string}`,
        amount: BigInt(held.requirements.amount),
      });
    } catch (error) {
      log.warn(
        { err: error, paymentKey: record.paymentKey },
        "held payment: the chain cannot tell its state",
      );
      return this.retryLater(record, lease);
    }
    const verdict = settlementVerdict({ onChain, nowMs: this.now(), validBefore: record.validBefore });
    switch (verdict.verdict) {
      case "settled":
        return this.settled(record, job, verdict.transaction);
      case "failed":
        return this.refused(
          record,
          job,
          lease,
          "the payment authorization was cancelled or spent on another transfer",
        );
      case "released": {
        const why = refusal ? ` (${refusal})` : "";
        await this.options.store.jobs.withhold(job.id, {
          code: "payment_expired",
          message: `the payment could not be settled before it expired${why}; nothing was charged and the result is withheld`,
        });
        const released = await this.complete(record, {
          state: "released",
          error: `expired unsettled${refusal ? `: ${refusal}` : ""}`,
          lease,
        });
        return released ? "released" : "waiting";
      }
      case "keep-open":
        if (refusal)
          log.warn({ paymentKey: record.paymentKey, refusal }, "held payment refused for now: trying again");
        return this.retryLater(record, lease);
    }
  }

  private async settled(record: PaymentRecord, job: Job, transaction: string): Promise<HeldOutcome> {
    const { store, log } = this.options;
    const plain = onChainReceipt(record, transaction);
    const receipt = this.options.receipted ? await this.options.receipted(plain, record) : plain;
    const outcome = record.outcome ? this.options.answers.withReceipt(record.outcome, receipt) : undefined;
    // Ledger first, then the result is shown: a crash in between is finished by the next look.
    await this.complete(record, { state: "settled", txHash: transaction }, outcome);
    if (!(await store.jobs.deliver(job.id)) && job.state !== "succeeded") {
      log.error(
        { paymentKey: record.paymentKey, job: job.id },
        "settled, but the job's result could not be shown",
      );
    }
    log.info(
      { paymentKey: record.paymentKey, job: job.id, transaction },
      "job delivered, its held payment settled",
    );
    return "settled";
  }

  private async refused(
    record: PaymentRecord,
    job: Job,
    lease: number,
    reason: string,
  ): Promise<HeldOutcome> {
    this.options.log.warn(
      { paymentKey: record.paymentKey, job: job.id, reason },
      "held payment refused: result withheld",
    );
    // Lost the lease meanwhile: whoever holds it decides the job too.
    if (!(await this.complete(record, { state: "failed", error: reason, lease }))) return "waiting";
    await this.options.store.jobs.withhold(job.id, paymentRefused(reason));
    return "failed";
  }

  /** Lets the lease go (only this one: a later owner keeps its own) until the next look. */
  private keepOpen = (record: PaymentRecord, lease: number): Promise<HeldOutcome> =>
    this.options.store.releaseLease(record.paymentKey, lease).then(() => "open");

  /** As keepOpen, and this payment is not tried again before a backoff (2 s, doubling up to a minute). */
  private async retryLater(record: PaymentRecord, lease: number): Promise<HeldOutcome> {
    this.backoff.postpone(record.paymentKey);
    return this.keepOpen(record, lease);
  }

  private async complete(
    record: PaymentRecord,
    completion: Omit<PaymentCompletion, "outcome">,
    outcome = record.outcome,
  ): Promise<boolean> {
    const completed = await this.options.store.completePayment(record.paymentKey, {
      ...completion,
      outcome: outcome ?? { status: 202, headers: {}, body: "" },
    });
    if (completed)
      countFinalState(this.options.metrics, completion.state, { ...record, door: record.held?.door });
    this.backoff.forget(record.paymentKey);
    return completed;
  }
}
