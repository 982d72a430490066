// The receipts ledger: one JSON object per line (JSONL), append-only, never edited in place.
//
// A payment is a record with an `id`; each change of its state appends a line with the same id
// (reserved → signed → settled | failed | expired; reserved → released when nothing was signed).
// foldLedger() merges the lines of each id into one record. Lines without an id (ledgers written
// by hand, or by version 1 of this kit) are records of their own.
import fs from "node:fs";

export const LEDGER_FIELDS = [
  "at",
  "id",
  "state",
  "url",
  "network",
  "asset",
  "amount",
  "payTo",
  "payer",
  "nonce",
  "validBefore",
  "expiresAt",
  "transaction",
  "status",
  "reason",
];

/** What each state means for the limits. */
export const STATES = {
  reserved: "approved by the policy, about to be signed; counts until `expiresAt`",
  signed: "signed and sent (nonce, validBefore kept); counts until `validBefore` unless settled",
  settled: "the seller's receipt names a transaction; counts for good",
  failed: "the seller said it did not settle; the signature can still be used, so it counts until `validBefore`",
  expired: "signed or reserved, no receipt, and `validBefore` has passed: can no longer move money",
  released: "reserved but never signed (the signing failed or was refused)",
  refunded: "paid back (recorded by hand)",
};

export function readLedger(file) {
  if (!fs.existsSync(file)) return [];
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

/** Appends one line (one write call, O_APPEND); fields outside LEDGER_FIELDS are dropped. */
export function appendEntry(file, entry) {
  const line = Object.fromEntries(LEDGER_FIELDS.filter((f) => entry[f] !== undefined || f === "at").map((f) => [f, entry[f] ?? null]));
  fs.appendFileSync(file, `${JSON.stringify(line)}\n`);
}

/** One record per payment: the lines of an id merged in order (`at` is the first line's, `updatedAt` the last's). */
export function foldLedger(entries) {
  const records = new Map();
  entries.forEach((entry, index) => {
    const key = entry.id ?? `#line${index + 1}`;
    const record = records.get(key);
    if (!record) {
      records.set(key, { ...entry, line: index + 1, lines: [index + 1], updatedAt: entry.at });
      return;
    }
    for (const [field, value] of Object.entries(entry)) if (field !== "at" && value !== null && value !== undefined) record[field] = value;
    record.updatedAt = entry.at;
    record.lines.push(index + 1);
  });
  return [...records.values()];
}

const afterSeconds = (now, seconds) => now.getTime() >= Number(seconds) * 1000;

/** Whether a (folded) record counts against today's limits at `now`. Unknown states count. */
export function counts(record, now = new Date()) {
  switch (record.state) {
    case "settled":
      return true;
    case "released":
    case "expired":
    case "refunded":
      return false;
    case "reserved":
      return !record.expiresAt || now.getTime() < Date.parse(record.expiresAt);
    case "signed":
      return record.validBefore === null || record.validBefore === undefined || !afterSeconds(now, record.validBefore);
    case "failed":
      // Ledgers of version 1 wrote "failed" without a validBefore: not charged, not counted.
      return record.validBefore !== null && record.validBefore !== undefined && !afterSeconds(now, record.validBefore);
    default:
      return true;
  }
}

/** Records still "reserved" or "signed" whose expiry has passed: the guard appends an "expired" line for each. */
export function newlyExpired(records, now = new Date()) {
  return records.filter((r) => r.id && (r.state === "reserved" || r.state === "signed") && !counts(r, now));
}

/** Signed authorizations that could still move money (no receipt, validBefore not passed): cancel them after a key leak. */
export function openAuthorizations(entries, now = new Date()) {
  return foldLedger(entries)
    .filter((r) => (r.state === "signed" || r.state === "failed") && r.nonce && counts(r, now))
    .map(({ id, url, network, asset, amount, payTo, payer, nonce, validBefore, state }) => ({ id, state, url, network, asset, amount, payTo, payer, nonce, validBefore }));
}

const KNOWN = new Set(Object.keys(STATES));

/** Problems a ledger should never have: missing fields, a transaction or nonce used twice, bad amounts, unknown states. */
export function auditLedger(entries) {
  const problems = [];
  entries.forEach((entry, index) => {
    if (!entry.id) {
      for (const field of ["at", "network", "asset", "amount", "payTo", "state"]) {
        if (entry[field] === undefined || entry[field] === null) problems.push(`line ${index + 1}: ${field} is missing`);
      }
    } else if (!entry.at || !entry.state) problems.push(`line ${index + 1}: at and state are required`);
    if (entry.amount !== undefined && entry.amount !== null && !/^\d+$/.test(String(entry.amount))) problems.push(`line ${index + 1}: amount is not atomic units`);
    if (entry.state && !KNOWN.has(entry.state)) problems.push(`line ${index + 1}: unknown state "${entry.state}"`);
  });
  const seenTx = new Map();
  const seenNonce = new Map();
  for (const record of foldLedger(entries)) {
    const where = `line ${record.lines.at(-1)}`;
    if (record.state === "settled" && !record.transaction) problems.push(`${where}: settled without a transaction`);
    if (record.id && ["signed", "settled", "failed"].includes(record.state) && !record.nonce) problems.push(`${where}: ${record.state} without the signed nonce`);
    if (record.id && record.nonce && !record.validBefore) problems.push(`${where}: nonce ${record.nonce} without validBefore`);
    if (record.transaction) {
      if (seenTx.has(record.transaction)) problems.push(`${where}: transaction ${record.transaction} already on line ${seenTx.get(record.transaction)}`);
      else seenTx.set(record.transaction, record.lines.at(-1));
    }
    if (record.nonce) {
      const key = `${String(record.payer ?? "").toLowerCase()} ${String(record.nonce).toLowerCase()}`;
      if (seenNonce.has(key)) problems.push(`${where}: nonce ${record.nonce} already on line ${seenNonce.get(key)}`);
      else seenNonce.set(key, record.lines.at(-1));
    }
  }
  return problems;
}

/** Settled spend by day and payee, in atomic units. */
export function summarise(entries) {
  const totals = {};
  for (const record of foldLedger(entries)) {
    if (record.state !== "settled") continue;
    const key = `${String(record.at).slice(0, 10)} ${record.payTo}`;
    totals[key] = (BigInt(totals[key] ?? 0) + BigInt(record.amount)).toString();
  }
  return totals;
}
