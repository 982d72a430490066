import fc from "fast-check";
import { MAX_PAYMENT_DEPTH, MAX_PAYMENT_VALUES } from "../../src/payments/resource-server/payload-bounds.ts";

/*
 * The class of hostile payment payloads (issue 33, item 5): a real payment with, at any position of it
 * (the payload itself, `accepted`, `accepted.extra`, `resource`, `payload.authorization`, `extensions`,
 * any leaf), a value nested far deeper than a payment is, an array or object with more values than a
 * payment holds, or a prototype key (`__proto__`, `constructor`, `prototype`). Built as JSON text: a
 * value 60,000 levels deep cannot even be serialized by JSON.stringify.
 */

type Json = null | boolean | number | string | Json[] | { [key: string]: Json };
type Path = (string | number)[];

/** One hostile payload: its JSON text and what was done to the real one (a fast-check counterexample names it). */
export interface HostilePayload {
  text: string;
  what: string;
}

const MARK = "\u0000hostile\u0000";
const PROTOTYPE_KEYS = ["__proto__", "constructor", "prototype"] as const;

/** Every position of a JSON value: the path of each node, the root's `[]` first. */
function positions(value: Json, path: Path = []): { path: Path; container: boolean }[] {
  if (value === null || typeof value !== "object") return [{ path, container: false }];
  const children = Array.isArray(value)
    ? value.flatMap((item, index) => positions(item, [...path, index]))
    : Object.entries(value).flatMap(([key, item]) => positions(item, [...path, key]));
  return [{ path, container: true }, ...children];
}

/** `base` with the hostile text at `path` (replacing the node, or under a new key of the object there). */
function splice(base: Json, path: Path, newKey: string | undefined, hostile: string): string {
  const copy = structuredClone(base) as Json;
  let node = copy as Record<string | number, Json>;
  const parents = newKey === undefined ? path.slice(0, -1) : path;
  for (const step of parents) node = node[step] as Record<string | number, Json>;
  if (newKey === undefined) node[path[path.length - 1] as string | number] = MARK;
  // A computed key: `__proto__` stays an own key here, as JSON.parse makes it.
  else
    Object.defineProperty(node, newKey, {
      value: MARK,
      enumerable: true,
      configurable: true,
      writable: true,
    });
  return JSON.stringify(copy).replace(JSON.stringify(MARK), hostile);
}

/** A value nested `depth` levels deep in `budget` characters at most (arrays, objects, or both alternately). */
const deepValue = (budget: number) =>
  fc
    .record({
      form: fc.constantFrom("array", "object", "mixed"),
      share: fc.double({ min: 0, max: 1, noNaN: true }),
    })
    .map(({ form, share }) => {
      const perLevel = form === "array" ? 2 : form === "object" ? 6 : 4;
      const most = Math.min(60_000, Math.floor(budget / perLevel));
      const depth = MAX_PAYMENT_DEPTH + 1 + Math.floor(share * (most - MAX_PAYMENT_DEPTH - 1));
      const open = (level: number) =>
        form === "array" || (form === "mixed" && level % 2 === 0) ? "[" : '{"k":';
      const close = (level: number) => (open(level) === "[" ? "]" : "}");
      const opens = Array.from({ length: depth }, (_, level) => open(level)).join("");
      const closes = Array.from({ length: depth }, (_, level) => close(depth - 1 - level)).join("");
      return { text: `${opens}1${closes}`, what: `${form} nested ${depth} deep` };
    });

/** An array or object of more values than a payment may hold, in `budget` characters at most. */
const wideValue = (budget: number) =>
  fc
    .record({ form: fc.constantFrom("array", "object"), share: fc.double({ min: 0, max: 1, noNaN: true }) })
    .filter(({ form }) => Math.floor(budget / (form === "array" ? 2 : 8)) > MAX_PAYMENT_VALUES)
    .map(({ form, share }) => {
      const most = Math.min(100_000, Math.floor(budget / (form === "array" ? 2 : 8)));
      const count = MAX_PAYMENT_VALUES + 1 + Math.floor(share * (most - MAX_PAYMENT_VALUES - 1));
      const text =
        form === "array"
          ? `[${Array(count).fill(0).join(",")}]`
          : `{${Array.from({ length: count }, (_, i) => `"${i.toString(36)}":0`).join(",")}}`;
      return { text, what: `${form} of ${count} values` };
    });

/** An object with a prototype key whose value is a small object, the payment's own resource, or a string. */
const prototypeValue = fc
  .record({
    key: fc.constantFrom(...PROTOTYPE_KEYS),
    value: fc.constantFrom('{"url":"mcp://tool/json-diff"}', '{"polluted":true}', '"x"', "{}"),
  })
  .map(({ key, value }) => ({ text: `{"${key}":${value}}`, what: `{"${key}": ${value}}`, key, value }));

/**
 * Hostile forms of `base` (a real payment payload, as JSON) whose text is at most about `budget`
 * characters longer than the payment's: what fits a door (an MCP message of 320 KiB, a header of 16 KiB).
 */
export function hostilePayloads(base: Json, budget: number): fc.Arbitrary<HostilePayload> {
  const places = positions(base);
  const objects = places.filter(({ path, container }) => {
    let node = base as Json;
    for (const step of path) node = (node as Record<string | number, Json>)[step] as Json;
    return container && node !== null && !Array.isArray(node);
  });
  const at = (path: Path) => `/${path.join("/")}`;
  const wide = budget / (MAX_PAYMENT_VALUES + 1) >= 2;
  const values = fc.oneof(deepValue(budget), ...(wide ? [wideValue(budget)] : []));
  const replaced = fc
    .record({ place: fc.constantFrom(...places.filter(({ path }) => path.length > 0)), value: values })
    .map(({ place, value }) => ({
      text: splice(base, place.path, undefined, value.text),
      what: `${at(place.path)} replaced by ${value.what}`,
    }));
  const added = fc
    .record({ place: fc.constantFrom(...objects), key: fc.string({ maxLength: 8 }), value: values })
    .filter(({ place, key }) => !(key in (pathValue(base, place.path) as object)))
    .map(({ place, key, value }) => ({
      text: splice(base, place.path, key, value.text),
      what: `${at(place.path)} given ${JSON.stringify(key)}: ${value.what}`,
    }));
  const prototypes = fc
    .record({ place: fc.constantFrom(...objects), value: prototypeValue, wrap: fc.boolean() })
    .map(({ place, value, wrap }) =>
      // The prototype key beside the object's own keys, or an object of it in place of a child.
      wrap && place.path.length > 0
        ? {
            text: splice(base, place.path, undefined, value.text),
            what: `${at(place.path)} replaced by ${value.what}`,
          }
        : {
            text: splice(base, place.path, value.key, value.value),
            what: `${at(place.path)} given "${value.key}": ${value.value}`,
          },
    );
  // A counterexample is reported by what was done, not by its text (up to 300 KB).
  return fc
    .oneof(replaced, added, prototypes)
    .map((hostile) => Object.assign(hostile, { [fc.toStringMethod]: () => hostile.what }));
}

function pathValue(value: Json, path: Path): Json {
  let node = value;
  for (const step of path) node = (node as Record<string | number, Json>)[step] as Json;
  return node;
}

/** The seed of a generated run: FC_SEED to repeat one, else a new one (printed by the caller). */
export const runSeed = () => (process.env.FC_SEED ? Number(process.env.FC_SEED) : Date.now() % 2 ** 31);
