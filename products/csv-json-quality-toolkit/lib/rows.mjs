// Streaming rows in and out of CSV/TSV, JSONL/NDJSON and JSON arrays: one pass, bounded memory.
import fs from "node:fs";
import { DataError, UsageError } from "./cli.mjs";
import { CsvParser, csvLine, delimiterFromName, detectDelimiter } from "./csv.mjs";
import { progressReporter } from "./progress.mjs";
import { InputDecoder } from "./text.mjs";

/** Text held back to detect the delimiter when the header line is longer than one read. */
const DETECTION_CHARS = 1 << 16;

/** Parse problems listed in a report (all are counted). */
export const MAX_LISTED_PROBLEMS = 100;

/**
 * How deeply a JSON row may nest (the row itself is level 1). Deeper rows are a problem naming the
 * row, not a crash: JSON.stringify (profile's value counts, keys, output) recurses and runs out of
 * stack near 10,000 levels.
 */
export const MAX_JSON_DEPTH = 1000;

/** Whether a parsed JSON value nests deeper than `limit` levels (walked with a stack, not recursion). */
function nestsDeeperThan(value, limit) {
  const stack = [value];
  const depths = [1];
  while (stack.length > 0) {
    const current = stack.pop();
    const depth = depths.pop();
    if (depth > limit) return true;
    for (const key in current) {
      const child = current[key];
      if (child !== null && typeof child === "object") {
        stack.push(child);
        depths.push(depth + 1);
      }
    }
  }
  return false;
}

/** csv (.csv, .tsv, .txt), jsonl (.jsonl, .ndjson) or json, from the file name. */
export function formatOf(file) {
  if (/\.(csv|tsv|tab|txt)$/i.test(file)) return "csv";
  if (/\.(jsonl|ndjson)$/i.test(file)) return "jsonl";
  if (/\.json$/i.test(file)) return "json";
  throw new UsageError(`${file}: unknown format (name it .csv, .tsv, .json, .jsonl or .ndjson)`);
}

/** The `--delimiter` option as a character (usage error when it is not one). */
export function delimiterOption(value) {
  if (value === undefined) return undefined;
  const delimiter = delimiterFromName(value);
  if (!delimiter) throw new UsageError(`--delimiter must be one character or tab, semicolon, comma, pipe; not "${value}"`);
  return delimiter;
}

/** Checks that a file can be read before anything is written; a usage error in one line otherwise. */
export function assertReadable(file, what = "file") {
  let stat;
  try {
    stat = fs.statSync(file);
  } catch (error) {
    throw new UsageError(`cannot read the ${what} ${file}: ${error.code === "ENOENT" ? "no such file" : error.message}`);
  }
  if (!stat.isFile()) throw new UsageError(`cannot read the ${what} ${file}: not a file`);
  return stat;
}

/** Reads a small JSON file (schema, gate); a usage error in one line when it is missing or not JSON. */
export function readJsonFile(file, what) {
  assertReadable(file, what);
  try {
    return JSON.parse(fs.readFileSync(file, "utf8"));
  } catch (error) {
    throw new UsageError(`the ${what} ${file} is not valid JSON: ${error.message}`);
  }
}

/**
 * Streams the rows of a data file to `visit(record, index)` (index from 0). Returns
 * `{ format, encoding, delimiter, rows, columns, problems, problemCount }`: CSV columns are the header, JSON
 * columns every key in first-seen order. A ragged CSV row or a JSON line that does not parse is a
 * problem (listed up to MAX_LISTED_PROBLEMS, all counted); with `strict` (for scripts that rewrite
 * the data) a duplicate column name or a ragged row throws a DataError instead, since a value
 * would be lost. `onColumns(columns, delimiter)` is called once the CSV header is read. The bytes
 * are decoded by InputDecoder (UTF-8 or UTF-16; anything else, or an empty file, is a DataError).
 */
