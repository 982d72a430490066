#!/usr/bin/env node
// Acceptance gate for a data file, for CI: every rule of the gate file must hold.
// usage: node gates/quality-gate.mjs <data file> --gate <gate.json>
// gate.json: { "schema": "path relative to the gate file", "minRows": 1, "maxRows": 100000,
//   "keyColumns": ["id"], "maxDuplicateRate": 0, "requiredColumns": ["id"],
//   "maxBlankRate": { "email": 0.05 }, "maxInvalidRate": 0 }
// exit 0 pass, 1 fail (the report names each failed rule), 2 usage error
import fs from "node:fs";
import path from "node:path";
import { EXIT, loadRows, parseArgs, usage } from "../lib/load.mjs";
import { dedupeRows, profileRows, validateRows } from "../lib/quality.mjs";

const { positional, options } = parseArgs(process.argv.slice(2));
if (positional.length !== 1 || !options.gate) usage("usage: node gates/quality-gate.mjs <data file> --gate <gate.json>");
const gate = JSON.parse(fs.readFileSync(options.gate, "utf8"));
const { rows, columns, problems, format } = loadRows(positional[0]);
const rules = [];
const rule = (name, ok, detail) => rules.push({ rule: name, ok, detail });

rule("file parses cleanly", problems.length === 0, `${problems.length} parse problem(s)`);
if (gate.minRows !== undefined) rule(`at least ${gate.minRows} rows`, rows.length >= gate.minRows, `${rows.length} rows`);
if (gate.maxRows !== undefined) rule(`at most ${gate.maxRows} rows`, rows.length <= gate.maxRows, `${rows.length} rows`);
for (const name of gate.requiredColumns ?? []) rule(`column ${name} present`, columns.includes(name), columns.join(", "));
if (gate.keyColumns) {
  const { duplicates } = dedupeRows(rows, gate.keyColumns);
  const rate = rows.length === 0 ? 0 : duplicates.length / rows.length;
  rule(`duplicate rate on ${gate.keyColumns.join("+")} ≤ ${gate.maxDuplicateRate ?? 0}`, rate <= (gate.maxDuplicateRate ?? 0), `${duplicates.length} duplicate row(s)`);
}
if (gate.maxBlankRate) {
  const profile = profileRows(rows, Object.keys(gate.maxBlankRate));
  for (const column of profile.columns) {
    const limit = gate.maxBlankRate[column.name];
    rule(`blank rate of ${column.name} ≤ ${limit}`, column.blankRate <= limit, `${column.blankRate}`);
  }
}
if (gate.schema) {
  const schema = JSON.parse(fs.readFileSync(path.resolve(path.dirname(options.gate), gate.schema), "utf8"));
  const report = validateRows(rows, schema, { coerce: format === "csv" });
  const rate = rows.length === 0 ? 0 : report.invalidRows / rows.length;
  rule(`invalid row rate ≤ ${gate.maxInvalidRate ?? 0}`, rate <= (gate.maxInvalidRate ?? 0), `${report.invalidRows} invalid row(s); first: ${JSON.stringify(report.errors.slice(0, 3))}`);
}
const pass = rules.every((r) => r.ok);
process.stdout.write(`${JSON.stringify({ file: positional[0], pass, rules }, null, 2)}\n`);
process.exitCode = pass ? EXIT.PASS : EXIT.FAIL;
