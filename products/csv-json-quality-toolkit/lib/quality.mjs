// The checks behind the scripts, as functions (the scripts are thin command-line wrappers). Every
// check works one row at a time, so the scripts stream files of any length.
import { isEmail, validate } from "./schema.mjs";

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
  const out = Object.create(null);
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
  if (isEmail(text)) return "email";
  return "string";
};

const round = (n) => Math.round(n * 1e6) / 1e6;

/** A 32-bit hash of a string (FNV-1a from `seed`, then murmur3's finaliser so every bit is mixed). */
function hash32(text, seed = 0) {
  let h = 0x811c9dc5 ^ seed;
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

/** HyperLogLog with 2^precision registers (one byte each): distinct counts in fixed memory, within about 1.04/√registers. */
class DistinctEstimate {
  constructor(precision = 14) {
    this.precision = precision;
    this.registers = new Uint8Array(1 << precision);
  }
  add(text) {
    const p = this.precision;
    const h = hash32(text);
    const index = h >>> (32 - p);
    const rank = Math.min(Math.clz32((h << p) | (1 << (p - 1))) + 1, 33 - p);
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
 * What the value counts of all the columns of one profile may take together, in bytes as estimated
 * by valueCost: a wide file shares it between its columns instead of multiplying it by them.
 */
export const VALUE_BUDGET_BYTES = 24 * 2 ** 20;
/** What the HyperLogLog registers of all columns may take together (precision falls for very wide files). */
const ESTIMATE_BUDGET_BYTES = 16 * 2 ** 20;
/** Heap bytes one counted value costs: its characters (two bytes at worst), the string and Map entry overhead. */
const valueCost = (key) => 2 * key.length + 96;

/**
 * The memory the value counts of a profile's columns share. While the counts take more than
 * `limit`, the column with the largest exact counts is switched to an estimate (and a summary
 * that keeps at most its share, `summaryBytes()`), so columns with few values stay exact.
 */
class ValueBudget {
  used = 0;
  profiles = [];
  constructor(limit = VALUE_BUDGET_BYTES) {
    this.limit = limit;
  }
  /** One column's share of half the budget, for its summary once estimated. */
  summaryBytes() {
    return Math.floor(this.limit / 2 / Math.max(1, this.profiles.length));
  }
  /** HyperLogLog precision such that every column's registers fit ESTIMATE_BUDGET_BYTES (4 to 14). */
  precision() {
    return Math.max(4, Math.min(14, Math.floor(Math.log2(ESTIMATE_BUDGET_BYTES / Math.max(1, this.profiles.length)))));
  }
  /**
   * Switches the largest exact columns to estimates until the counts take at most 15/16 of the
   * limit. Freeing a sixteenth at once (one sort of the columns) instead of the single largest
   * column per call keeps a file of 80,000 columns from scanning them all for every new value.
   */
  relieve() {
    const target = this.limit - this.limit / 16;
    if (this.used <= target) return;
    const exact = this.profiles.filter((profile) => profile.exact).sort((a, b) => b.bytes - a.bytes);
    for (const profile of exact) {
      if (this.used <= target) return;
      profile.estimateFromNowOn();
    }
  }
}

/**
 * One column's profile, fed one value at a time in bounded memory: exact counts while the column
 * has at most `exactLimit` distinct values and the profile's value budget holds; past that, the
 * distinct count is a HyperLogLog estimate (`distinctExact: false`, `unique: null`) and the top
 * values are the heavy hitters of a Misra-Gries summary of at most HEAVY_HITTERS values
 * (`topExact: false`; their counts are lower bounds).
 */
export class ColumnProfile {
  filled = 0;
  blank = 0;
  kinds = {};
  counts = new Map();
  bytes = 0; // valueCost of the counted values
  exact = true;
  estimate;
  numeric = 0;
  min = Number.POSITIVE_INFINITY;
  max = Number.NEGATIVE_INFINITY;
  sum = 0;
  minLength = Number.POSITIVE_INFINITY;
  maxLength = 0;
  untrimmed = 0;
  constructor(name, { exactLimit = EXACT_DISTINCT_LIMIT, summarySize = Math.min(HEAVY_HITTERS, exactLimit), budget = new ValueBudget() } = {}) {
    this.name = name;
    this.exactLimit = exactLimit;
    this.summarySize = summarySize;
    this.budget = budget;
    budget.profiles.push(this);
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

  /** `count` blank values at once (a column that appears late was blank in every earlier row). */
  addBlanks(count) {
    if (count === 0) return;
    this.blank += count;
    this.kinds.blank = (this.kinds.blank ?? 0) + count;
  }

  #track(key, count) {
    // A copy: a cell sliced from a read of the file would keep the whole read (a megabyte) alive.
    if (key.length >= 13) key = ` ${key}`.slice(1);
    const cost = valueCost(key);
    this.counts.set(key, count);
    this.bytes += cost;
    this.budget.used += cost;
    if (this.budget.used > this.budget.limit) this.budget.relieve();
  }

  #untrack(key) {
    const cost = valueCost(key);
    this.counts.delete(key);
    this.bytes -= cost;
    this.budget.used -= cost;
  }

  #count(key) {
    const counts = this.counts;
    const seen = counts.get(key);
    if (this.exact) {
      if (seen !== undefined) counts.set(key, seen + 1);
      else {
        this.#track(key, 1);
        if (this.exact && this.counts.size > this.exactLimit) this.estimateFromNowOn();
      }
      return;
    }
    this.estimate.add(key);
    if (seen !== undefined) counts.set(key, seen + 1);
    else if (counts.size < this.summarySize && this.bytes + valueCost(key) <= this.budget.summaryBytes()) this.#track(key, 1);
    else {
      // Misra-Gries: a new value when the summary is full takes one from every tracked value.
      for (const [tracked, count] of counts) {
        if (count <= 1) this.#untrack(tracked);
        else counts.set(tracked, count - 1);
      }
    }
  }

  /** Switches from exact counts to an estimate and a summary of the most frequent values so far. */
  estimateFromNowOn() {
    if (!this.exact) return;
    this.exact = false;
    this.distinctWhenExact = this.counts.size;
    this.estimate = new DistinctEstimate(this.budget.precision());
    for (const known of this.counts.keys()) this.estimate.add(known);
    const sorted = [...this.counts].sort((a, b) => b[1] - a[1]);
    for (const [key] of sorted) this.#untrack(key);
    const room = this.budget.summaryBytes();
    for (const [key, count] of sorted) {
      if (this.counts.size >= this.summarySize || this.bytes + valueCost(key) > room) break;
      this.#track(key, count);
    }
  }

  result({ top = 5 } = {}) {
    const values = this.filled + this.blank;
    const distinct = this.exact ? this.counts.size : Math.max(this.estimate.estimate(), this.distinctWhenExact);
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
export function createProfiler(columns = [], { top = 5, exactLimit, valueBudgetBytes } = {}) {
  const profiles = new Map();
  const budget = new ValueBudget(valueBudgetBytes);
  let rows = 0;
  const column = (name) => {
    if (!profiles.has(name)) {
      profiles.set(name, new ColumnProfile(name, { exactLimit, budget }));
    }
    return profiles.get(name);
  };
  for (const name of columns) column(name);
  return {
    addColumns(names) {
      for (const name of names) column(name);
    },
    // Only the row's own values are visited (a sparse JSON row with 3 of 100,000 known columns costs
    // 3, not 100,000); a column a row does not have is counted blank when the result is asked for.
    add(row) {
      if (row !== null && typeof row === "object") {
        for (const name in row) profiles.get(name)?.add(row[name]);
      }
      rows++;
    },
    result() {
      for (const profile of profiles.values()) profile.addBlanks(rows - profile.filled - profile.blank);
      return { rows, columns: [...profiles.values()].map((profile) => profile.result({ top })) };
    },
    /** What the value counts take (valueCost bytes): at most the budget, whatever the columns. */
    valueBytes: () => budget.used,
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
      const normalised = Object.create(null);
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

/** Bytes of one piece of KeyIndex's key store (a longer key gets a piece of its own). */
const KEY_PIECE_BYTES = 1 << 24;

/**
 * Text keys → the first row index that had each, in 16 bytes per slot (23 to 46 bytes per key)
 * plus each key's UTF-8 bytes (a Map of strings takes about 100 bytes per short key). Keys are compared byte for byte,
 * so two different keys are never taken for one; the 32-bit hash that places them is seeded per
 * run, so no file can be made to collide on purpose.
 */
export class KeyIndex {
  #seed = (Math.random() * 2 ** 32) >>> 0;
  #capacity = 1 << 10;
  #hashes = new Uint32Array(this.#capacity);
  #refs = new Uint32Array(this.#capacity); // piece * KEY_PIECE_BYTES + offset (256 pieces: 4 GB of keys)
  #lengths = new Uint32Array(this.#capacity);
  #firsts = new Uint32Array(this.#capacity); // the first row index + 1; 0: an empty slot
  #size = 0;
  #pieces = [Buffer.alloc(KEY_PIECE_BYTES)];
  #used = 0; // bytes used in the last piece
  #scratch = Buffer.alloc(1024);

  get size() {
    return this.#size;
  }

  /** The index stored for `key`, or undefined after storing `index` for it. */
  firstOrAdd(key, index) {
    if (this.#scratch.length < key.length * 3 + 1) this.#scratch = Buffer.alloc(key.length * 3 + 1);
    // UTF-8 would turn every lone surrogate into U+FFFD (two keys into one): those keys are stored
    // as UTF-16 after a 0xFF byte, which no UTF-8 holds.
    let length;
    if (key.isWellFormed()) length = this.#scratch.write(key, 0);
    else {
      this.#scratch[0] = 0xff;
      length = 1 + this.#scratch.write(key, 1, "utf16le");
    }
    const hash = hash32(key, this.#seed);
    const mask = this.#capacity - 1;
    let slot = hash & mask;
    while (this.#firsts[slot] !== 0) {
      if (this.#hashes[slot] === hash && this.#lengths[slot] === length && this.#equals(slot, length)) return this.#firsts[slot] - 1;
      slot = (slot + 1) & mask;
    }
    this.#hashes[slot] = hash;
    this.#lengths[slot] = length;
    this.#refs[slot] = this.#store(length);
    this.#firsts[slot] = index + 1;
    if (++this.#size > this.#capacity * 0.7) this.#grow();
    return undefined;
  }

  #equals(slot, length) {
    const ref = this.#refs[slot];
    const piece = this.#pieces[Math.floor(ref / KEY_PIECE_BYTES)];
    const offset = ref % KEY_PIECE_BYTES;
    return this.#scratch.compare(piece, offset, offset + length, 0, length) === 0;
  }

  /** Copies the scratch key into the store; its reference. */
  #store(length) {
    if (length > KEY_PIECE_BYTES - this.#used) {
      if (this.#pieces.length >= 2 ** 32 / KEY_PIECE_BYTES) throw new Error("more than 4 GB of distinct keys");
      this.#pieces.push(Buffer.alloc(Math.max(KEY_PIECE_BYTES, length)));
      this.#used = 0;
    }
    const ref = (this.#pieces.length - 1) * KEY_PIECE_BYTES + this.#used;
    this.#scratch.copy(this.#pieces[this.#pieces.length - 1], this.#used, 0, length);
    // A key longer than a piece fills its own; the next key starts a new one.
    this.#used = length > KEY_PIECE_BYTES ? KEY_PIECE_BYTES : this.#used + length;
    return ref;
  }

  #grow() {
    const old = { hashes: this.#hashes, refs: this.#refs, lengths: this.#lengths, firsts: this.#firsts };
    this.#capacity *= 2;
    this.#hashes = new Uint32Array(this.#capacity);
    this.#refs = new Uint32Array(this.#capacity);
    this.#lengths = new Uint32Array(this.#capacity);
    this.#firsts = new Uint32Array(this.#capacity);
    const mask = this.#capacity - 1;
    for (let i = 0; i < old.firsts.length; i++) {
      if (old.firsts[i] === 0) continue;
      let slot = old.hashes[i] & mask;
      while (this.#firsts[slot] !== 0) slot = (slot + 1) & mask;
      this.#hashes[slot] = old.hashes[i];
      this.#refs[slot] = old.refs[i];
      this.#lengths[slot] = old.lengths[i];
      this.#firsts[slot] = old.firsts[i];
    }
  }
}

/**
 * Finds duplicates as rows stream: `add(row, index)` returns the index of the first row with the
 * same key, or undefined. Memory: one entry per distinct key (KeyIndex: 23 to 46 bytes and the key's bytes).
 */
export function createDeduper(keyColumns, { caseInsensitive = true } = {}) {
  const seen = new KeyIndex();
  let blankKeyRows = 0;
  return {
    add(row, index) {
      // A blank key ("", spaces, null, missing) says nothing about the row: two rows without an
      // email are not one contact, so such a row is never a duplicate, only counted.
      if (keyColumns.some((name) => isBlank(row?.[name]))) {
        blankKeyRows++;
        return undefined;
      }
      return seen.firstOrAdd(keyOf(row, keyColumns, { caseInsensitive }), index);
    },
    /** Rows kept because a key column was blank. */
    get blankKeyRows() {
      return blankKeyRows;
    },
  };
}

/** Keeps the first row per key (key columns compared trimmed, NFC, optionally case-folded); rows with a blank key are all kept. */
export function dedupeRows(rows, keyColumns, { caseInsensitive = true } = {}) {
  const deduper = createDeduper(keyColumns, { caseInsensitive });
  const kept = [];
  const duplicates = [];
  rows.forEach((row, index) => {
    const duplicateOf = deduper.add(row, index);
    if (duplicateOf !== undefined) duplicates.push({ index, duplicateOf });
    else kept.push(row);
  });
  return { rows: kept, duplicates, blankKeyRows: deduper.blankKeyRows };
}
