import type { Json } from "../../src/operations/json-diff/canonical.ts";

/**
 * Seeded random JSON for the property tests and the benchmark: the same seed gives the same
 * documents on every machine. Not used by the service itself.
 */

/** mulberry32: a small, fast 32-bit PRNG; returns floats in [0, 1). */
export function seededRandom(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

export type Random = () => number;

const int = (random: Random, below: number) => Math.floor(random() * below);
const pick = <T>(random: Random, items: readonly T[]): T => items[int(random, items.length)] as T;

/** Keys that break naive pointer or object handling, mixed with ordinary ones. */
const TRICKY_KEYS = [
  "",
  "~",
  "/",
  "~1",
  "~0",
  "a/b",
  "m~n",
  "__proto__",
  "constructor",
  "0",
  "10",
  "é",
  "😀",
  " ",
];
const PLAIN_KEYS = ["a", "b", "c", "id", "name", "value", "items", "x", "y", "z", "tags", "Z", "aa"];
const STRINGS = [
  "",
  "a",
  "b",
  "hello",
  "ünïcödé",
  "😀",
  'quote"s',
  "back\\slash",
  "line\nbreak",
  "\u0000",
  "0",
  "1",
];
const NUMBERS = [
  0,
  -0,
  1,
  -1,
  2,
  0.5,
  1e21,
  1e-7,
  -123.456,
  9007199254740991,
  2 ** 53,
  5e-324,
  1.7976931348623157e308,
];

export interface RandomJsonOptions {
  /** Containers nest at most this deep below the value. */
  maxDepth: number;
  /** Most items of an array / members of an object. */
  maxWidth: number;
  /** Use keys such as "~1", "/" and "__proto__". */
  trickyKeys: boolean;
  /** When set, arrays of objects give every item a unique value of this member (arrayMode "key"). */
  arrayKey?: string;
}

export function randomScalar(random: Random): Json {
  switch (int(random, 5)) {
    case 0:
      return null;
    case 1:
      return random() < 0.5;
    case 2:
      return random() < 0.5 ? pick(random, NUMBERS) : int(random, 1000) - 500;
    default:
      return random() < 0.5 ? pick(random, STRINGS) : `s${int(random, 100)}`;
  }
}

const randomKey = (random: Random, options: RandomJsonOptions) =>
  options.trickyKeys && random() < 0.3 ? pick(random, TRICKY_KEYS) : pick(random, PLAIN_KEYS);

let keyCounter = 0;
/** A key value not used before in this process (strings and numbers alike). */
const freshKey = (random: Random): string | number =>
  random() < 0.5 ? ++keyCounter * 7 : `k${++keyCounter}`;

export function randomJson(random: Random, options: RandomJsonOptions, depth = 0): Json {
  if (depth >= options.maxDepth || random() < 0.3) return randomScalar(random);
  const width = int(random, options.maxWidth + 1);
  if (random() < 0.5) {
    if (options.arrayKey !== undefined && random() < 0.5) {
      return Array.from({ length: width }, () => keyedItem(random, options, depth + 1));
    }
    return Array.from({ length: width }, () => randomJson(random, options, depth + 1));
  }
  return randomObject(random, options, depth, width);
}

function randomObject(random: Random, options: RandomJsonOptions, depth: number, width: number) {
  const object: { [key: string]: Json } = {};
  for (let i = 0; i < width; i++)
    setMember(object, randomKey(random, options), randomJson(random, options, depth + 1));
  return object;
}

function keyedItem(random: Random, options: RandomJsonOptions, depth: number): Json {
  const item = randomObject(random, options, depth, int(random, 3));
  setMember(item, options.arrayKey as string, freshKey(random));
  return item;
}

/** Own data property, even for "__proto__". */
function setMember(object: { [key: string]: Json }, key: string, value: Json): void {
  Object.defineProperty(object, key, { value, writable: true, enumerable: true, configurable: true });
}

const isObject = (value: Json): value is { [key: string]: Json } =>
  typeof value === "object" && value !== null && !Array.isArray(value);

/**
 * A changed deep copy: each value is changed with probability `rate` (a scalar replaced, a member
 * added, removed or renamed, an array item inserted, removed, replaced or moved). The key member of
 * keyed items (options.arrayKey) keeps its value, so items still match; run makeKeyed afterwards
 * to restore the rules of arrayMode "key".
 */
export function mutateJson(
  random: Random,
  value: Json,
  rate: number,
  options: RandomJsonOptions,
  depth = 0,
): Json {
  if (random() < rate && (typeof value !== "object" || value === null || random() < 0.3)) {
    return random() < 0.7 ? randomScalar(random) : randomJson(random, options, depth);
  }
  if (Array.isArray(value)) {
    const items = value.map((item) => mutateJson(random, item, rate, options, depth + 1));
    if (random() < rate)
      items.splice(int(random, items.length + 1), 0, randomJson(random, options, depth + 1));
    if (random() < rate && items.length > 0) items.splice(int(random, items.length), 1);
    if (random() < rate && items.length > 1) {
      const [moved] = items.splice(int(random, items.length), 1);
      items.splice(int(random, items.length + 1), 0, moved as Json);
    }
    return items;
  }
  if (isObject(value)) {
    const copy: { [key: string]: Json } = {};
    for (const key of Object.keys(value)) {
      if (key === options.arrayKey) {
        setMember(copy, key, value[key] as Json);
        continue;
      }
      if (random() < rate / 2) continue; // removed
      const child = mutateJson(random, value[key] as Json, rate, options, depth + 1);
      setMember(copy, random() < rate / 4 ? randomKey(random, options) : key, child);
    }
    if (random() < rate) setMember(copy, randomKey(random, options), randomJson(random, options, depth + 1));
    return copy;
  }
  return value;
}

/**
 * A deep copy that follows the rules of arrayMode "key" for `key`: an array holding any object
 * holds only objects, each with a unique string or number `key` (new ones where missing or taken).
 */
export function makeKeyed(random: Random, value: Json, key: string): Json {
  if (Array.isArray(value)) {
    const items = value.map((item) => makeKeyed(random, item, key));
    if (!items.some(isObject)) return items;
    const seen = new Set<string>();
    return items.map((item) => {
      const object = isObject(item) ? item : { value: item };
      const id = object[key];
      const idText = typeof id === "string" ? `s${id}` : typeof id === "number" ? `n${id}` : undefined;
      if (idText === undefined || seen.has(idText)) {
        const fresh = freshKey(random);
        setMember(object, key, fresh);
        seen.add(typeof fresh === "string" ? `s${fresh}` : `n${fresh}`);
      } else seen.add(idText);
      return object;
    });
  }
  if (!isObject(value)) return value;
  const copy: { [key: string]: Json } = {};
  for (const member of Object.keys(value))
    setMember(copy, member, makeKeyed(random, value[member] as Json, key));
  return copy;
}

/** A deep copy with every object's members in a random order (the same document to RFC 8785). */
export function shuffleKeys(random: Random, value: Json): Json {
  if (Array.isArray(value)) return value.map((item) => shuffleKeys(random, item));
  if (!isObject(value)) return value;
  const keys = Object.keys(value);
  for (let i = keys.length - 1; i > 0; i--) {
    const j = int(random, i + 1);
    [keys[i], keys[j]] = [keys[j] as string, keys[i] as string];
  }
  const copy: { [key: string]: Json } = {};
  for (const key of keys) setMember(copy, key, shuffleKeys(random, value[key] as Json));
  return copy;
}

/**
 * A realistic document of about `bytes` bytes of JSON text: an array of records (strings,
 * numbers, booleans, a nested object, a small array), like an API export.
 */
export function recordsDocument(random: Random, bytes: number): Json {
  const records: Json[] = [];
  let size = 2;
  for (let id = 0; size < bytes; id++) {
    const record: Json = {
      id,
      sku: `SKU-${(id * 7919) % 100000}`,
      name: `Item ${id} ${pick(random, ["alpha", "beta", "gamma", "delta"])}`,
      price: Math.round(random() * 100000) / 100,
      stock: int(random, 500),
      active: random() < 0.8,
      tags: Array.from({ length: 1 + int(random, 3) }, () =>
        pick(random, ["new", "sale", "eco", "bulk", "rare"]),
      ),
      dimensions: { w: int(random, 100), h: int(random, 100), d: int(random, 100), unit: "mm" },
      supplier: { id: `SUP-${int(random, 1000)}`, country: pick(random, ["DE", "FR", "US", "JP", "BR"]) },
      updated: new Date(1_700_000_000_000 + int(random, 1e10)).toISOString(),
    };
    size += JSON.stringify(record).length + 1;
    records.push(record);
  }
  return { version: 3, generated: "2025-01-01T00:00:00.000Z", records };
}

/** Counts the scalars (leaves) of a document. */
export function countLeaves(value: Json): number {
  if (typeof value !== "object" || value === null) return 1;
  let count = 0;
  for (const child of Array.isArray(value) ? value : Object.values(value)) count += countLeaves(child);
  return count;
}

/** A deep copy in which `fraction` of the leaves (chosen at random) hold a different value of the same type. */
export function changeLeaves(random: Random, value: Json, fraction: number): Json {
  if (typeof value !== "object" || value === null) {
    if (random() >= fraction) return value;
    if (typeof value === "number") return value + 1;
    if (typeof value === "string") return `${value}*`;
    if (typeof value === "boolean") return !value;
    return 0;
  }
  if (Array.isArray(value)) return value.map((item) => changeLeaves(random, item, fraction));
  const copy: { [key: string]: Json } = {};
  for (const key of Object.keys(value))
    setMember(copy, key, changeLeaves(random, value[key] as Json, fraction));
  return copy;
}
