#!/usr/bin/env node
// Audit and summarise a receipts ledger (JSONL). usage: node scripts/ledger.mjs ledger.jsonl [--now ISO]
// Prints the problems, settled spend by day and payee, and the open authorizations (signed, no
// receipt, validBefore not passed: what to cancel after a key leak, what to look up after a timeout).
// exit 0 clean, 1 problems found (listed), 2 usage
import fs from "node:fs";
import { auditLedger, foldLedger, openAuthorizations, readLedger, summarise } from "../lib/ledger.mjs";

const args = process.argv.slice(2);
const nowIndex = args.indexOf("--now");
const now = nowIndex >= 0 ? new Date(args[nowIndex + 1]) : new Date();
const file = args.find((arg, i) => !arg.startsWith("--") && (nowIndex < 0 || i !== nowIndex + 1));
if (!file || Number.isNaN(now.getTime())) {
  process.stderr.write("usage: node scripts/ledger.mjs <ledger.jsonl> [--now ISO]\n");
  process.exit(2);
}
if (!fs.existsSync(file)) {
  process.stderr.write(`ledger: ${file} does not exist\n`);
  process.exit(2);
}
const entries = readLedger(file);
const problems = auditLedger(entries);
const payments = foldLedger(entries);
const byState = {};
for (const payment of payments) byState[payment.state] = (byState[payment.state] ?? 0) + 1;
process.stdout.write(
  `${JSON.stringify({ file, lines: entries.length, payments: payments.length, byState, problems, settledByDayAndPayee: summarise(entries), openAuthorizations: openAuthorizations(entries, now) }, null, 2)}\n`,
);
process.exitCode = problems.length === 0 ? 0 : 1;
