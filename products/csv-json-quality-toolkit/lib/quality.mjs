// The checks behind the scripts, as functions (the scripts are thin command-line wrappers).
import { validate } from "./schema.mjs";

const NUMBER = /^-?(?:0|[1-9]\d*)(?:\.\d+)?(?:[eE][+-]?\d+)?$/;
const isBlank = (value) => value === null || value === undefined || (typeof value === "string" && value.trim() === "");

/**
 * CSV cells are text: read them as the schema's property types say (numbers, integers,
 * booleans), and treat an empty cell as an absent property so `required` reports it.
 */
export function coerceRow(row, schema) {
  const out = {};
  for (const [name, value] of Object.entries(row)) {
    const types = [].concat(schema?.properties?.[name]?.type ?? []);
    if (typeof value !== "string") out[name] = value;
    else if (value.trim() === "") {
      if (types.includes("null")) out[name] = null;
    } else if ((types.includes("number") || types.includes("integer")) && NUMBER.test(value.trim())) out[name] = Number(value.trim());
    else if (types.includes("boolean") && /^(true|false)$/i.test(value.trim())) out[name] = value.trim().toLowerCase() === "true";
    else out[name] = value;
  }
  return out;
}

/** Validates every row; errors carry the row index in their pointer (/3/email). */
export function validateRows(rows, schema, { coerce = false } = {}) {
  const errors = [];
  rows.forEach((row, index) => {
    const value = coerce ? coerceRow(row, schema) : row;
    for (const error of validate(schema, value)) errors.push({ row: index, pointer: `/${index}${error.pointer}`, message: error.message });
  });
  return { rows: rows.length, invalidRows: new Set(errors.map((e) => e.row)).size, errors };
}

const kindOf = (value) => {
  if (isBlank(value)) return "blank";
  if (typeof value === "number") return Number.isInteger(value) ? "integer" : "number";
  if (typeof value === "boolean") return "boolean";
  if (typeof value === "object") return Array.isArray(value) ? "array" : "object";
  const text = value.trim();
  if (/^-?\d+$/.test(text)) return "integer";
  if (NUMBER.test(text)) return "number";
  if (/^(true|false)$/i.test(text)) return "boolean";
  if (/^\d{4}-\d{2}-\d{2}$/.test(text)) return "date";
  if (/^\d{4}-\d{2}-\d{2}T/.test(text) && !Number.isNaN(Date.parse(text))) return "date-time";
  if (/^[^\s@]+@[^\s@]+\.[^\s@]+$/.test(text)) return "email";
  return "string";
};

/** A profile per column: fill rate, distinct values, inferred kinds, numeric range, top values. */
export function profileRows(rows, columns, { top = 5 } = {}) {
  const result = { rows: rows.length, columns: [] };
  for (const name of columns) {
    const values = rows.map((row) => row?.[name]);
    const present = values.filter((value) => !isBlank(value));
    const kinds = {};
    for (const value of values) kinds[kindOf(value)] = (kinds[kindOf(value)] ?? 0) + 1;
    const counts = new Map();
    for (const value of present) {
      const key = typeof value === "string" ? value.trim() : JSON.stringify(value);
      counts.set(key, (counts.get(key) ?? 0) + 1);
    }
    const numbers = present.map((value) => Number(value)).filter((n) => typeof n === "number" && Number.isFinite(n));
    const lengths = present.map((value) => String(value).length);
    result.columns.push({
      name,
      filled: present.length,
      blank: values.length - present.length,
      blankRate: values.length === 0 ? 0 : round((values.length - present.length) / values.length),
      distinct: counts.size,
      unique: counts.size === present.length && present.length > 0,
      kinds,
      ...(numbers.length === present.length && numbers.length > 0
        ? { min: Math.min(...numbers), max: Math.max(...numbers), mean: round(numbers.reduce((a, b) => a + b, 0) / numbers.length) }
        : {}),
      ...(lengths.length > 0 ? { minLength: Math.min(...lengths), maxLength: Math.max(...lengths) } : {}),
      untrimmed: present.filter((value) => typeof value === "string" && value !== value.trim()).length,
      top: [...counts].sort((a, b) => b[1] - a[1] || (a[0] < b[0] ? -1 : 1)).slice(0, top).map(([value, count]) => ({ value, count })),
    });
  }
  return result;
}

const round = (n) => Math.round(n * 1e6) / 1e6;

/** Trims, folds inner whitespace, NFC-normalises text; blank cells become null; optional snake_case headers. */
export function normaliseRows(rows, { snakeCaseHeaders = false, blankToNull = true, dropBlankRows = true } = {}) {
  const header = (name) =>
    snakeCaseHeaders
      ? name.normalize("NFKC").trim().replace(/([a-z0-9])([A-Z])/g, "$1_$2").replace(/[^A-Za-z0-9]+/g, "_").replace(/^_|_$/g, "").toLowerCase()
      : name;
  const out = [];
  let blankRows = 0;
  for (const row of rows) {
    const normalised = {};
    for (const [name, value] of Object.entries(row)) {
      let cell = value;
      if (typeof cell === "string") cell = cell.normalize("NFC").replace(/\s+/g, " ").trim();
      if (blankToNull && cell === "") cell = null;
      normalised[header(name)] = cell;
    }
    if (dropBlankRows && Object.values(normalised).every(isBlank)) {
      blankRows++;
      continue;
    }
    out.push(normalised);
  }
  return { rows: out, blankRowsDropped: blankRows };
}

/** Keeps the first row per key (key columns compared trimmed, NFC, optionally case-folded). */
export function dedupeRows(rows, keyColumns, { caseInsensitive = true } = {}) {
  const keyOf = (row) =>
    JSON.stringify(
      keyColumns.map((name) => {
        const value = row[name];
        if (typeof value !== "string") return value ?? null;
        const text = value.normalize("NFC").trim();
        return caseInsensitive ? text.toUpperCase().toLowerCase() : text;
      }),
    );
  const seen = new Map();
  const kept = [];
  const duplicates = [];
  rows.forEach((row, index) => {
    const key = keyOf(row);
    if (seen.has(key)) duplicates.push({ index, duplicateOf: seen.get(key) });
    else {
      seen.set(key, index);
      kept.push(row);
    }
  });
  return { rows: kept, duplicates };
}
