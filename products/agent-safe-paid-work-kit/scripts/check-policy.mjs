#!/usr/bin/env node
// Check a spend policy file. usage: node scripts/check-policy.mjs policy.json   exit 0 valid, 1 invalid, 2 usage
import fs from "node:fs";
import { checkPolicy } from "../lib/policy.mjs";

const [file] = process.argv.slice(2);
if (!file) {
  process.stderr.write("usage: node scripts/check-policy.mjs <policy.json>\n");
  process.exit(2);
}
const problems = checkPolicy(JSON.parse(fs.readFileSync(file, "utf8")));
process.stdout.write(`${JSON.stringify({ file, valid: problems.length === 0, problems }, null, 2)}\n`);
process.exitCode = problems.length === 0 ? 0 : 1;
