import { decodePaymentResponseHeader } from "@x402/core/http";
import { OFFER_RECEIPT } from "@x402/extensions/offer-receipt";
import { PAYMENT_RESPONSE_HEADER } from "../payments/headers.ts";
import type { PaymentRecord } from "../store/store.ts";
import type { Job, JobState } from "./queue.ts";

/** Seconds a client should wait between polls of a job that is not finished. */
export const POLL_AFTER_SECONDS = 2;

/** What the client sees of a state: a result waiting for its payment to settle is still "running". */
const shownState = (state: JobState) => (state === "ready" ? "running" : state);

const PAYMENT_NOTES: Record<PaymentRecord["state"], string> = {
  verified: "the payment is being verified; nothing has been charged",
  held: "the payment is authorized but not settled: it is settled only when the result is ready, and never if the job fails or passes its deadline",
  settled: "the payment was settled when the result was ready",
  released: "nothing was charged: the job did not deliver, and the authorization was never settled",
  failed: "the payment could not be settled; nothing was charged and the result is withheld",
};

/**
 * A job as GET /v1/jobs/{id} shows it: no input, no worker names, and no payer beyond the signed receipt
 * of a settled payment (which names what its transaction shows on chain anyway). A paid job also shows
 * what became of its payment (held → settled when the result is ready, or released) and, while it is not
 * finished, `expiresAt`: the deadline after which it is given up and its payment released.
 */
export function jobView(job: Job, payment?: { record: PaymentRecord; deadline: number }) {
  const finished = job.state === "succeeded" || job.state === "failed";
  return {
    id: job.id,
    type: job.type,
    status: shownState(job.state),
    createdAt: job.createdAt,
    ...(job.startedAt ? { startedAt: job.startedAt } : {}),
    ...(job.finishedAt ? { finishedAt: job.finishedAt } : {}),
    ...(job.progress ? { progress: job.progress } : {}),
    ...(job.state === "succeeded" ? { result: job.result } : {}),
    ...(job.error ? { error: job.error } : {}),
    ...(payment && !finished ? { expiresAt: new Date(payment.deadline).toISOString() } : {}),
    ...(payment ? { payment: paymentView(payment.record) } : {}),
  };
}

function paymentView(record: PaymentRecord) {
  return {
    state: record.state,
    amount: record.amount,
    asset: record.asset,
    network: record.network,
    ...(record.state === "settled" ? { settledAt: record.updatedAt } : {}),
    ...(record.txHash ? { transaction: record.txHash } : {}),
    ...signedReceiptOf(record),
    note: PAYMENT_NOTES[record.state],
  };
}

/**
 * The receipt the service signed when it settled the job's payment (the x402 offer-receipt extension, as
 * the settlement kept with the job's answer carries it), for the payer to verify and keep.
 */
function signedReceiptOf(record: PaymentRecord): { receipt?: unknown } {
  const header = record.state === "settled" ? record.outcome?.headers[PAYMENT_RESPONSE_HEADER] : undefined;
  if (header === undefined) return {};
  const receipt = decodePaymentResponseHeader(header).extensions?.[OFFER_RECEIPT] as
    | { info?: { receipt?: unknown } }
    | undefined;
  return receipt?.info?.receipt ? { receipt: receipt.info.receipt } : {};
}
