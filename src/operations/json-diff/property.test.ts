import fastJsonPatch from "fast-json-patch";
import { describe, expect, it } from "vitest";
import {
  makeKeyed,
  mutateJson,
  type Random,
  type RandomJsonOptions,
  randomJson,
  seededRandom,
  shuffleKeys,
} from "../../../test/helpers/random-json.ts";
import { canonicalJson } from "../../canonical-json.ts";
import { applyPatch, jsonEqual } from "./apply-patch.ts";
import { canonicalHash, type Json, sha256 } from "./canonical.ts";
import { jsonDiff } from "./json-diff.ts";
import { type JsonDiffInput, type JsonDiffOutput, JsonDiffRequest, JsonDiffResponse } from "./schema.ts";

const SEEDS = 250;
const MODES = ["index", "lcs", "key"] as const;
type Mode = (typeof MODES)[number];

const hashOf = (value: Json) => sha256(Buffer.from(canonicalJson(value), "utf8"));

/** A random pair: mostly an edited copy (the interesting case), sometimes two unrelated documents. */
function randomPair(random: Random, mode: Mode): { before: Json; after: Json } {
  const options: RandomJsonOptions = {
    maxDepth: 4,
    maxWidth: 6,
    trickyKeys: true,
    ...(mode === "key" ? { arrayKey: "id" } : {}),
  };
  let before = randomJson(random, options);
  let after =
    random() < 0.85
      ? mutateJson(random, before, 0.05 + random() * 0.3, options)
      : randomJson(random, options);
  if (mode === "key") {
    before = makeKeyed(random, before, "id");
    after = makeKeyed(random, after, "id");
  }
  return { before, after };
}

function diff(
  before: Json,
  after: Json,
  mode: Mode,
  maxChanges = 10000,
  options: { moves?: boolean; testOldValues?: boolean } = {},
): JsonDiffOutput {
  const request = JsonDiffRequest.parse({
    before,
    after,
    arrayMode: mode,
    ...(mode === "key" ? { arrayKey: "id" } : {}),
    maxChanges,
    ...options,
  });
  return jsonDiff(request as JsonDiffInput);
}

/** A deep copy in which items of every array change places (a few swaps per array). */
function shuffleArrays(random: Random, value: Json): Json {
  if (Array.isArray(value)) {
    const items = value.map((item) => shuffleArrays(random, item));
    for (let swaps = Math.floor(random() * 3); swaps > 0 && items.length > 1; swaps--) {
      const i = Math.floor(random() * items.length);
      const j = Math.floor(random() * items.length);
      [items[i], items[j]] = [items[j] as Json, items[i] as Json];
    }
    return items;
  }
  if (typeof value !== "object" || value === null) return value;
  const copy: { [key: string]: Json } = {};
  for (const key of Object.keys(value)) {
    Object.defineProperty(copy, key, {
      value: shuffleArrays(random, value[key] as Json),
      enumerable: true,
      writable: true,
      configurable: true,
    });
  }
  return copy;
}

/** Applies a patch with fast-json-patch (validating every operation) and returns the result. */
const applyIndependently = (document: Json, patch: JsonDiffOutput["patch"]) =>
  fastJsonPatch.applyPatch(structuredClone(document), patch as never, true, false).newDocument as Json;

/** Rewrites every number of a JSON text in another spelling of the same double. */
function respellNumbers(random: Random, value: Json): string {
  if (typeof value === "number") {
    const spellings = [String(value), value.toExponential(), value.toExponential().toUpperCase()];
    if (Number.isInteger(value) && Math.abs(value) < 1e15) spellings.push(`${value}.000`, `${value}e0`);
    return spellings[Math.floor(random() * spellings.length)] as string;
  }
  if (Array.isArray(value)) return `[${value.map((item) => respellNumbers(random, item)).join(" , ")}]`;
  if (typeof value === "object" && value !== null) {
    return `{${Object.keys(value)
      .map((key) => `${JSON.stringify(key)}:${respellNumbers(random, value[key] as Json)}`)
      .join(",")}}`;
  }
  return JSON.stringify(value);
}

/** The value at an RFC 6901 pointer (own members only, so "__proto__" is data). */
function valueAt(document: Json, pointer: string): Json | undefined {
  let value: Json | undefined = document;
  for (const raw of pointer === "" ? [] : pointer.slice(1).split("/")) {
    const token = raw.replaceAll("~1", "/").replaceAll("~0", "~");
    if (typeof value !== "object" || value === null || !Object.hasOwn(value, token)) return undefined;
    value = (value as Record<string, Json>)[token];
  }
  return value;
}

const hasProtoKey = (value: Json) => JSON.stringify(value).includes('"__proto__"');

