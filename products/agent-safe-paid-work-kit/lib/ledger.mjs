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
  "offerSigner",
  "payer",
  "nonce",
  "validBefore",
  "expiresAt",
  "transaction",
  "status",
  "reason",
  "chainState",
  "block",
];

/** What each state means for the limits. */
export const STATES = {
  reserved: "approved by the policy, about to be signed; counts until `expiresAt` (a signature never left)",
  signed: "signed and sent (nonce, validBefore kept); counts until a receipt settles it or the chain shows it unused after `validBefore`",
  settled: "the seller's receipt names a transaction, or the chain shows the authorization used; counts for good",
  failed: "the seller said it did not settle; the signature can still be used, so it counts like `signed`",
  expired: "reserved and never signed, or signed and the chain shows it unused after `validBefore`: can no longer move money",
  released: "reserved but never signed (the signing failed or was refused)",
  refunded: "paid back (recorded by hand)",
};

/** A ledger that cannot be trusted: the guard refuses to pay until it is repaired. */
export class LedgerError extends Error {}

const ATOMIC = /^\d{1,78}$/;

/** The problem of one parsed line, or undefined. */
function lineProblem(entry) {
  if (entry === null || typeof entry !== "object" || Array.isArray(entry)) return "not a JSON object";
  if (typeof entry.state !== "string" || entry.state === "") return "no state";
  if (typeof entry.at !== "string" || Number.isNaN(Date.parse(entry.at))) return "no valid `at` time";
  if (entry.amount !== undefined && entry.amount !== null && !ATOMIC.test(String(entry.amount))) return `amount ${JSON.stringify(entry.amount)} is not atomic units`;
  for (const field of ["validBefore", "block"]) {
    if (entry[field] !== undefined && entry[field] !== null && !/^\d{1,20}$/.test(String(entry[field]))) return `${field} ${JSON.stringify(entry[field])} is not a whole number`;
  }
  if (entry.expiresAt !== undefined && entry.expiresAt !== null && Number.isNaN(Date.parse(entry.expiresAt))) return "expiresAt is not a time";
  return undefined;
}

/**
 * The ledger's lines, checked. A missing file is an empty ledger. A line that is not a ledger line
 * throws a LedgerError naming the file and the line; the one exception is a last line cut short
 * (no final newline) that does not parse: a crash in the middle of a write, which the guard never
 * let leave the process (it writes before it sends), so it is skipped here and cut off by
 * repairLedger().
 */
export function readLedger(file) {
  let text;
  try {
    text = fs.readFileSync(file, "utf8");
  } catch (error) {
    if (error.code === "ENOENT") return [];
    throw new LedgerError(`${file}: cannot be read (${error.code ?? error.message})`);
  }
  const lines = text.split("\n");
  const cutShort = lines.at(-1) !== "";
  const entries = [];
  lines.forEach((line, index) => {
    if (line.trim() === "") return;
    let entry;
    try {
      entry = JSON.parse(line);
    } catch {
      if (cutShort && index === lines.length - 1) return; // half-written by a crash
      throw new LedgerError(`${file}:${index + 1}: not JSON (the ledger is corrupted; repair it before paying again)`);
    }
    const problem = lineProblem(entry);
    if (problem) throw new LedgerError(`${file}:${index + 1}: ${problem} (the ledger is corrupted; repair it before paying again)`);
    entries.push({ ...entry, line: index + 1 });
  });
  return entries;
}

/**
 * Cuts off a last line left half-written by a crash, so the next line does not join it. Reads only
 * the end of the file (lines are bounded, see appendEntry), not the whole ledger.
 */
