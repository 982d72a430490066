// The checks behind the scripts, as functions (the scripts are thin command-line wrappers). Every
// check works one row at a time, so the scripts stream files of any length.
import { validate } from "./schema.mjs";

const NUMBER = /^-?(?:0|[1-9]\d*)(?:\.\d+)?(?:[eE][+-]?\d+)?$/;
const isBlank = (value) => value === null || value === undefined || (typeof value === "string" && value.trim() === "");

/**
 * CSV cells are text: read them as the schema's property types say (numbers, integers,
 * booleans), and treat an empty cell as an absent property so `required` reports it.
 */
const propertyTypes = new WeakMap();
const NO_TYPES = [];
const typesOf = (schema, name) => {
  if (!schema || typeof schema !== "object") return NO_TYPES;
  let byName = propertyTypes.get(schema);
  if (!byName) {
    byName = new Map();
    propertyTypes.set(schema, byName);
  }
  let types = byName.get(name);
  if (types === undefined) {
    const property = schema.properties && Object.hasOwn(schema.properties, name) ? schema.properties[name] : undefined;
    types = [].concat(property?.type ?? []);
    if (byName.size < 10_000) byName.set(name, types);
  }
  return types;
};

export function coerceRow(row, schema) {
  const out = {};
  for (const name in row) {
    const value = row[name];
    const types = typesOf(schema, name);
    if (typeof value !== "string") out[name] = value;
    else if (value.trim() === "") {
      if (types.includes("null")) out[name] = null;
    } else if ((types.includes("number") || types.includes("integer")) && NUMBER.test(value.trim())) out[name] = Number(value.trim());
    else if (types.includes("boolean") && /^(true|false)$/i.test(value.trim())) out[name] = value.trim().toLowerCase() === "true";
    else out[name] = value;
  }
  return out;
}

/**
 * Validates rows one at a time: `add(row, index)`, then `result()` gives
 * `{ rows, invalidRows, errors }` with the first `maxErrors` errors (all are counted in `errorCount`).
 */
export function createRowValidator(schema, { coerce = false, maxErrors = Number.POSITIVE_INFINITY } = {}) {
  let rows = 0;
  let invalidRows = 0;
  let errorCount = 0;
  const errors = [];
  return {
    add(row, index = rows) {
      rows++;
      const found = validate(schema, coerce ? coerceRow(row, schema) : row);
      if (found.length === 0) return true;
      invalidRows++;
      errorCount += found.length;
      for (const error of found) {
        if (errors.length >= maxErrors) break;
        errors.push({ row: index, pointer: `/${index}${error.pointer}`, message: error.message });
      }
      return false;
    },
    result: () => ({ rows, invalidRows, errorCount, errors }),
  };
}

/** Validates every row; errors carry the row index in their pointer (/3/email). */
export function validateRows(rows, schema, { coerce = false } = {}) {
  const validator = createRowValidator(schema, { coerce });
  rows.forEach((row, index) => validator.add(row, index));
  const { errorCount, ...result } = validator.result();
  return result;
}