describe.each(MODES)('property: random JSON pairs, arrayMode "%s"', (mode) => {
  it(`applying patch to before yields after, for ${SEEDS} random pairs`, () => {
    let operations = 0;
    for (let seed = 1; seed <= SEEDS; seed++) {
      const random = seededRandom(seed * 7919 + MODES.indexOf(mode));
      const { before, after } = randomPair(random, mode);
      const output = diff(before, after, mode);
      const context = `seed ${seed}: ${JSON.stringify({ before, after })}`;
      JsonDiffResponse.parse(output);
      operations += output.patch.length;

      // Our applier, and fast-json-patch as an independent one (it refuses __proto__ paths by design).
      expect(jsonEqual(applyPatch(before, output.patch), after), context).toBe(true);
      if (!hasProtoKey(before) && !hasProtoKey(after)) {
        const { newDocument } = fastJsonPatch.applyPatch(
          structuredClone(before),
          output.patch as never,
          true,
          false,
        );
        expect(canonicalJson(newDocument), context).toBe(canonicalJson(after));
      }

      // Hashes are those of the canonicalize package; equal ⇔ no operations ⇔ equal hashes.
      expect(output.beforeHash, context).toBe(hashOf(before));
      expect(output.afterHash, context).toBe(hashOf(after));
      expect(output.patchHash, context).toBe(hashOf(output.patch as Json));
      expect(output.equal, context).toBe(canonicalJson(before) === canonicalJson(after));
      expect(output.patch.length === 0, context).toBe(output.equal);

      // changes are the patch plus previous values, which are what the path held just before.
      const withoutPrevious = output.changes.map((change) => {
        const { previous: _previous, ...operation } = change as typeof change & { previous?: unknown };
        return operation;
      });
      expect(withoutPrevious, context).toEqual(output.patch);
      let state: Json = before;
      output.changes.forEach((change, index) => {
        if (change.op === "remove" || change.op === "replace") {
          const current = valueAt(state, change.path);
          expect(jsonEqual(current, change.previous), `${context} change ${index}`).toBe(true);
        }
        state = applyPatch(state, [output.patch[index] as never]);
      });
      expect(output.stats.operations).toBe(output.patch.length);
      const { add, remove, replace, move, copy, test } = output.stats;
      expect(add + remove + replace + move + copy + test).toBe(output.stats.operations);
    }
    expect(operations).toBeGreaterThan(SEEDS); // the generator does produce real differences
  });

  it("equal documents with reordered keys hash the same, and reordering never changes the answer", () => {
    for (let seed = 1; seed <= SEEDS; seed++) {
      const random = seededRandom(seed * 104729 + MODES.indexOf(mode));
      const { before, after } = randomPair(random, mode);
      const reordered = shuffleKeys(random, before);
      const same = diff(before, reordered, mode);
      expect(same.equal).toBe(true);
      expect(same.patch).toEqual([]);
      expect(same.beforeHash).toBe(same.afterHash);
      expect(canonicalHash(reordered)).toBe(canonicalHash(before));

      // Reordering the members of both documents gives the same answer (values keep their own member order).
      const original = diff(before, after, mode);
      const shuffled = diff(shuffleKeys(random, before), shuffleKeys(random, after), mode);
      expect(canonicalJson(shuffled)).toBe(canonicalJson(original));
    }
  });

  it("number spelling never changes a hash", () => {
    for (let seed = 1; seed <= SEEDS; seed++) {
      const random = seededRandom(seed * 31 + MODES.indexOf(mode));
      const { before } = randomPair(random, mode);
      const respelled = JSON.parse(respellNumbers(random, before)) as Json;
      const output = diff(before, respelled, mode);
      expect(output.equal, respellNumbers(random, before)).toBe(true);
    }
  });

  it("a truncated answer is a prefix of the complete one with the same patchHash", () => {
    for (let seed = 1; seed <= SEEDS; seed++) {
      const random = seededRandom(seed * 613 + MODES.indexOf(mode));
      const { before, after } = randomPair(random, mode);
      const complete = diff(before, after, mode);
      if (complete.patch.length < 2) continue;
      const maxChanges = 1 + Math.floor(random() * (complete.patch.length - 1));
      const truncated = diff(before, after, mode, maxChanges);
      expect(truncated.truncated).toBe(true);
      expect(truncated.patch).toEqual(complete.patch.slice(0, maxChanges));
      expect(truncated.changes).toEqual(complete.changes.slice(0, maxChanges));
      expect(truncated.patchHash).toBe(complete.patchHash);
      expect(truncated.stats).toEqual({ ...complete.stats, returned: maxChanges });
    }
  });
});

describe.each(["lcs", "key"] as const)('property: items that change places, arrayMode "%s"', (mode) => {
  it(`moves apply and verify, guarded or not, and are never longer than remove + add, for ${SEEDS} pairs`, () => {
    let moves = 0;
    for (let seed = 1; seed <= SEEDS; seed++) {
      const random = seededRandom(seed * 92821 + (mode === "key" ? 1 : 0));
      const pair = randomPair(random, mode);
      const before = pair.before;
      let after = shuffleArrays(random, random() < 0.5 ? before : pair.after);
      if (mode === "key") after = makeKeyed(random, after, "id");
      const context = `seed ${seed}: ${JSON.stringify({ before, after })}`;
      const output = diff(before, after, mode);
      JsonDiffResponse.parse(output);
      moves += output.stats.move;
      expect(jsonEqual(applyPatch(before, output.patch), after), context).toBe(true);
      if (!hasProtoKey(before) && !hasProtoKey(after)) {
        expect(canonicalJson(applyIndependently(before, output.patch)), context).toBe(canonicalJson(after));
      }
      expect(output.patchHash, context).toBe(hashOf(output.patch as Json));

      // Without moves the patch is add/remove/replace only, and not shorter.
      const plain = diff(before, after, mode, 10000, { moves: false });
      expect(plain.stats.move + plain.stats.copy, context).toBe(0);
      expect(canonicalJson(output.patch).length, context).toBeLessThanOrEqual(
        canonicalJson(plain.patch).length,
      );

      // Guarded: every remove, replace and move is preceded by a test, and the patch still applies.
      const guarded = diff(before, after, mode, 10000, { testOldValues: true });
      expect(guarded.stats.copy, context).toBe(0);
      expect(guarded.stats.test, context).toBe(
        guarded.stats.remove + guarded.stats.replace + guarded.stats.move,
      );
      expect(jsonEqual(applyPatch(before, guarded.patch), after), context).toBe(true);
      if (!hasProtoKey(before) && !hasProtoKey(after)) {
        expect(canonicalJson(applyIndependently(before, guarded.patch)), context).toBe(canonicalJson(after));
      }
    }
    expect(moves).toBeGreaterThan(SEEDS / 4); // the generator does move items
  });
});
