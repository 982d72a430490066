#!/usr/bin/env node
// Decide whether to pay a 402 before paying it.
// usage: node scripts/check-payment.mjs --policy policy.json --terms terms.json|--header <PAYMENT-REQUIRED value> [--ledger ledger.jsonl] [--now ISO]
// exit 0 allow, 1 deny, 3 allowed only with a human's approval, 2 usage error
import fs from "node:fs";
import { readLedger } from "../lib/ledger.mjs";
import { checkPolicy, decide, termsFrom402 } from "../lib/policy.mjs";

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
const policy = JSON.parse(fs.readFileSync(option("policy"), "utf8"));
const problems = checkPolicy(policy);
if (problems.length > 0) fail(`invalid policy: ${problems.join("; ")}`);
const terms = option("header") ? termsFrom402(option("header")) : termsFrom402(undefined, JSON.parse(fs.readFileSync(option("terms"), "utf8")));
const ledger = option("ledger") && fs.existsSync(option("ledger")) ? readLedger(option("ledger")) : [];
const result = decide(policy, terms, ledger, option("now") ? new Date(option("now")) : new Date());
process.stdout.write(`${JSON.stringify({ payment: { network: terms.network, asset: terms.asset, amount: terms.amount, payTo: terms.payTo }, ...result }, null, 2)}\n`);
process.exitCode = { allow: 0, deny: 1, approve: 3 }[result.decision];
