import { encodePaymentResponseHeader } from "@x402/core/http";
import type { x402ResourceServer } from "@x402/core/server";
import { SettleError, type SettleResponse } from "@x402/core/types";
import type { Logger } from "pino";
import type { AuthorizationChecker, AuthorizationOutcome } from "../chain/authorization-state.ts";
import type { Job, JobError } from "../jobs/queue.ts";
import type { Metrics } from "../metrics.ts";
import type { PaymentCompletion, PaymentRecord, Store } from "../store/store.ts";

/** How often every held payment and every ready job is looked at (a finished in-process job wakes it at once). */
const SWEEP_INTERVAL_MS = 500;
/** Beyond two settlement waits, the margin a held payment keeps between its job's deadline and its expiry. */
const SETTLE_MARGIN_MS = 30_000;
/** After validBefore (+ clock skew) an unused authorization can no longer land. */
const EXPIRY_MARGIN_SECONDS = 30;
/** The reference facilitator's "broadcast, not confirmed" answer. */
const SETTLEMENT_PENDING = "settlement_pending";

export interface HeldPaymentSettlerOptions {
  store: Store;
  resourceServer: x402ResourceServer;
  metrics: Metrics;
  log: Logger;
  /** Chain access to learn what became of a settlement whose answer was lost; absent without RPC. */
  authorizations?: AuthorizationChecker;
  /** How long one settlement may wait for its receipt. */
  settlementTimeoutMs: number;
  now?: () => number;
}

/** What became of one held payment in one look. */
export type HeldOutcome = "settled" | "failed" | "released" | "waiting" | "open";

/**
 * Settles the payments of jobs when, and only when, their result is ready (docs/jobs.md).
 *
 * A job's payment is held at acceptance: verified, its signed authorization kept, nothing sent. This
 * loop, run by every API instance (each held payment is taken under its lease, so two instances never
 * settle the same one), looks at every held payment and every ready job:
 * - job ready → settle; settled → the result is shown (job succeeded); refused → the job fails with
 *   `payment_failed` and its result is withheld; unknown (RPC lost) → asked again on the next look;
 * - job failed (provider down, no answer, attempts exhausted) → the payment is released: nothing was
 *   ever sent, nothing is charged;
 * - job still queued or running at its deadline (validBefore minus the time to settle) → the job is
 *   failed `deadline_passed` and the payment released;
 * - job awaiting payment under a held payment (a crash between the two writes) → queued.
 * Every step is a compare-and-set in the store, so a crash anywhere is picked up by the next look.
 */
export class HeldPaymentSettler {
  private readonly now: () => number;
  private timer: NodeJS.Timeout | undefined;
  private sweeping: Promise<void> | undefined;
  private again = false;
  private stopped = false;

  constructor(private readonly options: HeldPaymentSettlerOptions) {
    this.now = options.now ?? Date.now;
  }

  start(): void {
    this.timer = setInterval(() => this.wake(), SWEEP_INTERVAL_MS);
    this.timer.unref();
    this.wake();
  }

  /** Stops looking; resolves once a look in progress has ended. */
  async stop(): Promise<void> {
    this.stopped = true;
    if (this.timer) clearInterval(this.timer);
    await this.sweeping;
  }

  /** Looks now (a job just finished); a look already running is followed by one more. */
  wake(): void {
    if (this.stopped) return;
    if (this.sweeping) {
      this.again = true;
      return;
    }
    this.sweeping = (async () => {
      do {
        this.again = false;
        await this.sweep().catch((error) =>
          this.options.log.warn({ err: error }, "held payment sweep failed"),
        );
      } while (this.again && !this.stopped);
      this.sweeping = undefined;
    })();
  }

  /** One look at every held payment and every ready job. */
  async sweep(): Promise<void> {
    const { store } = this.options;
    const [held, ready] = await Promise.all([store.heldPayments(), store.jobs.readyJobs()]);
    const keys = new Set<string>(held.map((record) => record.paymentKey));
    for (const job of ready) if (job.paymentKey) keys.add(job.paymentKey);
    for (const key of keys) {
      if (this.stopped) return;
      await this.reconcile(key).catch((error) =>
        this.options.log.warn({ err: error, paymentKey: key }, "could not settle a held payment"),
      );
    }
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
    if (!job) return this.release(record, "the payment's job is missing");
    switch (job.state) {
      case "awaiting_payment":
        await store.jobs.markPaid(job.id);
        return "waiting";
      case "queued":
      case "running":
        if (this.now() < jobDeadline(record, this.options.settlementTimeoutMs)) return "waiting";
        await store.jobs.expire(job.id, deadlinePassed(record));
        return this.release(record, `the job did not finish before its deadline (${job.state})`);
      case "failed":
        return this.release(record, `the job failed: ${job.error?.code ?? "unknown"}`);
      case "ready":
      case "succeeded":
        return this.settle(record, job);
    }
  }

  /** Nothing was ever sent for this payment: it ends released, charged nothing. */
  private async release(record: PaymentRecord, why: string): Promise<HeldOutcome> {
    return (await this.complete(record, { state: "released", error: why })) ? "released" : "waiting";
  }

