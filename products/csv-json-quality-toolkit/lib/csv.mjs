// RFC 4180 CSV: quoted fields, doubled quotes, CRLF, LF or CR, a leading UTF-8 BOM, any one-character
// delimiter. Streams: text is pushed in pieces of any size and rows come out as soon as they are
// complete, so a file of millions of rows is read in bounded memory. No dependencies.

/** Delimiters that detection considers, most common first (a tie goes to the earlier one). */
export const DETECTED_DELIMITERS = [",", ";", "\t", "|"];

/** `tab`, `\t`, `semicolon`, `comma`, `pipe` or one character → the delimiter; undefined when unusable. */
export function delimiterFromName(name) {
  const named = { tab: "\t", "\\t": "\t", semicolon: ";", comma: ",", pipe: "|" }[String(name).toLowerCase()];
  if (named) return named;
  return typeof name === "string" && name.length === 1 && !/["\r\n]/.test(name) ? name : undefined;
}

/**
 * The delimiter of a CSV text from its first line (outside quotes): the candidate that occurs most
 * often, "," when none occurs.
 */
export function detectDelimiter(text) {
  const counts = new Map(DETECTED_DELIMITERS.map((d) => [d, 0]));
  let quoted = false;
  for (let i = text.charCodeAt(0) === 0xfeff ? 1 : 0; i < text.length; i++) {
    const c = text[i];
    if (c === '"') quoted = !quoted;
    else if (!quoted && (c === "\n" || c === "\r")) break;
    else if (!quoted && counts.has(c)) counts.set(c, counts.get(c) + 1);
  }
  let best = ",";
  for (const [d, n] of counts) if (n > counts.get(best)) best = d;
  return best;
}

const LF = 10;
const CR = 13;
const QUOTE = 34;

// Where the parser is between two characters. Kept across pushes, so a piece may end anywhere: inside
// a quoted field, between the two quotes of an escaped one, between CR and LF.
const FIELD_START = 0;
const UNQUOTED = 1;
const QUOTED = 2;
const QUOTE_IN_QUOTED = 3; // a quote inside a quoted field: the next character says closing or escaped
const AFTER_QUOTED = 4; // text after a closing quote, kept as it stands (lenient) up to the delimiter

/**
 * A streaming CSV parser. `push(text)` as often as needed, in pieces cut anywhere, then `end()`.
 * `onRow(cells, row)` gets each record's fields and its 1-based ordinal (the header is row 1). An
 * empty line is a record of one empty field. An unterminated quoted field at the end throws.
 */
export class CsvParser {
  #cells = [];
  #field = "";
  #state = FIELD_START;
  #afterCr = false; // the last piece ended with a CR line end: an LF first in the next one belongs to it
  #row = 0;
  #started = false;
  constructor({ delimiter = ",", onRow }) {
    if (typeof delimiter !== "string" || delimiter.length !== 1) throw new Error(`a delimiter is one character, not "${delimiter}"`);
    this.delimiter = delimiter;
    this.delimiterCode = delimiter.charCodeAt(0);
    this.onRow = onRow;
  }

  push(text) {
    if (text.length === 0) return;
    let i = 0;
    if (!this.#started) {
      this.#started = true;
      if (text.charCodeAt(0) === 0xfeff) i = 1;
    }
    if (this.#afterCr) {
      this.#afterCr = false;
      if (text.charCodeAt(i) === LF) i++;
    }
    this.#scan(text, i);
  }

  end() {
    if (this.#state === QUOTED) throw new Error(`unterminated quoted field in row ${this.#row + 1}`);
    // Nothing is pending right after a line end (or in an empty input); otherwise the last record
    // has no line end, and a delimiter just before the end leaves one empty field.
    if (this.#state !== FIELD_START || this.#cells.length > 0) {
      this.#cells.push(this.#field);
      this.#emit();
    }
    this.#state = FIELD_START;
    this.#field = "";
  }

  #scan(text, from) {
    const length = text.length;
    const delimiter = this.delimiterCode;
    let i = from;
    while (i < length) {
      const state = this.#state;
      if (state === FIELD_START) {
        if (text.charCodeAt(i) === QUOTE) {
          this.#state = QUOTED;
          i++;
        } else this.#state = UNQUOTED;
      } else if (state === QUOTED) {
        const close = text.indexOf('"', i);
        if (close === -1) {
          this.#field += text.slice(i);
          return;
        }
        if (close > i) this.#field += text.slice(i, close);
        this.#state = QUOTE_IN_QUOTED;
        i = close + 1;
      } else if (state === QUOTE_IN_QUOTED) {
        if (text.charCodeAt(i) === QUOTE) {
          this.#field += '"';
          this.#state = QUOTED;
          i++;
        } else this.#state = AFTER_QUOTED;
      } else {
        // UNQUOTED or AFTER_QUOTED: text up to the delimiter or a line end.
        let end = i;
        let c = 0;
        while (end < length) {
          c = text.charCodeAt(end);
          if (c === delimiter || c === LF || c === CR) break;
          end++;
        }
        if (end > i) this.#field += text.slice(i, end);
        if (end === length) return;
        this.#cells.push(this.#field);
        this.#field = "";
        this.#state = FIELD_START;
        i = end + 1;
        if (c === delimiter) continue;
        this.#emit();
        if (c === CR) {
          if (i === length) this.#afterCr = true;
          else if (text.charCodeAt(i) === LF) i++;
        }
      }
    }
  }

  #emit() {
    const cells = this.#cells;
    this.#cells = [];
    this.#row++;
    this.onRow(cells, this.#row);
  }
}

/** Parses CSV text into rows of strings. Throws on an unterminated quoted field. */
export function parseCsvRows(text, { delimiter = "," } = {}) {
  const rows = [];
  const parser = new CsvParser({ delimiter, onRow: (cells) => rows.push(cells) });
  parser.push(text);
  parser.end();
  return rows;
}

/** Parses CSV with a header row into objects; ragged rows are reported, not silently padded. */
export function parseCsv(text, options = {}) {
  const [header = [], ...body] = parseCsvRows(text, options);
  const problems = [];
  const seen = new Set();
  for (const name of header) {
    if (seen.has(name)) problems.push({ row: 1, message: `duplicate column name "${name}"` });
    seen.add(name);
  }
  const records = [];
  body.forEach((cells, index) => {
    if (cells.length === 1 && cells[0] === "") return; // an empty line
    if (cells.length !== header.length) {
      problems.push({ row: index + 2, message: `${cells.length} fields, the header has ${header.length}` });
    }
    records.push(Object.fromEntries(header.map((name, column) => [name, cells[column] ?? ""])));
  });
  return { columns: header, records, problems };
}

const needsQuotes = (text, delimiter) =>
  text.includes(delimiter) || text.includes('"') || text.includes("\n") || text.includes("\r") || text !== text.trim();

/** One CSV cell: null/undefined empty, objects as JSON, quoted when it must be. */
export function csvCell(value, delimiter = ",") {
  if (value === null || value === undefined) return "";
  const text = typeof value === "object" ? JSON.stringify(value) : String(value);
  return needsQuotes(text, delimiter) ? `"${text.replaceAll('"', '""')}"` : text;
}

/** One CSV line (with CRLF) from cells. */
export const csvLine = (cells, delimiter = ",") => `${cells.map((cell) => csvCell(cell, delimiter)).join(delimiter)}\r\n`;

/** Serialises objects as CSV (header from `columns` or the union of keys in first-seen order). */
export function toCsv(records, { columns, delimiter = "," } = {}) {
  const header = columns ?? [...new Set(records.flatMap((record) => Object.keys(record)))];
  return [csvLine(header, delimiter), ...records.map((record) => csvLine(header.map((name) => record[name]), delimiter))].join("");
}
