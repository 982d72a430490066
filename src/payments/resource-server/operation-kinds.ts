import type { OperationKind } from "../../catalog/operation.ts";
import type {
  NewPayment,
  PaymentRecord,
  PaymentState,
  Reservation,
  StoredOutcome,
} from "../../store/store.ts";
import { reserveHeld } from "./held-admission.ts";
import { SETTLE_MARGIN_MS } from "./job-payment.ts";
import type { KindServices } from "./kind-services.ts";
import { type PaidRequest, type PaymentContext, paymentsUnavailable } from "./paid-request.ts";
import { type PaymentIdentity, sha256 } from "./payment-identity.ts";

/** A held payment must leave a job at least this long to run (beyond the time to settle it). */
const MIN_JOB_WINDOW_SECONDS = 120;
/** How far a client's clock may run ahead of ours when it signs validBefore = now + maxTimeoutSeconds. */
const CLOCK_SKEW_SECONDS = 300;

/**
 * How one kind of operation (sync, async, product) is paid: the gate is given one of these per kind
 * and never asks which kind it serves.
 */
export interface PaymentKind {
  /** The payment is held while a job runs and settled only when it delivers (HeldPaymentSettler). */
  holdsPayment: boolean;
  /** Refuses, before verification, a payment this kind cannot take. */
  admit(identity: PaymentIdentity, request: PaidRequest, services: KindServices): Promise<void>;
  /** Reserves a verified payment in the ledger (throws a Problem or RetryLater if this kind refuses it now). */
  reserve(
    payment: NewPayment,
    identity: PaymentIdentity,
    request: PaidRequest,
    services: KindServices,
  ): Promise<Reservation>;
  /** The operation's answer as the ledger keeps it. */
  keep(answer: StoredOutcome, request: PaidRequest): StoredOutcome;
  /** Once the answer is kept: settle now, or hold. Undefined: another attempt owns the payment now. */
  conclude(
    identity: PaymentIdentity,
    context: PaymentContext,
    answer: StoredOutcome,
    resumed: boolean,
    services: KindServices,
  ): Promise<StoredOutcome | undefined>;
  /** A payment left "verified" by an owner that stopped: decided without the client. */
  recover(record: PaymentRecord, context: PaymentContext, services: KindServices): Promise<StoredOutcome>;
  /** A final payment in this state is a sold download: resumable for longer, behind its token. */
  soldDownload(state: PaymentState): boolean;
  /** What a repeat of this payment hears once its outcome is no longer replayed (409). */
  expiredReplay: string;
}

/** Settled as soon as the answer is kept; an unfinished one is decided from the token. */
const settledNow: PaymentKind = {
  holdsPayment: false,
  admit: async () => {},
  reserve: (payment, _identity, _request, { store }) => store.reservePayment(payment),
  keep: (answer) => answer,
  conclude: (identity, context, answer, resumed, { settlement }) =>
    settlement.settleNow(identity, context, answer, resumed),
  recover: (record, context, { settlement }) => settlement.resolve(record, context, record.pendingOutcome),
  soldDownload: () => false,
  expiredReplay: "this payment was already used and its outcome is no longer served; sign a new payment",
};

/** A download: settled now, its answer bound to its first caller, resumable once sold. */
const download: PaymentKind = {
  ...settledNow,
  expiredReplay:
    "this download's payment was already used and is no longer replayed (it is public on chain): do not pay " +
    "again; sign in with the paying wallet instead (a SIGN-IN-WITH-X header on the same GET, x402 " +
    "sign-in-with-x) to download the product again without paying",
  keep: (answer, request) => (request.client ? { ...answer, firstCaller: sha256(request.client) } : answer),
  soldDownload: (state) => state === "settled",
};

/**
 * A job: its payment is held, not settled, when the job is accepted: it is settled only once the job
 * has delivered its result (HeldPaymentSettler), so a job that fails costs nothing.
 */