export async function readRows(file, visit, { delimiter, strict = false, progress = {}, label = "read", onColumns } = {}) {
  const format = formatOf(file);
  const { size } = assertReadable(file, "input file");
  const report = progressReporter(label, { totalBytes: size, ...progress });
  const columns = [];
  const known = new Set();
  const problems = [];
  let problemCount = 0;
  let rows = 0;
  const problem = (row, message) => {
    if (strict) throw new DataError(`row ${row}: ${message}; nothing was written`);
    problemCount++;
    if (problems.length < MAX_LISTED_PROBLEMS) problems.push({ row, message });
  };
  /** A parsed JSON row, detached from Object.prototype (JSON.parse keeps "__proto__" as an own key). */
  const jsonRow = (record) => {
    if (record === null || typeof record !== "object" || Array.isArray(record)) return record;
    Object.setPrototypeOf(record, null);
    for (const key in record) {
      if (!known.has(key)) {
        known.add(key);
        columns.push(key);
      }
    }
    return record;
  };

  let push;
  let end;
  if (format === "csv") {
    let header;
    let csv;
    const onRow = (cells, row) => {
      if (!header) {
        // A blank first line (a file of whitespace or line ends) has no column to check.
        if (cells.every((cell) => cell.trim() === "")) throw new DataError(`${file} has no data (its first line is blank, so there is no header): there is nothing to check`);
        header = cells;
        const seen = new Set();
        for (const name of header) {
          if (seen.has(name)) problem(1, `duplicate column name "${name}"`);
          seen.add(name);
        }
        columns.push(...new Set(header));
        onColumns?.(columns, delimiter);
        return;
      }
      if (cells.length === 1 && cells[0] === "" && header.length !== 1) return; // an empty line
      if (cells.length !== header.length) problem(row, `${cells.length} fields, the header has ${header.length}`);
      // No prototype: a column named __proto__ or constructor is data, never an inherited property.
      const record = Object.create(null);
      for (let j = 0; j < header.length; j++) record[header[j]] = cells[j] ?? "";
      visit(record, rows++);
    };
    // The delimiter is detected from the whole header line, however the file was cut into reads.
    let held = "";
    const start = (text) => {
      delimiter ??= /\.(tsv|tab)$/i.test(file) ? "\t" : detectDelimiter(text);
      csv = new CsvParser({ delimiter, onRow });
      csv.push(text);
    };
    push = (text) => {
      if (csv) csv.push(text);
      else {
        held += text;
        if (/[\r\n]/.test(held) || held.length >= DETECTION_CHARS) {
          start(held);
          held = "";
        }
      }
    };
    end = () => {
      try {
        if (!csv) start(held);
        csv.end();
      } catch (error) {
        if (error instanceof DataError) throw error;
        problem(rows + 2, error.message);
      }
    };
  } else if (format === "jsonl") {
    let pending = "";
    let line = 0;
    const take = (text) => {
      line++;
      if (text.trim() === "") return;
      let record;
      try {
        record = JSON.parse(text);
      } catch (error) {
        problem(line, `not JSON: ${error.message}`);
        return;
      }
      if (record !== null && typeof record === "object" && nestsDeeperThan(record, MAX_JSON_DEPTH)) {
        problem(line, `nested deeper than ${MAX_JSON_DEPTH} levels`);
        return;
      }
      visit(jsonRow(record), rows++);
    };
    push = (text) => {
      // A line longer than one read is searched for its end only in the new text.
      const searched = pending.length;
      pending += text;
      let start = 0;
      for (let nl = pending.indexOf("\n", searched); nl !== -1; nl = pending.indexOf("\n", start)) {
        take(pending.slice(start, nl).replace(/\r$/, ""));
        start = nl + 1;
      }
      pending = pending.slice(start);
    };
    end = () => {
      if (pending !== "") take(pending.replace(/\r$/, ""));
    };
  } else {
    const splitter = new JsonArraySplitter((text, index) => {
      let record;
      try {
        record = JSON.parse(text);
      } catch (error) {
        problem(index + 1, `not JSON: ${error.message}`);
        return;
      }
      if (record !== null && typeof record === "object" && nestsDeeperThan(record, MAX_JSON_DEPTH)) {
        problem(index + 1, `nested deeper than ${MAX_JSON_DEPTH} levels`);
        return;
      }
      visit(jsonRow(record), rows++);
    });
    push = (text) => splitter.push(text);
    end = () => splitter.end();
  }

  const decoder = new InputDecoder();
  let bytes = 0;
  try {
    for await (const chunk of fs.createReadStream(file, { highWaterMark: 1 << 20 })) {
      bytes += chunk.length;
      push(decoder.write(chunk));
      report.tick(bytes, rows);
    }
    push(decoder.end());
    // An empty file has no header and no rows: nothing was checked, which must not pass as clean.
    if (decoder.characters === 0) throw new DataError(`${file} is empty (${bytes === 0 ? "0 bytes" : "only a byte order mark"}): there is nothing to check`);
    end();
    // Only whitespace, blank lines or `[]` (no column, no row, no line that failed to parse): as empty as a 0-byte file.
    if (rows === 0 && problemCount === 0 && columns.every((name) => name.trim() === "")) {
      throw new DataError(`${file} has no data (only whitespace${format === "json" ? " or an empty array" : ""}): there is nothing to check`);
    }
  } catch (error) {
    if (error instanceof DataError || error instanceof UsageError) throw error;
    if (error.code) throw new UsageError(`cannot read the input file ${file}: ${error.message}`);
    throw new DataError(`${file}: ${error.message}`);
  }
  report.done(rows);
  return { format, encoding: decoder.encoding, delimiter, rows, columns, problems, problemCount };
}

