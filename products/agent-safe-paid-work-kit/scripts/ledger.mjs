#!/usr/bin/env node
// Audit and summarise a receipts ledger (JSONL). usage: node scripts/ledger.mjs ledger.jsonl
// exit 0 clean, 1 problems found (listed), 2 usage
import { auditLedger, readLedger, summarise } from "../lib/ledger.mjs";

const [file] = process.argv.slice(2);
if (!file) {
  process.stderr.write("usage: node scripts/ledger.mjs <ledger.jsonl>\n");
  process.exit(2);
}
const entries = readLedger(file);
const problems = auditLedger(entries);
process.stdout.write(`${JSON.stringify({ file, entries: entries.length, problems, settledByDayAndPayee: summarise(entries) }, null, 2)}\n`);
process.exitCode = problems.length === 0 ? 0 : 1;
