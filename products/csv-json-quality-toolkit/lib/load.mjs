import fs from "node:fs";
import { parseCsv, toCsv } from "./csv.mjs";

/** Reads rows from .csv, .json (an array of objects) or .jsonl/.ndjson (one object per line). */
export function loadRows(file) {
  const text = fs.readFileSync(file, "utf8");
  if (/\.csv$/i.test(file)) {
    const { records, columns, problems } = parseCsv(text);
    return { rows: records, columns, problems, format: "csv" };
  }
  if (/\.(jsonl|ndjson)$/i.test(file)) {
    const rows = [];
    const problems = [];
    text.split(/\r?\n/).forEach((line, index) => {
      if (line.trim() === "") return;
      try {
        rows.push(JSON.parse(line));
      } catch (error) {
        problems.push({ row: index + 1, message: `not JSON: ${error.message}` });
      }
    });
    return { rows, columns: columnsOf(rows), problems, format: "jsonl" };
  }
  const data = JSON.parse(text);
  if (!Array.isArray(data)) throw new Error(`${file}: expected a JSON array of objects`);
  return { rows: data, columns: columnsOf(data), problems: [], format: "json" };
}

export const columnsOf = (rows) => [...new Set(rows.flatMap((row) => Object.keys(row ?? {})))];

/** Writes rows in the format the file name says (.csv, .jsonl, else JSON), or to stdout as JSON. */
export function writeRows(file, rows, columns) {
  if (!file || file === "-") {
    process.stdout.write(`${JSON.stringify(rows, null, 2)}\n`);
    return;
  }
  if (/\.csv$/i.test(file)) fs.writeFileSync(file, toCsv(rows, { columns }));
  else if (/\.(jsonl|ndjson)$/i.test(file)) fs.writeFileSync(file, rows.map((row) => JSON.stringify(row)).join("\n") + "\n");
  else fs.writeFileSync(file, `${JSON.stringify(rows, null, 2)}\n`);
}

/** --name value and --flag options after positional arguments. */
export function parseArgs(argv, { flags = [] } = {}) {
  const positional = [];
  const options = {};
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i];
    if (!arg.startsWith("--")) positional.push(arg);
    else if (flags.includes(arg.slice(2))) options[arg.slice(2)] = true;
    else options[arg.slice(2)] = argv[++i];
  }
  return { positional, options };
}

/** Exit codes every script and gate uses: 0 pass, 1 the data fails, 2 the call is wrong. */
export const EXIT = { PASS: 0, FAIL: 1, USAGE: 2 };

export function usage(text) {
  process.stderr.write(`${text}\n`);
  process.exit(EXIT.USAGE);
}
