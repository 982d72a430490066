import type { Metrics } from "../../metrics.ts";
import type { PaymentCompletion, PaymentRecord } from "../../store/store.ts";

/**
 * What a payment reaching its final state counts in /metrics, whoever got it there (the gate, or the
 * held settler on a job's delivery): its state, and for a settled one its revenue by door and the
 * latency since it was accepted.
 */
export function countFinalState(
  metrics: Metrics,
  state: PaymentCompletion["state"],
  payment: Pick<PaymentRecord, "operationId" | "amount" | "createdAt"> & { door?: string },
): void {
  metrics.paymentState(payment.operationId, state);
  if (state !== "settled") return;
  metrics.paymentSettled({
    operation: payment.operationId,
    door: payment.door,
    amount: payment.amount,
    acceptedAt: payment.createdAt,
  });
}
