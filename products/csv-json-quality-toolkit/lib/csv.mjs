// RFC 4180 CSV: quoted fields, doubled quotes, CRLF, LF or CR, a leading UTF-8 BOM, any one-character
// delimiter. Streams: text is pushed in pieces of any size and rows come out as soon as they are
// complete, so a file of millions of rows is read in bounded memory. No dependencies.

/** Delimiters that detection considers, most common first (a tie goes to the earlier one). */
export const DETECTED_DELIMITERS = [",", ";", "\t", "|"];

/** `tab`, `\t`, `semicolon`, `comma`, `pipe` or one character → the delimiter; undefined when unusable. */
export function delimiterFromName(name) {
  const named = { tab: "\t", "\\t": "\t", semicolon: ";", comma: ",", pipe: "|" }[String(name).toLowerCase()];
  if (named) return named;
  return typeof name === "string" && [...name].length === 1 && !/["\r\n]/.test(name) ? name : undefined;
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

/**
 * A streaming CSV parser. `push(text)` as often as needed, then `end()`. `onRow(cells, row)` gets
 * each record's fields and its 1-based ordinal (the header is row 1). An empty line is a record of
 * one empty field. An unterminated quoted field at the end throws.
 */
export class CsvParser {
  #pending = "";
  #row = 0;
  #started = false;
  constructor({ delimiter = ",", onRow }) {
    if ([...delimiter].length !== 1) throw new Error(`a delimiter is one character, not "${delimiter}"`);
    this.delimiter = delimiter;
    this.delimiterCode = delimiter.charCodeAt(0);
    this.onRow = onRow;
  }

  push(text) {
    if (!this.#started && text.length > 0) {
      this.#started = true;
      if (text.charCodeAt(0) === 0xfeff) text = text.slice(1);
    }
    this.#pending = this.#pending.length > 0 ? this.#pending + text : text;
    this.#parse(false);
  }

  end() {
    this.#parse(true);
    this.#pending = "";
  }

  /** Parses every complete record of the pending text; keeps an incomplete last one for the next push. */
  #parse(final) {
    const text = this.#pending;
    const length = text.length;
    const delimiter = this.delimiterCode;
    let i = 0;
    records: while (i < length) {
      const recordStart = i;
      const cells = [];
      for (;;) {
        // One field, starting at i.
        let value;
        if (text.charCodeAt(i) === QUOTE) {
          let from = i + 1;
          value = "";
          for (;;) {
            const close = text.indexOf('"', from);
            if (close === -1 || (close === length - 1 && !final)) {
              if (!final) break records; // the rest arrives with the next push
              throw new Error(`unterminated quoted field in row ${this.#row + 1}`);
            }
            if (text.charCodeAt(close + 1) === QUOTE) {
              value += `${text.slice(from, close)}"`;
              from = close + 2;
            } else {
              value += text.slice(from, close);
              i = close + 1;
              break;
            }
          }
          // Text after the closing quote, up to the delimiter, is kept as it stands (lenient).
          const rest = i;
          while (i < length) {
            const c = text.charCodeAt(i);
            if (c === delimiter || c === LF || c === CR) break;
            i++;
          }
          if (i > rest) value += text.slice(rest, i);
        } else {
          const start = i;
          while (i < length) {
            const c = text.charCodeAt(i);
            if (c === delimiter || c === LF || c === CR) break;
            i++;
          }
          value = text.slice(start, i);
        }
        if (i >= length) {
          if (!final) {
            i = recordStart;
            break records;
          }
          cells.push(value);
          this.#emit(cells);
          i = length;
          break records;
        }
        const c = text.charCodeAt(i);
        cells.push(value);
        if (c === delimiter) {
          i++;
          if (i >= length && final) {
            cells.push("");
            this.#emit(cells);
            break records;
          }
          continue;
        }
        // A line end: CRLF needs to see the next character.
        if (c === CR && i + 1 >= length && !final) {
          i = recordStart;
          break records;
        }
        i += c === CR && text.charCodeAt(i + 1) === LF ? 2 : 1;
        this.#emit(cells);
        continue records;
      }
    }
    this.#pending = i >= length ? "" : text.slice(i);
    if (final && this.#pending.length > 0) throw new Error(`unterminated quoted field in row ${this.#row + 1}`);
  }

  #emit(cells) {
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
