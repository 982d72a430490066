#!/usr/bin/env node
// Profile a CSV/JSON/JSONL file: per column fill rate, distinct values, kinds, range, top values.
// usage: node scripts/profile.mjs <file> [--top 5]     exit 0, or 2 on a usage error
import { EXIT, loadRows, parseArgs, usage } from "../lib/load.mjs";
import { profileRows } from "../lib/quality.mjs";

const { positional, options } = parseArgs(process.argv.slice(2));
if (positional.length !== 1) usage("usage: node scripts/profile.mjs <file.csv|json|jsonl> [--top N]");
const { rows, columns, problems } = loadRows(positional[0]);
const profile = profileRows(rows, columns, { top: Number(options.top ?? 5) });
process.stdout.write(`${JSON.stringify({ file: positional[0], ...profile, parseProblems: problems }, null, 2)}\n`);
process.exitCode = EXIT.PASS;