  /** The job's result is ready: settle its payment under a lease, then show or withhold the result. */
  private async settle(record: PaymentRecord, job: Job): Promise<HeldOutcome> {
    const { store, resourceServer, log, settlementTimeoutMs } = this.options;
    const leaseUntil = this.now() + 2 * settlementTimeoutMs + SETTLE_MARGIN_MS;
    if (!(await store.takeOverPayment(record.paymentKey, this.now(), leaseUntil))) return "waiting";
    const held = record.held;
    if (!held) {
      log.error({ paymentKey: record.paymentKey }, "a held payment has no authorization kept");
      await store.jobs.withhold(job.id, paymentRefused("the payment's authorization was not kept"));
      return (await this.complete(record, { state: "failed", error: "authorization not kept" }))
        ? "failed"
        : "waiting";
    }
    const expired = this.now() / 1000 >= record.validBefore;
    let settlement: SettleResponse | undefined;
    if (!expired) {
      try {
        settlement = await resourceServer.settlePayment(held.payload, held.requirements);
      } catch (error) {
        if (error instanceof SettleError) settlement = { ...error, success: false } as SettleResponse;
        else
          log.warn({ err: error, paymentKey: record.paymentKey }, "held payment: settlement outcome unknown");
      }
    }
    if (settlement?.success) return this.settled(record, job, settlement.transaction);

    const refusal =
      settlement && settlement.errorReason !== SETTLEMENT_PENDING
        ? (settlement.errorMessage ?? settlement.errorReason ?? "settlement refused").split("\n")[0]
        : undefined;
    // Refused, pending or unknown: the token decides (a transfer may have landed anyway).
    let onChain: AuthorizationOutcome | undefined;
    try {
      onChain = await this.options.authorizations?.check({
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
      return this.keepOpen(record);
    }
    if (onChain?.state === "paid") return this.settled(record, job, onChain.transaction);
    if (onChain?.state === "consumed") {
      return this.refused(
        record,
        job,
        "the payment authorization was cancelled or spent on another transfer",
      );
    }
    if (expired || this.now() / 1000 >= record.validBefore + EXPIRY_MARGIN_SECONDS) {
      if (onChain === undefined && !expired) return this.keepOpen(record);
      await store.jobs.withhold(job.id, {
        code: "payment_expired",
        message:
          "the payment expired before it could be settled; nothing was charged and the result is withheld",
      });
      return (await this.complete(record, { state: "released", error: "expired unsettled" }))
        ? "released"
        : "waiting";
    }
    // Unused on chain (or no chain access) and refused now: the refusal stands.
    if (refusal !== undefined) return this.refused(record, job, refusal);
    return this.keepOpen(record);
  }

  private async settled(record: PaymentRecord, job: Job, transaction: string): Promise<HeldOutcome> {
    const { store, log } = this.options;
    const receipt: SettleResponse = {
      success: true,
      transaction,
      network: record.network as `${string}:${string}`,
      payer: record.payer,
    };
    const outcome = record.outcome
      ? {
          ...record.outcome,
          headers: { ...record.outcome.headers, "PAYMENT-RESPONSE": encodePaymentResponseHeader(receipt) },
        }
      : undefined;
    // Ledger first, then the result is shown: a crash in between is finished by the next look.
    await this.complete(record, { state: "settled", txHash: transaction }, outcome);
    await store.jobs.deliver(job.id);
    log.info(
      { paymentKey: record.paymentKey, job: job.id, transaction },
      "job delivered, its held payment settled",
    );
    return "settled";
  }

  private async refused(record: PaymentRecord, job: Job, reason: string): Promise<HeldOutcome> {
    this.options.log.warn(
      { paymentKey: record.paymentKey, job: job.id, reason },
      "held payment refused: result withheld",
    );
    await this.complete(record, { state: "failed", error: reason });
    await this.options.store.jobs.withhold(job.id, paymentRefused(reason));
    return "failed";
  }

  private async keepOpen(record: PaymentRecord): Promise<HeldOutcome> {
    await this.options.store.releaseLease(record.paymentKey);
    return "open";
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
    if (completed) this.options.metrics.paymentState(record.operationId, completion.state);
    return completed;
  }
}

/** Until when a held payment's job may run: its authorization's expiry less the time to settle it. */
export function jobDeadline(record: Pick<PaymentRecord, "validBefore">, settlementTimeoutMs: number): number {
  return record.validBefore * 1000 - 2 * settlementTimeoutMs - SETTLE_MARGIN_MS;
}

const paymentRefused = (reason: string): JobError => ({
  code: "payment_failed",
  message: `the payment could not be settled (${reason}); the result is withheld`,
});

const deadlinePassed = (record: PaymentRecord): JobError => ({
  code: "deadline_passed",
  message: `the job did not finish before its payment's deadline (validBefore ${new Date(record.validBefore * 1000).toISOString()}); nothing was charged`,
});