/**
 * Splits a JSON array (`[ {...}, {...} ]`) into the text of each element as it streams, so an
 * array of millions of objects never needs to be held whole. Anything else throws.
 */
export class JsonArraySplitter {
  #state = "before"; // before → between → in → after
  #depth = 0;
  #inString = false;
  #escape = false;
  #element = "";
  #index = 0;
  constructor(onElement) {
    this.onElement = onElement;
  }

  push(text) {
    let start = this.#state === "in" ? 0 : -1;
    for (let i = 0; i < text.length; i++) {
      const c = text.charCodeAt(i);
      if (this.#state === "in") {
        if (this.#inString) {
          if (this.#escape) this.#escape = false;
          else if (c === 92) this.#escape = true;
          else if (c === 34) this.#inString = false;
          continue;
        }
        if (c === 34) this.#inString = true;
        else if (c === 123 || c === 91) this.#depth++;
        else if (c === 125 || c === 93) {
          if (this.#depth === 0 && c === 93) {
            this.#finish(text.slice(start, i));
            this.#state = "after";
          } else this.#depth--;
        } else if (c === 44 && this.#depth === 0) {
          this.#finish(text.slice(start, i));
          this.#state = "between";
        }
        continue;
      }
      if (c === 32 || c === 9 || c === 10 || c === 13 || c === 0xfeff) continue;
      if (this.#state === "before") {
        if (c !== 91) throw new Error("expected a JSON array of rows ([ {...}, ... ])");
        this.#state = "between";
      } else if (this.#state === "between") {
        if (c === 93 && this.#index === 0) {
          this.#state = "after";
          continue;
        }
        this.#state = "in";
        start = i;
        i--; // read this character as part of the element
      } else throw new Error("text after the end of the JSON array");
    }
    if (this.#state === "in") this.#element += text.slice(start);
  }

  #finish(tail) {
    const text = this.#element + tail;
    this.#element = "";
    this.onElement(text, this.#index++);
  }

  end() {
    if (this.#state !== "after") throw new Error("the JSON array is not closed");
  }
}

/** csv (with the delimiter), jsonl or json, from an output file name (stdout: json). */
export function outputFormatOf(file, inputDelimiter = ",") {
  if (!file || file === "-") return { format: "json" };
  if (/\.(tsv|tab)$/i.test(file)) return { format: "csv", delimiter: "\t" };
  if (/\.csv$/i.test(file)) return { format: "csv", delimiter: inputDelimiter === "\t" ? "," : inputDelimiter };
  if (/\.(jsonl|ndjson)$/i.test(file)) return { format: "jsonl" };
  return { format: "json" };
}

/**
 * Writes rows as they come: CSV needs its columns first. The output goes to `<file>.partial` and
 * is renamed into place by `close()`; `abort()` removes it, so a failed run leaves no half file.
 * Without a file the rows go to stdout as a JSON array.
 */
export function createRowWriter(file, { columns = [], delimiter } = {}) {
  const { format, delimiter: outDelimiter } = outputFormatOf(file, delimiter);
  const toStdout = !file || file === "-";
  const partial = toStdout ? undefined : `${file}.partial-${process.pid}`;
  const fd = toStdout ? undefined : fs.openSync(partial, "w");
  let buffer = "";
  let count = 0;
  const flush = () => {
    if (buffer === "") return;
    if (toStdout) process.stdout.write(buffer);
    else fs.writeSync(fd, buffer);
    buffer = "";
  };
  const out = (text) => {
    buffer += text;
    if (buffer.length >= 1 << 20) flush();
  };
  if (format === "csv") out(csvLine(columns, outDelimiter));
  else if (format === "json") out("[");
  return {
    format,
    write(record) {
      if (format === "csv") out(csvLine(columns.map((name) => record?.[name]), outDelimiter));
      else if (format === "jsonl") out(`${JSON.stringify(record)}\n`);
      else out(`${count === 0 ? "\n  " : ",\n  "}${JSON.stringify(record)}`);
      count++;
    },
    close() {
      if (format === "json") out(count === 0 ? "]\n" : "\n]\n");
      flush();
      if (!toStdout) {
        fs.closeSync(fd);
        fs.renameSync(partial, file);
      }
      return count;
    },
    abort() {
      if (toStdout) return;
      try {
        fs.closeSync(fd);
      } catch {}
      fs.rmSync(partial, { force: true });
    },
  };
}
