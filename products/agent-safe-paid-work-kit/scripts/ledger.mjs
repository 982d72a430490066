#!/usr/bin/env node
// Audit and summarise a receipts ledger (JSONL).
// usage: node scripts/ledger.mjs ledger.jsonl [--policy policy.json] [--now ISO]
// Prints the problems, settled spend by day and payee, the open authorizations (signed, no receipt,
// validBefore not passed: what to cancel after a key leak) and the unknown ones (validBefore passed,
// no receipt, the chain not asked: they still count). With a policy that names an `rpc` for their
// network, the unknown ones are looked up on chain first and the answers recorded in the ledger.
// exit 0 clean, 1 problems found (listed), 2 usage or an unreadable ledger
import fs from "node:fs";
import { resolveLapsedAuthorizations } from "../lib/chain.mjs";
import { auditLedger, foldLedger, LedgerError, openAuthorizations, readLedger, summarise, unknownAuthorizations } from "../lib/ledger.mjs";
import { checkPolicy } from "../lib/policy.mjs";

const args = process.argv.slice(2);
const option = (name) => {
  const i = args.indexOf(`--${name}`);
  return i >= 0 ? args[i + 1] : undefined;
};
const optionValues = new Set(["--now", "--policy"].map((name) => args.indexOf(name) + 1).filter((i) => i > 0));
const file = args.find((arg, i) => !arg.startsWith("--") && !optionValues.has(i));
const now = option("now") ? new Date(option("now")) : new Date();
const fail = (message) => {
  process.stderr.write(`${message}\n`);
  process.exit(2);
};
if (!file || Number.isNaN(now.getTime())) fail("usage: node scripts/ledger.mjs <ledger.jsonl> [--policy policy.json] [--now ISO]");
if (!fs.existsSync(file)) fail(`ledger: ${file} does not exist`);
let policy;
if (option("policy")) {
  try {
    policy = JSON.parse(fs.readFileSync(option("policy"), "utf8"));
  } catch (error) {
    fail(`ledger: the policy ${option("policy")} cannot be read: ${error.message}`);
  }
  const problems = checkPolicy(policy);
  if (problems.length > 0) fail(`ledger: invalid policy: ${problems.join("; ")}`);
}
try {
  const chain = policy ? await resolveLapsedAuthorizations(file, policy, { now, all: true }) : [];
  const entries = readLedger(file);
  const problems = auditLedger(entries);
  const payments = foldLedger(entries);
  const byState = {};
  for (const payment of payments) byState[payment.state] = (byState[payment.state] ?? 0) + 1;
  const report = {
    file,
    lines: entries.length,
    payments: payments.length,
    byState,
    problems,
    settledByDayAndPayee: summarise(entries, policy?.timeZone),
    openAuthorizations: openAuthorizations(entries, now),
    unknownAuthorizations: unknownAuthorizations(entries, now),
    ...(policy ? { chainAnswers: chain } : {}),
  };
  process.stdout.write(`${JSON.stringify(report, null, 2)}\n`);
  process.exitCode = problems.length === 0 ? 0 : 1;
} catch (error) {
  if (error instanceof LedgerError) fail(`ledger: ${error.message}`);
  throw error;
}