export const kindOf = (value) => {
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

const round = (n) => Math.round(n * 1e6) / 1e6;

/** A 32-bit hash of a string (FNV-1a, then murmur3's finaliser so every bit is mixed). */
function hash32(text) {
  let h = 0x811c9dc5;
  for (let i = 0; i < text.length; i++) {
    h ^= text.charCodeAt(i);
    h = Math.imul(h, 0x01000193);
  }
  h ^= h >>> 16;
  h = Math.imul(h, 0x85ebca6b);
  h ^= h >>> 13;
  h = Math.imul(h, 0xc2b2ae35);
  h ^= h >>> 16;
  return h >>> 0;
}

/** HyperLogLog with 2^14 registers (16 KB): distinct counts within about 1% in fixed memory. */
class DistinctEstimate {
  registers = new Uint8Array(1 << 14);
  add(text) {
    const h = hash32(text);
    const index = h >>> 18;
    const rank = Math.min(Math.clz32((h << 14) | (1 << 13)) + 1, 19);
    if (rank > this.registers[index]) this.registers[index] = rank;
  }
  estimate() {
    const m = this.registers.length;
    let sum = 0;
    let zeros = 0;
    for (const r of this.registers) {
      sum += 2 ** -r;
      if (r === 0) zeros++;
    }
    let e = ((0.7213 / (1 + 1.079 / m)) * m * m) / sum;
    if (e <= 2.5 * m && zeros > 0) e = m * Math.log(m / zeros);
    else if (e > 2 ** 32 / 30) e = -(2 ** 32) * Math.log(1 - e / 2 ** 32);
    return Math.round(e);
  }
}

/** Distinct values counted exactly per column up to this many; beyond, estimated (see README). */
export const EXACT_DISTINCT_LIMIT = 20_000;
/** Values a column's heavy-hitter summary tracks once its distinct values are estimated. */
export const HEAVY_HITTERS = 1_000;

/**
 * One column's profile, fed one value at a time in bounded memory: exact counts while the column
 * has at most `exactLimit` distinct values; past that, the distinct count is a HyperLogLog estimate
 * (`distinctExact: false`, `unique: null`) and the top values are the heavy hitters of a
 * Misra-Gries summary of HEAVY_HITTERS values (`topExact: false`; their counts are lower bounds).
 */
export class ColumnProfile {
  filled = 0;
  blank = 0;
  kinds = {};
  counts = new Map();
  exact = true;
  estimate;
  numeric = 0;
  min = Number.POSITIVE_INFINITY;
  max = Number.NEGATIVE_INFINITY;
  sum = 0;
  minLength = Number.POSITIVE_INFINITY;
  maxLength = 0;
  untrimmed = 0;
  constructor(name, { exactLimit = EXACT_DISTINCT_LIMIT, summarySize = Math.min(HEAVY_HITTERS, exactLimit) } = {}) {
    this.name = name;
    this.exactLimit = exactLimit;
    this.summarySize = summarySize;
  }

  add(value) {
    const kind = kindOf(value);
    this.kinds[kind] = (this.kinds[kind] ?? 0) + 1;
    if (kind === "blank") {
      this.blank++;
      return;
    }
    this.filled++;
    const text = typeof value === "string" ? value : undefined;
    const key = text !== undefined ? text.trim() : JSON.stringify(value);
    if (text !== undefined && text !== key) this.untrimmed++;
    this.#count(key);
    const n = Number(value);
    if (typeof n === "number" && Number.isFinite(n)) {
      this.numeric++;
      if (n < this.min) this.min = n;
      if (n > this.max) this.max = n;
      this.sum += n;
    }
    const length = String(value).length;
    if (length < this.minLength) this.minLength = length;
    if (length > this.maxLength) this.maxLength = length;
  }

  #count(key) {
    const counts = this.counts;
    const seen = counts.get(key);
    if (this.exact) {
      counts.set(key, (seen ?? 0) + 1);
      if (counts.size > this.exactLimit) {
        this.exact = false;
        this.estimate = new DistinctEstimate();
        for (const known of counts.keys()) this.estimate.add(known);
        // Keep the most frequent values so far as the start of the summary.
        const kept = [...counts].sort((a, b) => b[1] - a[1]).slice(0, this.summarySize);
        this.counts = new Map(kept);
      }
      return;
    }
    this.estimate.add(key);
    if (seen !== undefined) counts.set(key, seen + 1);
    else if (counts.size < this.summarySize) counts.set(key, 1);
    else {
      // Misra-Gries: a new value when the summary is full takes one from every tracked value.
      for (const [tracked, count] of counts) {
        if (count <= 1) counts.delete(tracked);
        else counts.set(tracked, count - 1);
      }
    }
  }

  result({ top = 5 } = {}) {
    const values = this.filled + this.blank;
    const distinct = this.exact ? this.counts.size : Math.max(this.estimate.estimate(), this.exactLimit);
    return {
      name: this.name,
      filled: this.filled,
      blank: this.blank,
      blankRate: values === 0 ? 0 : round(this.blank / values),
      distinct,
      distinctExact: this.exact,
      unique: this.exact ? this.counts.size === this.filled && this.filled > 0 : null,
      kinds: this.kinds,
      ...(this.numeric === this.filled && this.numeric > 0 ? { min: this.min, max: this.max, mean: round(this.sum / this.numeric) } : {}),
      ...(this.filled > 0 ? { minLength: this.minLength, maxLength: this.maxLength } : {}),
      untrimmed: this.untrimmed,
      top: topOf(this.counts, top),
      ...(this.exact ? {} : { topExact: false }),
    };
  }
}

/** The `top` most frequent entries of a count map (ties by value), without sorting the whole map. */
function topOf(counts, top) {
  const better = (a, b) => b[1] - a[1] || (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0);
  const best = [];
  for (const entry of counts) {
    if (best.length < top) {
      best.push(entry);
      best.sort(better);
    } else if (top > 0 && better(entry, best[best.length - 1]) < 0) {
      best[best.length - 1] = entry;
      best.sort(better);
    }
  }
  return best.map(([value, count]) => ({ value, count }));
}

/** Profiles rows as they stream: `add(row)`, then `result()`. Columns may be added as they appear. */
export function createProfiler(columns = [], { top = 5, exactLimit } = {}) {
  const profiles = new Map();
  let rows = 0;
  const column = (name) => {
    if (!profiles.has(name)) {
      const profile = new ColumnProfile(name, { exactLimit });
      // A column that appears late was blank in every earlier row.
      for (let i = 0; i < rows; i++) profile.add(undefined);
      profiles.set(name, profile);
    }
    return profiles.get(name);
  };
  for (const name of columns) column(name);
  return {
    addColumns(names) {
      for (const name of names) column(name);
    },
    add(row) {
      for (const [name, profile] of profiles) profile.add(row?.[name]);
      rows++;
    },
    result: () => ({ rows, columns: [...profiles.values()].map((profile) => profile.result({ top })) }),
  };
}

