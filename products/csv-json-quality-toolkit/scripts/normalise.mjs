#!/usr/bin/env node
// Normalise a CSV/JSON/JSONL file: trim and fold whitespace, NFC, blank cells to null, drop blank
// rows, optionally snake_case headers. Writes the format the output name says (stdout: JSON).
// usage: node scripts/normalise.mjs <in> [--out <file>] [--snake-case-headers] [--keep-blank-rows]
import { EXIT, loadRows, parseArgs, usage, writeRows } from "../lib/load.mjs";
import { normaliseRows } from "../lib/quality.mjs";

const { positional, options } = parseArgs(process.argv.slice(2), { flags: ["snake-case-headers", "keep-blank-rows"] });
if (positional.length !== 1) usage("usage: node scripts/normalise.mjs <in> [--out file] [--snake-case-headers] [--keep-blank-rows]");
const { rows } = loadRows(positional[0]);
const result = normaliseRows(rows, { snakeCaseHeaders: Boolean(options["snake-case-headers"]), dropBlankRows: !options["keep-blank-rows"] });
writeRows(options.out, result.rows);
process.stderr.write(`${JSON.stringify({ inputRows: rows.length, outputRows: result.rows.length, blankRowsDropped: result.blankRowsDropped })}\n`);
process.exitCode = EXIT.PASS;
