#!/usr/bin/env node
// Acceptance gate for a data file, for CI: every rule of the gate file must hold. Streams the file
// once, whatever its length (memory grows only with the distinct keys of `keyColumns`).
// usage: node gates/quality-gate.mjs <data file> --gate <gate.json> [--delimiter ;] [--progress|--quiet]
// gate.json: { "schema": "path relative to the gate file", "minRows": 1, "maxRows": 100000,
//   "keyColumns": ["id"], "maxDuplicateRate": 0, "requiredColumns": ["id"],
//   "maxBlankRate": { "email": 0.05 }, "maxInvalidRate": 0, "delimiter": ";" }
// A gate file that is missing, not JSON, has no rule or an unknown key is a wrong call.
// exit 0 pass, 1 fail (the report names each failed rule), 2 wrong call
import path from "node:path";
import { EXIT, parseCliArgs, runCli, UsageError } from "../lib/cli.mjs";
import { createDeduper, createRowValidator } from "../lib/quality.mjs";
import { delimiterOption, formatOf, readJsonFile, readRows } from "../lib/rows.mjs";
import { checkSchema } from "../lib/schema.mjs";

const USAGE = "usage: node gates/quality-gate.mjs <data file> --gate <gate.json> [--delimiter C] [--progress|--quiet]";
const RULES = ["schema", "minRows", "maxRows", "keyColumns", "maxDuplicateRate", "requiredColumns", "maxBlankRate", "maxInvalidRate"];
const OTHER_KEYS = ["delimiter", "description", "$comment"];

/** The gate file, checked: every key known, every value of the right kind, at least one rule. */
function readGate(file) {
  const gate = readJsonFile(file, "gate file");
  const wrong = (message) => new UsageError(`the gate file ${file}: ${message}`);
  if (gate === null || typeof gate !== "object" || Array.isArray(gate)) throw wrong("must be a JSON object");
  const unknown = Object.keys(gate).filter((key) => !RULES.includes(key) && !OTHER_KEYS.includes(key));
  if (unknown.length > 0) throw wrong(`unknown key(s) ${unknown.map((k) => `"${k}"`).join(", ")} (known: ${[...RULES, ...OTHER_KEYS].join(", ")})`);
  if (!RULES.some((key) => key in gate)) throw wrong(`has no rules; give at least one of ${RULES.join(", ")}`);
  const count = (key) => gate[key] === undefined || (Number.isInteger(gate[key]) && gate[key] >= 0) || (() => { throw wrong(`${key} must be a whole number ≥ 0`); })();
  const rate = (key, value = gate[key]) => value === undefined || (typeof value === "number" && value >= 0 && value <= 1) || (() => { throw wrong(`${key} must be a number from 0 to 1`); })();
  const names = (key) => gate[key] === undefined || (Array.isArray(gate[key]) && gate[key].length > 0 && gate[key].every((n) => typeof n === "string")) || (() => { throw wrong(`${key} must be a non-empty list of column names`); })();
  count("minRows");
  count("maxRows");
  rate("maxDuplicateRate");
  rate("maxInvalidRate");
  names("keyColumns");
  names("requiredColumns");
  if (gate.maxBlankRate !== undefined) {
    if (typeof gate.maxBlankRate !== "object" || gate.maxBlankRate === null || Array.isArray(gate.maxBlankRate)) throw wrong("maxBlankRate must map column names to rates");
    for (const [column, value] of Object.entries(gate.maxBlankRate)) rate(`maxBlankRate.${column}`, value);
  }
  if (gate.maxDuplicateRate !== undefined && !gate.keyColumns) throw wrong("maxDuplicateRate needs keyColumns");
  if (gate.maxInvalidRate !== undefined && !gate.schema) throw wrong("maxInvalidRate needs schema");
  if (gate.schema !== undefined && typeof gate.schema !== "string") throw wrong("schema must be a path (relative to the gate file)");
  let schema;
  if (gate.schema) {
    const schemaFile = path.resolve(path.dirname(file), gate.schema);
    schema = readJsonFile(schemaFile, "schema");
    const problems = checkSchema(schema);
    if (problems.length > 0) throw new UsageError(`the schema ${schemaFile} cannot be used: ${problems.join("; ")}`);
  }
  return { gate, schema };
}

