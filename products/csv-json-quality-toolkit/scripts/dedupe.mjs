#!/usr/bin/env node
// Deduplicate rows on key columns, keeping the first occurrence and the input order.
// usage: node scripts/dedupe.mjs <in> --keys email[,country] [--out <file>] [--case-sensitive] [--fail-on-duplicates]
// exit 0, or 1 with --fail-on-duplicates when duplicates were found, 2 usage error
import { EXIT, loadRows, parseArgs, usage, writeRows } from "../lib/load.mjs";
import { dedupeRows } from "../lib/quality.mjs";

const { positional, options } = parseArgs(process.argv.slice(2), { flags: ["case-sensitive", "fail-on-duplicates"] });
if (positional.length !== 1 || !options.keys) usage("usage: node scripts/dedupe.mjs <in> --keys a,b [--out file] [--case-sensitive] [--fail-on-duplicates]");
const keys = options.keys.split(",").map((key) => key.trim()).filter(Boolean);
const { rows, columns } = loadRows(positional[0]);
const missing = keys.filter((key) => !columns.includes(key));
if (missing.length > 0) usage(`key column(s) not in the file: ${missing.join(", ")}`);
const result = dedupeRows(rows, keys, { caseInsensitive: !options["case-sensitive"] });
writeRows(options.out, result.rows, columns);
process.stderr.write(`${JSON.stringify({ inputRows: rows.length, outputRows: result.rows.length, duplicates: result.duplicates })}\n`);
process.exitCode = options["fail-on-duplicates"] && result.duplicates.length > 0 ? EXIT.FAIL : EXIT.PASS;