/** A profile per column: fill rate, distinct values, inferred kinds, numeric range, top values. */
export function profileRows(rows, columns, { top = 5 } = {}) {
  const profiler = createProfiler(columns, { top });
  for (const row of rows) profiler.add(row);
  return profiler.result();
}

/** "First Name", "firstName" and "first_name" → "first_name". */
export const snakeCase = (name) =>
  name
    .normalize("NFKC")
    .trim()
    .replace(/([a-z0-9])([A-Z])/g, "$1_$2")
    .replace(/[^A-Za-z0-9]+/g, "_")
    .replace(/^_|_$/g, "")
    .toLowerCase();

/**
 * Normalises rows one at a time: trims, folds inner whitespace, NFC; blank cells become null;
 * optional snake_case headers. Two different column names that become the same header would merge
 * two columns and lose values: that throws (an Error whose message names them), never merges.
 */
export function createNormaliser({ snakeCaseHeaders = false, blankToNull = true, dropBlankRows = true } = {}) {
  const renamed = new Map(); // original → new
  const origin = new Map(); // new → original
  const header = (name) => {
    if (!snakeCaseHeaders) return name;
    let target = renamed.get(name);
    if (target === undefined) {
      target = snakeCase(name);
      const earlier = origin.get(target);
      if (earlier !== undefined && earlier !== name) {
        const all = [...renamed].filter(([, t]) => t === target).map(([o]) => o);
        throw new Error(`--snake-case-headers would merge the columns ${[...all, name].map((n) => `"${n}"`).join(", ")} into "${target}"; rename them first`);
      }
      renamed.set(name, target);
      origin.set(target, name);
    }
    return target;
  };
  let blankRowsDropped = 0;
  return {
    header,
    /** Checks a whole header up front (CSV), so a collision stops the run before any row. */
    columns(names) {
      if (snakeCaseHeaders) {
        const groups = new Map();
        for (const name of new Set(names)) groups.set(snakeCase(name), [...(groups.get(snakeCase(name)) ?? []), name]);
        const merged = [...groups].filter(([, originals]) => originals.length > 1);
        if (merged.length > 0) {
          const list = merged.map(([target, originals]) => `${originals.map((n) => `"${n}"`).join(", ")} into "${target}"`);
          throw new Error(`--snake-case-headers would merge the columns ${list.join("; ")}; rename them first`);
        }
      }
      return names.map(header);
    },
    /** The normalised row, or undefined when it is blank and dropped. */
    row(row) {
      const normalised = {};
      let blank = true;
      for (const name in row) {
        let cell = row[name];
        if (typeof cell === "string") cell = cell.normalize("NFC").replace(/\s+/g, " ").trim();
        if (blankToNull && cell === "") cell = null;
        if (!isBlank(cell)) blank = false;
        normalised[header(name)] = cell;
      }
      if (dropBlankRows && blank) {
        blankRowsDropped++;
        return undefined;
      }
      return normalised;
    },
    get blankRowsDropped() {
      return blankRowsDropped;
    },
  };
}

/** Trims, folds inner whitespace, NFC-normalises text; blank cells become null; optional snake_case headers. */
export function normaliseRows(rows, options = {}) {
  const normaliser = createNormaliser(options);
  const out = [];
  for (const row of rows) {
    const normalised = normaliser.row(row);
    if (normalised !== undefined) out.push(normalised);
  }
  return { rows: out, blankRowsDropped: normaliser.blankRowsDropped };
}

/** The comparison key of a row on key columns (trimmed, NFC, optionally case-folded). */
export function keyOf(row, keyColumns, { caseInsensitive = true } = {}) {
  return JSON.stringify(
    keyColumns.map((name) => {
      const value = row?.[name];
      if (typeof value !== "string") return value ?? null;
      const text = value.normalize("NFC").trim();
      return caseInsensitive ? text.toUpperCase().toLowerCase() : text;
    }),
  );
}

/**
 * Finds duplicates as rows stream: `add(row, index)` returns the index of the first row with the
 * same key, or undefined. Memory: one entry per distinct key.
 */
export function createDeduper(keyColumns, { caseInsensitive = true } = {}) {
  const seen = new Map();
  return {
    add(row, index) {
      const key = keyOf(row, keyColumns, { caseInsensitive });
      const first = seen.get(key);
      if (first !== undefined) return first;
      seen.set(key, index);
      return undefined;
    },
  };
}

/** Keeps the first row per key (key columns compared trimmed, NFC, optionally case-folded). */
export function dedupeRows(rows, keyColumns, { caseInsensitive = true } = {}) {
  const deduper = createDeduper(keyColumns, { caseInsensitive });
  const kept = [];
  const duplicates = [];
  rows.forEach((row, index) => {
    const duplicateOf = deduper.add(row, index);
    if (duplicateOf !== undefined) duplicates.push({ index, duplicateOf });
    else kept.push(row);
  });
  return { rows: kept, duplicates };
}