await runCli(async () => {
  const { positional, options } = parseCliArgs(process.argv.slice(2), { options: ["gate", "delimiter"], flags: ["progress", "quiet"] });
  if (positional.length !== 1 || !options.gate) throw new UsageError(`one data file and --gate are needed; ${USAGE}`);
  const [file] = positional;
  const { gate, schema } = readGate(options.gate);
  const delimiter = delimiterOption(options.delimiter ?? gate.delimiter);
  const validator = schema && createRowValidator(schema, { coerce: formatOf(file) === "csv", maxErrors: 3 });
  const deduper = gate.keyColumns && createDeduper(gate.keyColumns);
  const blankColumns = Object.keys(gate.maxBlankRate ?? {});
  const blanks = new Array(blankColumns.length).fill(0);
  let duplicates = 0;
  const read = await readRows(
    file,
    (row, index) => {
      if (deduper && deduper.add(row, index) !== undefined) duplicates++;
      for (let i = 0; i < blankColumns.length; i++) {
        const value = row?.[blankColumns[i]];
        if (value === null || value === undefined || (typeof value === "string" && value.trim() === "")) blanks[i]++;
      }
      validator?.add(row, index);
    },
    { delimiter, label: "quality-gate", progress: { always: Boolean(options.progress), quiet: Boolean(options.quiet) } },
  );

  const { rows, columns } = read;
  const rules = [];
  const rule = (name, ok, detail) => rules.push({ rule: name, ok, detail });
  const fraction = (n) => (rows === 0 ? 0 : n / rows);
  rule("file parses cleanly", read.problemCount === 0, `${read.problemCount} parse problem(s)${read.problems.length > 0 ? `; first: ${JSON.stringify(read.problems.slice(0, 3))}` : ""}`);
  if (gate.minRows !== undefined) rule(`at least ${gate.minRows} rows`, rows >= gate.minRows, `${rows} rows`);
  if (gate.maxRows !== undefined) rule(`at most ${gate.maxRows} rows`, rows <= gate.maxRows, `${rows} rows`);
  for (const name of gate.requiredColumns ?? []) rule(`column ${name} present`, columns.includes(name), columns.join(", "));
  if (gate.keyColumns) {
    for (const name of gate.keyColumns) if (!columns.includes(name)) rule(`key column ${name} present`, false, columns.join(", "));
    const limit = gate.maxDuplicateRate ?? 0;
    rule(`duplicate rate on ${gate.keyColumns.join("+")} ≤ ${limit}`, fraction(duplicates) <= limit, `${duplicates} duplicate row(s); ${deduper.blankKeyRows} row(s) with a blank key (never duplicates)`);
  }
  blankColumns.forEach((name, i) => {
    const limit = gate.maxBlankRate[name];
    // A rule on a column the file lacks checks nothing: it fails rather than pass unchecked.
    if (!columns.includes(name)) return rule(`blank rate of ${name} ≤ ${limit}`, false, `column ${name} is not in the file (columns: ${columns.join(", ")})`);
    const blankRate = Math.round(fraction(blanks[i]) * 1e6) / 1e6;
    rule(`blank rate of ${name} ≤ ${limit}`, blankRate <= limit, `${blankRate}`);
  });
  if (validator) {
    const report = validator.result();
    const limit = gate.maxInvalidRate ?? 0;
    rule(`invalid row rate ≤ ${limit}`, fraction(report.invalidRows) <= limit, `${report.invalidRows} invalid row(s); first: ${JSON.stringify(report.errors)}`);
  }
  const pass = rules.every((r) => r.ok);
  process.stdout.write(`${JSON.stringify({ file, pass, rows, rules }, null, 2)}\n`);
  return pass ? EXIT.PASS : EXIT.FAIL;
});
