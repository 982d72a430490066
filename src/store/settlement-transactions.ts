import type { SettlementTransactionRecord } from "./store.ts";

/** A settlement_transactions row (joined with its payment) as the store returns it. */
export function settlementTransactionRecord(row: Record<string, unknown>): SettlementTransactionRecord {
  const updated = row.updated_at;
  return {
    txHash: String(row.tx_hash),
    account: String(row.account),
    nonce: Number(row.nonce),
    kind: row.kind as SettlementTransactionRecord["kind"],
    state: row.state as SettlementTransactionRecord["state"],
    resent: Number(row.resent),
    detail: (row.detail as string | null) ?? null,
    updatedAt: updated instanceof Date ? updated.toISOString() : String(updated),
    paymentKey: (row.payment_key as string | null) ?? null,
    paymentState: (row.payment_state as SettlementTransactionRecord["paymentState"]) ?? null,
    operationId: (row.operation_id as string | null) ?? null,
    amount: row.amount == null ? null : String(row.amount),
  };
}