const heldForJob: PaymentKind = {
  holdsPayment: true,
  async admit(identity, request, services) {
    checkHoldWindow(identity, request, services);
  },
  reserve: reserveHeld,
  keep: (answer) => answer,
  conclude: (identity, context, answer, _resumed, services) => hold(identity, context, answer, services),
  async recover(record, context, { settlement }) {
    // A job's payment is never sent before it is held: one left "verified" is released at once.
    const released = settlement.rejected(
      context,
      "payment_released",
      "the service stopped before the job was accepted; nothing was charged; sign a new payment",
    );
    return settlement.finish(record, context, "released", released.toResponse(context.operation.path), {
      error: "the service stopped before the job was accepted",
    });
  },
  soldDownload: () => false,
  expiredReplay:
    "this payment's job was accepted and has ended: do not pay again; its 202 (jobId, Location) is replayed " +
    "while the payment is held and for two minutes after it was released, never once it was settled, because a " +
    "settled payment is public on chain, so a replay of it proves nothing; the job's result is at " +
    "GET /v1/jobs/{jobId} of that 202, and a lost jobId is recovered by signing in with the paying wallet: " +
    "GET /v1/jobs with a SIGN-IN-WITH-X header (x402 sign-in-with-x) lists that wallet's jobs",
};

export const PAYMENT_KINDS: Readonly<Record<OperationKind, PaymentKind>> = {
  sync: settledNow,
  async: heldForJob,
  product: download,
};

/** Whether operations of this kind hold their payment until their job delivers. */
export const holdsPayment = (operation: { kind: OperationKind }) =>
  PAYMENT_KINDS[operation.kind].holdsPayment;

/**
 * An accepted job: its payment is held, unsettled, with the answer (the 202) as its outcome, and the
 * job queued. HeldPaymentSettler settles it when the job delivers, or releases it when it does not.
 */
async function hold(
  identity: PaymentIdentity,
  context: PaymentContext,
  answer: StoredOutcome,
  { store, metrics }: KindServices,
): Promise<StoredOutcome> {
  const held = await store.holdPayment(identity.paymentKey, {
    outcome: answer,
    held: { payload: identity.payload, requirements: identity.requirements, door: context.door },
  });
  if (!held) {
    // Another attempt (one that outlived its lease) moved the payment on first: its outcome stands.
    const record = await store.getPayment(identity.paymentKey);
    if (record?.outcome) return record.outcome;
    throw paymentsUnavailable("the payment is being processed by another request; retry the same request");
  }
  metrics.paymentState(context.operation.id, "held");
  context.log.info(
    { validBefore: identity.authorization.validBefore },
    "payment held until the job delivers",
  );
  // The ledger says held first: a crash here, or a store error now, leaves the job awaiting payment, and
  // the settler or the workers' maintenance queues it from the ledger. The answer stands either way.
  await context
    .onFinal?.(identity.paymentKey, "held")
    .catch((error) =>
      context.log.error({ err: error }, "held, but the job could not be queued now: the settler queues it"),
    );
  return answer;
}

/**
 * A held payment must outlive the job: an authorization that expires too soon is refused before any
 * work; one valid far longer than the terms ask (it would keep a queued job's payment held for as long)
 * is refused too.
 */
function checkHoldWindow(identity: PaymentIdentity, request: PaidRequest, services: KindServices): void {
  const { maxTimeoutSeconds } = request.terms.requirements;
  const left = Number(identity.authorization.validBefore) - services.now() / 1000;
  if (left > maxTimeoutSeconds + CLOCK_SKEW_SECONDS) {
    throw services.settlement.rejected(
      request,
      "authorization_too_long",
      `this job's payment may be held at most ${maxTimeoutSeconds} s (maxTimeoutSeconds): sign validBefore within that`,
    );
  }
  const needed = MIN_JOB_WINDOW_SECONDS + (2 * services.settlementTimeoutMs + SETTLE_MARGIN_MS) / 1000;
  if (left < needed) {
    throw services.settlement.rejected(
      request,
      "authorization_too_short",
      `this job's payment is settled only when its result is ready: sign an authorization valid for at least ${Math.ceil(needed)} s (validBefore), as maxTimeoutSeconds says`,
    );
  }
}
