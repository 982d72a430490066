#!/usr/bin/env node
// Decide whether to pay a 402 before paying it.
// usage: node scripts/check-payment.mjs --policy policy.json --terms terms.json|--header <PAYMENT-REQUIRED value> [--ledger ledger.jsonl] [--now ISO]
// Of several offered entries, the one the guard would pick (allowed by the policy, cheapest) is decided.
// exit 0 allow, 1 deny, 3 allowed only with a human's approval, 2 usage error or an unreadable file
import fs from "node:fs";
import { LedgerError, readLedger } from "../lib/ledger.mjs";
import { checkPolicy, decide, paymentOf, termsFrom402 } from "../lib/policy.mjs";

const args = process.argv.slice(2);
const option = (name) => {
  const i = args.indexOf(`--${name}`);
  return i >= 0 ? args[i + 1] : undefined;
};
const fail = (message) => {
  process.stderr.write(`${message}\n`);
  process.exit(2);
};
if (!option("policy") || !(option("terms") || option("header"))) fail("usage: node scripts/check-payment.mjs --policy p.json --terms t.json|--header H [--ledger l.jsonl] [--now ISO]");
const readJson = (file, what) => {
  try {
    return JSON.parse(fs.readFileSync(file, "utf8"));
  } catch (error) {
    return fail(`check-payment: the ${what} ${file} cannot be read: ${error.message}`);
  }
};
const policy = readJson(option("policy"), "policy");
const problems = checkPolicy(policy);
if (problems.length > 0) fail(`invalid policy: ${problems.join("; ")}`);
let terms;
try {
  terms = option("header") ? termsFrom402(option("header"), undefined, policy) : termsFrom402(undefined, readJson(option("terms"), "terms"), policy);
} catch (error) {
  fail(`check-payment: ${error.message}`);
}
const now = option("now") ? new Date(option("now")) : new Date();
if (Number.isNaN(now.getTime())) fail("check-payment: --now is not a time");
try {
  const ledger = option("ledger") ? readLedger(option("ledger")) : [];
  const payment = paymentOf(terms, terms.url);
  const result = decide(policy, payment, ledger, now, option("ledger"));
  process.stdout.write(`${JSON.stringify({ payment: { network: payment.network, asset: payment.asset, amount: payment.amount, payTo: payment.payTo }, ...result }, null, 2)}\n`);
  process.exitCode = { allow: 0, deny: 1, approve: 3 }[result.decision];
} catch (error) {
  if (error instanceof LedgerError) fail(`check-payment: ${error.message}`);
  throw error;
}
