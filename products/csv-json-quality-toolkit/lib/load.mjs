// In-memory helpers for small files and for code that imports the kit (the scripts stream: see rows.mjs).
import fs from "node:fs";
import { parseCsv, detectDelimiter, toCsv } from "./csv.mjs";
import { decodeInput } from "./text.mjs";

export { EXIT, parseCliArgs, UsageError, DataError } from "./cli.mjs";

/** Reads rows from .csv/.tsv (delimiter detected unless given), .json (an array) or .jsonl/.ndjson, whole. */
export function loadRows(file, { delimiter } = {}) {
  const text = decodeInput(fs.readFileSync(file));
  if (/\.(csv|tsv|tab|txt)$/i.test(file)) {
    const chosen = delimiter ?? (/\.(tsv|tab)$/i.test(file) ? "\t" : detectDelimiter(text));
    const { records, columns, problems } = parseCsv(text, { delimiter: chosen });
    return { rows: records, columns, problems, format: "csv", delimiter: chosen };
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

export const columnsOf = (rows) => {
  const columns = new Set();
  for (const row of rows) for (const key of Object.keys(row ?? {})) columns.add(key);
  return [...columns];
};

/** Writes rows in the format the file name says (.csv, .jsonl, else JSON), or to stdout as JSON. */
export function writeRows(file, rows, columns) {
  if (!file || file === "-") {
    process.stdout.write(`${JSON.stringify(rows, null, 2)}\n`);
    return;
  }
  if (/\.csv$/i.test(file)) fs.writeFileSync(file, toCsv(rows, { columns }));
  else if (/\.(jsonl|ndjson)$/i.test(file)) fs.writeFileSync(file, `${rows.map((row) => JSON.stringify(row)).join("\n")}\n`);
  else fs.writeFileSync(file, `${JSON.stringify(rows, null, 2)}\n`);
}
