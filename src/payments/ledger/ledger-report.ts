import type { FailedPaidJob } from "../../jobs/queue.ts";
import type { PaymentCounts, RevenueRow, SettlementTransactionRecord } from "../../store/store.ts";

/** Atomic USDC units (6 decimals) as a decimal amount. */
export const usd = (atomic: bigint) => {
  const whole = atomic / 1_000_000n;
  const fraction = (atomic % 1_000_000n).toString().padStart(6, "0");
  return `${whole}.${fraction}`;
};

/** Revenue from settled payments, by operation and by day, as a plain-text table. */
export function formatRevenueReport(rows: RevenueRow[]): string {
  if (rows.length === 0) return "No settled payments yet.\n";
  const table = [["day", "operation", "payments", "revenue (USDC)"]];
  const byOperation = new Map<string, { payments: number; atomic: bigint }>();
  let total = 0n;
  let payments = 0;
  for (const row of rows) {
    table.push([row.day, row.operationId, String(row.payments), usd(BigInt(row.atomicAmount))]);
    const sum = byOperation.get(row.operationId) ?? { payments: 0, atomic: 0n };
    byOperation.set(row.operationId, {
      payments: sum.payments + row.payments,
      atomic: sum.atomic + BigInt(row.atomicAmount),
    });
    total += BigInt(row.atomicAmount);
    payments += row.payments;
  }
  const operations = [["operation", "payments", "revenue (USDC)"]];
  for (const [operationId, sum] of [...byOperation].sort(([a], [b]) => a.localeCompare(b))) {
    operations.push([operationId, String(sum.payments), usd(sum.atomic)]);
  }
  operations.push(["total", String(payments), usd(total)]);
  return `Revenue by day and operation\n${render(table)}\nRevenue by operation\n${render(operations)}`;
}

/**
 * How many payments are in each state, by operation: `held` are jobs' authorizations not settled yet
 * (settled when the result is ready), `released` were never charged (the work did not deliver).
 */
export function formatPaymentStates(counts: PaymentCounts[]): string {
  if (counts.length === 0) return "";
  const table = [["operation", "state", "payments"]];
  const sorted = [...counts].sort(
    (a, b) => a.operationId.localeCompare(b.operationId) || a.state.localeCompare(b.state),
  );
  for (const row of sorted) table.push([row.operationId, row.state, String(row.count)]);
  return `\nPayments by state\n${render(table)}`;
}

/**
 * Jobs that were paid (settled) and then failed: an on-chain payment cannot be undone by the
 * service, so the operator decides per row (see the README: a refund is a new transfer).
 */
export function formatFailedPaidJobs(jobs: FailedPaidJob[]): string {
  if (jobs.length === 0) return "";
  const table = [["finished", "job", "payer", "paid (USDC)", "transaction", "error"]];
  for (const job of jobs) {
    table.push([
      job.finishedAt ?? "",
      job.jobId,
      job.payer,
      usd(BigInt(job.amount)),
      job.txHash ?? "",
      job.error ? `${job.error.code}: ${job.error.message}` : "",
    ]);
  }
  return `\nPaid jobs that failed (no result delivered)\n${render(table)}`;
}

/**
 * Payments the ledger records `settled` whose transaction the chain lost for good (reverted, or lost
 * after every re-send): the revenue report counts them, the chain does not. The operator decides per
 * row (ask the payer to pay again, or write it off); see docs/operations.md.
 */
export function formatUnbackedSettlements(transactions: SettlementTransactionRecord[]): string {
  const unbacked = transactions.filter(
    (tx) => tx.paymentState === "settled" && (tx.state === "reverted" || tx.state === "lost"),
  );
  if (unbacked.length === 0) return "";
  const table = [["updated", "operation", "amount (USDC)", "transaction", "chain says", "payment"]];
  let total = 0n;
  for (const tx of unbacked) {
    const amount = BigInt(tx.amount ?? "0");
    total += amount;
    table.push([tx.updatedAt, tx.operationId ?? "", usd(amount), tx.txHash, tx.state, tx.paymentKey ?? ""]);
  }
  return `\nSettled payments not backed by a transfer (the chain lost their transaction): ${usd(total)} USDC\n${render(table)}`;
}

/** Text columns left-aligned, numeric columns right-aligned. */
export function render(rows: string[][]): string {
  const widths =
    rows[0]?.map((_, column) => Math.max(...rows.map((row) => (row[column] ?? "").length))) ?? [];
  const numeric = widths.map((_, column) => rows.slice(1).every((row) => /^[\d.]+$/.test(row[column] ?? "")));
  const line = (row: string[]) =>
    row
      .map((cell, column) =>
        numeric[column] ? cell.padStart(widths[column] ?? 0) : cell.padEnd(widths[column] ?? 0),
      )
      .join("  ")
      .trimEnd();
  return `${rows.map(line).join("\n")}\n`;
}