export function repairLedger(file) {
  let fd;
  try {
    fd = fs.openSync(file, "r+");
  } catch (error) {
    if (error.code === "ENOENT") return false;
    throw new LedgerError(`${file}: cannot be opened (${error.code ?? error.message})`);
  }
  try {
    const size = fs.fstatSync(fd).size;
    if (size === 0) return false;
    const tail = Buffer.alloc(Math.min(size, 64 * 1024));
    fs.readSync(fd, tail, 0, tail.length, size - tail.length);
    if (tail.at(-1) === 0x0a) return false;
    const newline = tail.lastIndexOf(0x0a);
    if (newline < 0 && tail.length < size) throw new LedgerError(`${file}: its last line is longer than 64 KiB (not a line this kit writes); repair it before paying again`);
    const last = tail.subarray(newline + 1).toString("utf8");
    try {
      JSON.parse(last);
      fs.writeSync(fd, "\n", size); // a complete line without its newline
    } catch {
      fs.ftruncateSync(fd, size - (tail.length - newline - 1));
    }
    return true;
  } finally {
    fs.closeSync(fd);
  }
}

/** The longest string each field keeps (seller-supplied text is cut, with a marker saying how much). */
const FIELD_LIMITS = { url: 2048, reason: 500 };
const FIELD_LIMIT = 200;
function bounded(field, value) {
  const limit = FIELD_LIMITS[field] ?? FIELD_LIMIT;
  if (typeof value !== "string" || value.length <= limit) return value;
  return `${value.slice(0, limit)}…[cut ${value.length - limit} chars]`;
}

/** Appends one line (one write call, O_APPEND); fields outside LEDGER_FIELDS are dropped, strings are bounded. */
export function appendEntry(file, entry) {
  const line = Object.fromEntries(LEDGER_FIELDS.filter((f) => entry[f] !== undefined || f === "at").map((f) => [f, bounded(f, entry[f] ?? null)]));
  fs.appendFileSync(file, `${JSON.stringify(line)}\n`);
}

/** One record per payment: the lines of an id merged in order (`at` is the first line's, `updatedAt` the last's). */
export function foldLedger(entries) {
  const records = new Map();
  entries.forEach((entry, index) => {
    const line = entry.line ?? index + 1;
    const key = entry.id ?? `#line${line}`;
    const record = records.get(key);
    const { line: _, ...fields } = entry;
    if (!record) {
      records.set(key, { ...fields, line, lines: [line], updatedAt: entry.at });
      return;
    }
    for (const [field, value] of Object.entries(fields)) if (field !== "at" && value !== null && value !== undefined) record[field] = value;
    record.updatedAt = entry.at;
    record.lines.push(line);
  });
  return [...records.values()];
}

const hasValue = (value) => value !== null && value !== undefined;
const passed = (now, seconds) => now.getTime() >= Number(seconds) * 1000;

/**
 * Whether a (folded) record counts against the limits at `now`. A signature that has left the
 * process counts until a receipt settles it (then for good) or the chain shows it unused after its
 * validBefore (an `expired` line): the seller's silence or its "failed" proves nothing. Unknown
 * states count.
 */
export function counts(record, now = new Date()) {
  switch (record.state) {
    case "settled":
    case "signed":
      return true;
    case "released":
    case "expired":
    case "refunded":
      return false;
    case "reserved":
      return !record.expiresAt || now.getTime() < Date.parse(record.expiresAt);
    case "failed":
      // Ledgers of version 1 wrote "failed" without an id: nothing was signed by the guard.
      return hasValue(record.id) || hasValue(record.validBefore);
    default:
      return true;
  }
}

/** Reservations whose time passed without a signature: the guard appends an "expired" line for each. */
export function lapsedReservations(records, now = new Date()) {
  return records.filter((r) => r.id && r.state === "reserved" && !counts(r, now));
}

const withoutReceipt = (r) => (r.state === "signed" || r.state === "failed") && hasValue(r.nonce) && hasValue(r.validBefore);
const authorization = ({ id, url, network, asset, amount, payTo, payer, nonce, validBefore, state, reason }) => ({ id, state, url, network, asset, amount, payTo, payer, nonce, validBefore, reason });

/** Signed authorizations that can still move money (no receipt, validBefore not passed): cancel them after a key leak. */
export function openAuthorizations(entries, now = new Date()) {
  return foldLedger(entries)
    .filter((r) => withoutReceipt(r) && !passed(now, r.validBefore))
    .map(authorization);
}

