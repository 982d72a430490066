#!/usr/bin/env node
// Validate every row of a CSV/JSON/JSONL file against a JSON Schema (one row = one instance).
// usage: node scripts/validate.mjs <file> --schema <schema.json> [--max-errors 50]
// exit 0 all rows valid, 1 some row invalid (report on stdout), 2 usage or schema error
import fs from "node:fs";
import { EXIT, loadRows, parseArgs, usage } from "../lib/load.mjs";
import { validateRows } from "../lib/quality.mjs";
import { checkSchema } from "../lib/schema.mjs";

const { positional, options } = parseArgs(process.argv.slice(2));
if (positional.length !== 1 || !options.schema) usage("usage: node scripts/validate.mjs <file> --schema <schema.json> [--max-errors N]");
const schema = JSON.parse(fs.readFileSync(options.schema, "utf8"));
const schemaProblems = checkSchema(schema);
if (schemaProblems.length > 0) {
  process.stderr.write(`schema problems:\n${schemaProblems.join("\n")}\n`);
  process.exit(EXIT.USAGE);
}
const { rows, problems, format } = loadRows(positional[0]);
const report = validateRows(rows, schema, { coerce: format === "csv" });
const maxErrors = Number(options["max-errors"] ?? 50);
const valid = report.errors.length === 0 && problems.length === 0;
process.stdout.write(
  `${JSON.stringify({ file: positional[0], valid, rows: report.rows, invalidRows: report.invalidRows, parseProblems: problems, errors: report.errors.slice(0, maxErrors), truncated: report.errors.length > maxErrors }, null, 2)}\n`,
);
process.exitCode = valid ? EXIT.PASS : EXIT.FAIL;
