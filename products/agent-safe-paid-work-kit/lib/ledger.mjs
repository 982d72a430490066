// The receipts ledger: one JSON object per line (JSONL), append-only.
import fs from "node:fs";

export const LEDGER_FIELDS = ["at", "url", "network", "asset", "amount", "payTo", "transaction", "state", "status"];

export function readLedger(file) {
  return fs
    .readFileSync(file, "utf8")
    .split("\n")
    .filter((line) => line.trim() !== "")
    .map((line, index) => {
      try {
        return JSON.parse(line);
      } catch {
        throw new Error(`${file}:${index + 1}: not JSON`);
      }
    });
}

export function appendEntry(file, entry) {
  fs.appendFileSync(file, `${JSON.stringify(Object.fromEntries(LEDGER_FIELDS.map((f) => [f, entry[f] ?? null])))}\n`);
}

/** Problems a ledger should never have: missing fields, a transaction counted twice, bad amounts. */
export function auditLedger(entries) {
  const problems = [];
  const seen = new Map();
  entries.forEach((entry, index) => {
    for (const field of ["at", "network", "asset", "amount", "payTo", "state"]) {
      if (entry[field] === undefined || entry[field] === null) problems.push(`line ${index + 1}: ${field} is missing`);
    }
    if (entry.amount !== undefined && !/^\d+$/.test(String(entry.amount))) problems.push(`line ${index + 1}: amount is not atomic units`);
    if (entry.state === "settled" && !entry.transaction) problems.push(`line ${index + 1}: settled without a transaction`);
    if (entry.transaction) {
      if (seen.has(entry.transaction)) problems.push(`line ${index + 1}: transaction ${entry.transaction} already on line ${seen.get(entry.transaction)}`);
      else seen.set(entry.transaction, index + 1);
    }
  });
  return problems;
}

/** Settled spend by day and payee, in atomic units. */
export function summarise(entries) {
  const totals = {};
  for (const entry of entries) {
    if (entry.state !== "settled") continue;
    const key = `${String(entry.at).slice(0, 10)} ${entry.payTo}`;
    totals[key] = (BigInt(totals[key] ?? 0) + BigInt(entry.amount)).toString();
  }
  return totals;
}