/**
 * Signed authorizations whose validBefore has passed with no receipt and no answer from the chain:
 * whether the seller used them is unknown, so they still count. The guard (or `scripts/ledger.mjs
 * --policy`) asks the chain about them when the policy names an RPC for their network.
 */
export function unknownAuthorizations(entries, now = new Date()) {
  return foldLedger(entries)
    .filter((r) => withoutReceipt(r) && passed(now, r.validBefore))
    .map(authorization);
}

/**
 * The records that count against the limits, each checked to carry what counting needs (its
 * amount): a record without them (a ledger cut at the front, or replaced mid-flight) is a refusal
 * naming its line, never a guess.
 */
export function countedRecords(file, records, now = new Date()) {
  const counted = records.filter((r) => counts(r, now));
  for (const record of counted) {
    if (!hasValue(record.amount)) {
      const what = record.id ? `payment ${record.id} is "${record.state}" but its "reserved" line (amount, payee) is missing` : `"${record.state}" without an amount`;
      throw new LedgerError(`${file}:${record.line}: ${what}: the ledger was truncated, replaced or edited; repair it before paying again`);
    }
  }
  return counted;
}

const KNOWN = new Set(Object.keys(STATES));

/** Problems a ledger should never have: missing fields, a transaction or nonce used twice, bad amounts, unknown states. */
export function auditLedger(entries) {
  const problems = [];
  entries.forEach((entry, index) => {
    const line = entry.line ?? index + 1;
    if (!entry.id) {
      for (const field of ["at", "network", "asset", "amount", "payTo", "state"]) {
        if (!hasValue(entry[field])) problems.push(`line ${line}: ${field} is missing`);
      }
    } else if (!entry.at || !entry.state) problems.push(`line ${line}: at and state are required`);
    if (hasValue(entry.amount) && !/^\d+$/.test(String(entry.amount))) problems.push(`line ${line}: amount is not atomic units`);
    if (entry.state && !KNOWN.has(entry.state)) problems.push(`line ${line}: unknown state "${entry.state}"`);
  });
  const seenTx = new Map();
  const seenNonce = new Map();
  for (const record of foldLedger(entries)) {
    const where = `line ${record.lines.at(-1)}`;
    if (record.state === "settled" && !record.transaction && record.chainState !== "used") problems.push(`${where}: settled without a transaction`);
    if (record.id && ["signed", "settled", "failed"].includes(record.state) && !record.nonce) problems.push(`${where}: ${record.state} without the signed nonce`);
    if (record.id && record.nonce && !record.validBefore) problems.push(`${where}: nonce ${record.nonce} without validBefore`);
    if (record.id && record.state !== "reserved" && !hasValue(record.amount)) problems.push(`${where}: ${record.state} without its "reserved" line (amount, payee)`);
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

/** Settled spend by day (UTC, or the policy's `timeZone`) and payee, in atomic units. */
export function summarise(entries, timeZone = "UTC") {
  const totals = {};
  for (const record of foldLedger(entries)) {
    if (record.state !== "settled" || !hasValue(record.amount)) continue;
    const key = `${dayIn(timeZone, new Date(record.at))} ${record.payTo}`;
    totals[key] = (BigInt(totals[key] ?? 0) + BigInt(record.amount)).toString();
  }
  return totals;
}

const dayFormats = new Map();
/** The calendar day (YYYY-MM-DD) of `date` in an IANA time zone. */
export function dayIn(timeZone, date) {
  let format = dayFormats.get(timeZone);
  if (!format) {
    format = new Intl.DateTimeFormat("en-CA", { timeZone, year: "numeric", month: "2-digit", day: "2-digit" });
    dayFormats.set(timeZone, format);
  }
  const parts = Object.fromEntries(format.formatToParts(date).map((p) => [p.type, p.value]));
  return `${parts.year}-${parts.month}-${parts.day}`;
}
