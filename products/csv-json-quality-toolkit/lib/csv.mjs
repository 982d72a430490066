// RFC 4180 CSV: quoted fields, doubled quotes, CRLF or LF, a leading UTF-8 BOM. No dependencies.

/** Parses CSV text into rows of strings. Throws on an unterminated quoted field. */
export function parseCsvRows(text, { delimiter = "," } = {}) {
  const rows = [];
  let row = [];
  let field = "";
  let quoted = false;
  let i = text.charCodeAt(0) === 0xfeff ? 1 : 0;
  for (; i < text.length; i++) {
    const c = text[i];
    if (quoted) {
      if (c === '"') {
        if (text[i + 1] === '"') {
          field += '"';
          i++;
        } else quoted = false;
      } else field += c;
    } else if (c === '"' && field === "") quoted = true;
    else if (c === delimiter) {
      row.push(field);
      field = "";
    } else if (c === "\n" || c === "\r") {
      if (c === "\r" && text[i + 1] === "\n") i++;
      row.push(field);
      rows.push(row);
      row = [];
      field = "";
    } else field += c;
  }
  if (quoted) throw new Error("unterminated quoted field at the end of the input");
  if (field !== "" || row.length > 0) {
    row.push(field);
    rows.push(row);
  }
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

/** Serialises objects as CSV (header from `columns` or the union of keys in first-seen order). */
export function toCsv(records, { columns, delimiter = "," } = {}) {
  const header = columns ?? [...new Set(records.flatMap((record) => Object.keys(record)))];
  const cell = (value) => {
    if (value === null || value === undefined) return "";
    const text = typeof value === "object" ? JSON.stringify(value) : String(value);
    return needsQuotes(text, delimiter) ? `"${text.replaceAll('"', '""')}"` : text;
  };
  return [header, ...records.map((record) => header.map((name) => record[name]))]
    .map((cells, index) => (index === 0 ? cells.map(cell) : cells.map(cell)).join(delimiter))
    .join("\r\n")
    .concat("\r\n");
}
