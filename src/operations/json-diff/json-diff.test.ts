import { createHash } from "node:crypto";
import fastJsonPatch from "fast-json-patch";
import { describe, expect, it } from "vitest";
import { canonicalJson } from "../../canonical-json.ts";
import { zodIssuesToFieldErrors } from "../../problem.ts";
import { applyPatch, jsonEqual } from "./apply-patch.ts";
import type { Json } from "./canonical.ts";
import { jsonDiff as jsonDiffOperation } from "./index.ts";
import { jsonDiff } from "./json-diff.ts";
import {
  type JsonDiffInput,
  type JsonDiffOutput,
  JsonDiffRequest,
  JsonDiffResponse,
  LCS_MAX_ITEMS,
  LCS_MAX_SQUARED_ITEMS,
  MAX_DOCUMENT_DEPTH,
} from "./schema.ts";

/** Parses the request with the schema (so defaults apply), runs the diff, and checks the answer's shape. */
function run(request: Record<string, unknown>): JsonDiffOutput {
  const output = jsonDiff(JsonDiffRequest.parse(request) as JsonDiffInput);
  JsonDiffResponse.parse(output);
  return output;
}

/** The field errors a request is rejected with; fails the test when the request is accepted. */
function fieldErrors(request: unknown) {
  const result = JsonDiffRequest.safeParse(request);
  if (result.success) throw new Error("expected the request to be rejected, but it was accepted");
  return zodIssuesToFieldErrors(result.error.issues);
}

const sha256 = (text: string) => `sha256:${createHash("sha256").update(text, "utf8").digest("hex")}`;

/** A value nested `depth` arrays deep: depth 1 is `[0]`. */
const nested = (depth: number): Json => {
  let value: Json = 0;
  for (let i = 0; i < depth; i++) value = [value];
  return value;
};

describe("request validation (answered 400 before any payment)", () => {
  it("applies the defaults: arrayMode index, moves on, no tests, maxChanges 1000", () => {
    expect(JsonDiffRequest.parse({ before: 1, after: 2 })).toEqual({
      before: 1,
      after: 2,
      arrayMode: "index",
      moves: true,
      testOldValues: false,
      maxChanges: 1000,
    });
  });

  it("requires before and after (null is a value) and rejects unknown properties", () => {
    expect(fieldErrors({ extra: true })).toEqual([
      { pointer: "/before", message: expect.any(String) },
      { pointer: "/after", message: expect.any(String) },
      { pointer: "/extra", message: "unknown property (not allowed)" },
    ]);
    expect(run({ before: null, after: null }).equal).toBe(true);
  });

  it("bounds maxChanges to whole numbers from 1 to 10000", () => {
    for (const maxChanges of [0, 10001, 1.5, "5"]) {
      expect(fieldErrors({ before: 1, after: 2, maxChanges }).map((e) => e.pointer)).toEqual(["/maxChanges"]);
    }
    expect(run({ before: 1, after: 2, maxChanges: 10000 }).stats.returned).toBe(1);
  });

  it('requires arrayKey with arrayMode "key" and refuses it otherwise', () => {
    expect(fieldErrors({ before: [], after: [], arrayMode: "key" })).toEqual([
      { pointer: "/arrayKey", message: 'required when arrayMode is "key"' },
    ]);
    expect(fieldErrors({ before: [], after: [], arrayKey: "id" })).toEqual([
      { pointer: "/arrayKey", message: 'only used with arrayMode "key" (arrayMode is "index")' },
    ]);
    expect(fieldErrors({ before: [], after: [], arrayMode: "fuzzy" }).map((e) => e.pointer)).toEqual([
      "/arrayMode",
    ]);
  });

  it("refuses lone UTF-16 surrogates in strings and keys (RFC 8785 cannot hash them), with their pointer", () => {
    expect(fieldErrors({ before: { a: ["ok", "\ud800"] }, after: { "b/\udc00": 1 } })).toEqual([
      { pointer: "/before/a/1", message: "contains a lone UTF-16 surrogate, which RFC 8785 cannot hash" },
      {
        pointer: "/after/b~1\udc00",
        message: "the key contains a lone UTF-16 surrogate, which RFC 8785 cannot hash",
      },
    ]);
    // A proper pair is fine.
    expect(run({ before: "😀", after: "\ud83d\ude00" }).equal).toBe(true);
  });

  it(`accepts documents nested ${MAX_DOCUMENT_DEPTH} levels and refuses one more, pointing where`, () => {
    expect(run({ before: nested(MAX_DOCUMENT_DEPTH), after: 1 }).stats.operations).toBe(1);
    const errors = fieldErrors({ before: 1, after: { a: nested(MAX_DOCUMENT_DEPTH) } });
    expect(errors).toEqual([
      {
        pointer: `/after/a${"/0".repeat(MAX_DOCUMENT_DEPTH - 1)}`,
        message: `nested deeper than ${MAX_DOCUMENT_DEPTH} levels of arrays and objects`,
      },
    ]);
  });

  describe('arrayMode "key"', () => {
    const keyed = (before: unknown, after: unknown) => ({ before, after, arrayMode: "key", arrayKey: "id" });

    it("refuses an item without the key, pointing at the item", () => {
      expect(fieldErrors(keyed({ items: [{ id: 1 }, { name: "x" }] }, []))).toEqual([
        {
          pointer: "/before/items/1",
          message: 'missing "id" (arrayMode "key" matches the items of this array by it)',
        },
      ]);
    });

    it("refuses duplicate key values, pointing at the second one", () => {
      expect(fieldErrors(keyed([], [{ id: "a" }, { id: 2 }, { id: "a" }, { id: 2.0 }]))).toEqual([
        {
          pointer: "/after/2/id",
          message: 'duplicate "id" "a" (also at index 0); items must be unique by "id"',
        },
        {
          pointer: "/after/3/id",
          message: 'duplicate "id" 2 (also at index 1); items must be unique by "id"',
        },
      ]);
      // The string "1" and the number 1 are different keys.
      expect(run(keyed([{ id: 1 }, { id: "1" }], [{ id: "1" }, { id: 1 }])).equal).toBe(false);
    });

    it("refuses key values that are not strings or numbers", () => {
      expect(
        fieldErrors(keyed([{ id: null }, { id: { n: 1 } }, { id: true }], [])).map((e) => e.pointer),
      ).toEqual(["/before/0/id", "/before/1/id", "/before/2/id"]);
    });

    it("refuses an array that mixes objects with other items", () => {
      expect(fieldErrors(keyed({ list: [{ id: 1 }, 5, [1]] }, {}))).toEqual([
        {
          pointer: "/before/list/1",
          message: 'arrayMode "key": this array holds objects, so every item must be an object with "id"',
        },
        {
          pointer: "/before/list/2",
          message: 'arrayMode "key": this array holds objects, so every item must be an object with "id"',
        },
      ]);
    });

    it("checks nested arrays and leaves arrays without objects alone", () => {
      const ok = { tags: ["a", "a", 1], rows: [{ id: 1, cells: [{ id: "x" }, { id: "y" }] }] };
      expect(JsonDiffRequest.safeParse(keyed(ok, ok)).success).toBe(true);
      const bad = { rows: [{ id: 1, cells: [{ id: "x" }, { id: "x" }] }] };
      expect(fieldErrors(keyed(bad, {})).map((e) => e.pointer)).toEqual(["/before/rows/0/cells/1/id"]);
    });
  });

  describe('arrayMode "lcs" bounds', () => {
    const lcs = (before: unknown, after: unknown) => ({ before, after, arrayMode: "lcs" });
    const items = (count: number) => Array.from({ length: count }, (_, i) => i);

    it(`refuses an array of more than ${LCS_MAX_ITEMS} items, pointing at it`, () => {
      expect(fieldErrors(lcs({ list: items(LCS_MAX_ITEMS + 1) }, []))).toEqual([
        {
          pointer: "/before/list",
          message: `this array has ${LCS_MAX_ITEMS + 1} items; arrayMode "lcs" aligns arrays of at most ${LCS_MAX_ITEMS} items (use "index" or "key")`,
        },
      ]);
      expect(run(lcs(items(LCS_MAX_ITEMS), items(LCS_MAX_ITEMS).reverse())).stats.operations).toBeGreaterThan(
        0,
      );
    });

    it("refuses documents whose arrays together exceed the alignment budget", () => {
      const side = Array.from({ length: 3 }, () => items(LCS_MAX_ITEMS));
      // 6 arrays of 2000 items: 24,000,000 squared items (plus the two outer arrays of 3).
      expect(fieldErrors(lcs(side, side))).toEqual([
        {
          pointer: "/arrayMode",
          message: `"lcs" allows a sum of squared array lengths of at most ${LCS_MAX_SQUARED_ITEMS} over both documents; these have 24000018 (use "index" or "key")`,
        },
      ]);
      expect(JsonDiffRequest.safeParse({ before: side, after: side }).success).toBe(true);
    });
  });

  it("lists at most 20 problems", () => {
    const before = Array.from({ length: 50 }, () => "\udfff");
    expect(fieldErrors({ before, after: 1 })).toHaveLength(20);
  });
});

describe("hashes", () => {
  it("are sha256 over the RFC 8785 canonical form", () => {
    const output = run({ before: { b: [1.5, "é", null], a: true }, after: {} });
    expect(output.beforeHash).toBe(sha256('{"a":true,"b":[1.5,"é",null]}'));
    expect(output.afterHash).toBe(sha256("{}"));
    expect(output.beforeHash).toBe(sha256(canonicalJson({ a: true, b: [1.5, "é", null] })));
  });

  it("never change with key order or number spelling", () => {
    const before = JSON.parse('{"n":1.0,"big":1E2,"z":-0,"nested":{"y":[0.50],"x":"\\u0041"}}');
    const after = JSON.parse('{"nested":{"x":"A","y":[5e-1]},"z":0,"big":100,"n":1}');
    const output = run({ before, after });
    expect(output).toMatchObject({ equal: true, patch: [], changes: [], truncated: false });
    expect(output.beforeHash).toBe(output.afterHash);
    expect(output.beforeHash).toBe(sha256('{"big":100,"n":1,"nested":{"x":"A","y":[0.5]},"z":0}'));
  });

  it("patchHash is the hash of the canonical patch (of [] when equal)", () => {
    expect(run({ before: [1], after: [1] }).patchHash).toBe(sha256("[]"));
    const output = run({ before: { a: 1, c: 3 }, after: { a: 2, b: [] } });
    expect(output.patchHash).toBe(sha256(canonicalJson(output.patch)));
  });

  it("numbers are IEEE doubles: digits beyond double precision do not make a difference", () => {
    const output = run({ before: JSON.parse("9007199254740993"), after: 9007199254740992 });
    expect(output.equal).toBe(true);
  });
});

describe("patch and changes", () => {
  it("the registry example is what the operation answers", () => {
    const example = jsonDiffOperation.example as { input: Record<string, unknown>; output: unknown };
    expect(run(example.input)).toEqual(example.output);
  });

  it("replaces the whole document when the types differ at the root", () => {
    expect(run({ before: 1, after: "1" })).toMatchObject({
      equal: false,
      patch: [{ op: "replace", path: "", value: "1" }],
      changes: [{ op: "replace", path: "", value: "1", previous: 1 }],
    });
    expect(run({ before: [1], after: { 0: 1 } }).patch).toEqual([
      { op: "replace", path: "", value: { 0: 1 } },
    ]);
  });

  it("escapes ~ and / in paths (RFC 6901) and handles the empty key", () => {
    const output = run({
      before: { "a/b": 1, "m~n": 1, "~1": 1, "": 1 },
      after: { "a/b": 2, "m~n": 2, "~1": 2, "": 2 },
    });
    expect(output.patch.map((op) => op.path)).toEqual(["/", "/a~1b", "/m~0n", "/~01"]);
  });

  it("orders object members by UTF-16 code units over both key sets, depth first", () => {
    const output = run({
      before: { b: 1, "😀": 1, a: { y: 1, x: 1 }, "\uffff": 1, B: 1 },
      after: { é: 1, a: { x: 2, z: 1 }, "\uffff": 2, b: 1, B: 2 },
    });
    expect(output.changes).toEqual([
      { op: "replace", path: "/B", value: 2, previous: 1 },
      { op: "replace", path: "/a/x", value: 2, previous: 1 },
      { op: "remove", path: "/a/y", previous: 1 },
      { op: "add", path: "/a/z", value: 1 },
      { op: "add", path: "/é", value: 1 },
      // U+1F600 is the surrogate pair D83D DE00, which sorts before U+FFFF in UTF-16.
      { op: "remove", path: "/😀", previous: 1 },
      { op: "replace", path: "/\uffff", value: 2, previous: 1 },
    ]);
  });

  it("distinguishes null from a missing member and replaces a value whose type changed", () => {
    expect(run({ before: { a: null }, after: {} }).patch).toEqual([{ op: "remove", path: "/a" }]);
    expect(run({ before: {}, after: { a: null } }).patch).toEqual([{ op: "add", path: "/a", value: null }]);
    expect(run({ before: { a: { b: 1 } }, after: { a: [1] } }).changes).toEqual([
      { op: "replace", path: "/a", value: [1], previous: { b: 1 } },
    ]);
  });

  it("treats __proto__ and constructor as ordinary members", () => {
    const before = JSON.parse('{"__proto__":{"x":1},"constructor":1}');
    const after = JSON.parse('{"__proto__":{"x":2},"prototype":1}');
    const output = run({ before, after });
    expect(JSON.parse(JSON.stringify(output.changes))).toEqual([
      { op: "replace", path: "/__proto__/x", value: 2, previous: 1 },
      { op: "remove", path: "/constructor", previous: 1 },
      { op: "add", path: "/prototype", value: 1 },
    ]);
    expect(Object.getPrototypeOf(applyPatch(before, output.patch) as object)).toBe(Object.prototype);
    expect(output.beforeHash).toBe(sha256('{"__proto__":{"x":1},"constructor":1}'));
  });

  it("leaves both documents untouched", () => {
    const before = { a: [1, { b: 2 }], c: "x" };
    const after = { a: [{ b: 3 }], d: "y" };
    const copies = JSON.stringify([before, after]);
    run({ before, after });
    expect(JSON.stringify([before, after])).toBe(copies);
  });

  describe('arrayMode "index"', () => {
    it("compares by position, adds new items in order and removes surplus items from the last backward", () => {
      expect(run({ before: [1, 2, 3, 4], after: [1, 9] }).changes).toEqual([
        { op: "replace", path: "/1", value: 9, previous: 2 },
        { op: "remove", path: "/3", previous: 4 },
        { op: "remove", path: "/2", previous: 3 },
      ]);
      expect(run({ before: [1], after: [0, 1, 2] }).patch).toEqual([
        { op: "replace", path: "/0", value: 0 },
        { op: "add", path: "/1", value: 1 },
        { op: "add", path: "/2", value: 2 },
      ]);
    });
  });

  describe('arrayMode "lcs"', () => {
    const lcs = (before: unknown, after: unknown) => run({ before, after, arrayMode: "lcs" });

    it("keeps the longest common subsequence in place and inserts around it", () => {
      expect(lcs([1, 2, 3], [0, 1, 2, 3, 4]).patch).toEqual([
        { op: "add", path: "/0", value: 0 },
        { op: "add", path: "/4", value: 4 },
      ]);
      expect(lcs(["a", "b", "c", "d", "e"], ["a", "d", "e"]).changes).toEqual([
        { op: "remove", path: "/2", previous: "c" },
        { op: "remove", path: "/1", previous: "b" },
      ]);
    });

    it("compares the items of a gap pairwise in place, then removes or adds the surplus", () => {
      const before = [{ id: 1, v: "a" }, "same", { id: 2, v: "b" }, { id: 3 }, "end"];
      const after = [{ id: 1, v: "A" }, "same", { id: 2, v: "B" }, "end", "new"];
      expect(lcs(before, after).changes).toEqual([
        { op: "replace", path: "/0/v", value: "A", previous: "a" },
        { op: "replace", path: "/2/v", value: "B", previous: "b" },
        { op: "remove", path: "/3", previous: { id: 3 } },
        { op: "add", path: "/4", value: "new" },
      ]);
    });

    it("moves an equal item instead of removing and adding it again", () => {
      const big = { name: "left-pad", version: "1.3.0", integrity: "sha512-abc" };
      expect(lcs([big, 1, 2, 3], [1, 2, 3, big]).patch).toEqual([{ op: "move", from: "/0", path: "/3" }]);
    });

    it("copies a value the document already holds where that is shorter than adding it", () => {
      const big = { name: "left-pad", version: "1.3.0", integrity: "sha512-abcdefghijklmnopqrstuvwxyz" };
      expect(lcs([big, 1], [big, 1, big]).patch).toEqual([{ op: "copy", from: "/0", path: "/2" }]);
      expect(run({ before: { a: big }, after: { a: big, b: big } }).patch).toEqual([
        { op: "copy", from: "/a", path: "/b" },
      ]);
    });

    it("matches items by canonical equality (key order does not matter)", () => {
      expect(lcs([7, { a: 1, b: 2 }, 5], [{ b: 2, a: 1 }]).patch).toEqual([
        { op: "remove", path: "/0" },
        { op: "remove", path: "/1" },
      ]);
    });
  });

  describe('arrayMode "key"', () => {
    const keyed = (before: unknown, after: unknown) =>
      run({ before, after, arrayMode: "key", arrayKey: "id" });

    it("matches items by key wherever they are and diffs them in place", () => {
      const before = [
        { id: "a", v: 1 },
        { id: "b", v: 1 },
        { id: "c", v: 1 },
      ];
      const after = [
        { id: "b", v: 2 },
        { id: "c", v: 1 },
        { id: "d", v: 1 },
      ];
      expect(keyed(before, after).changes).toEqual([
        { op: "remove", path: "/0", previous: { id: "a", v: 1 } },
        { op: "replace", path: "/0/v", value: 2, previous: 1 },
        { op: "add", path: "/2", value: { id: "d", v: 1 } },
      ]);
      // By index, the same arrays differ in every id.
      expect(run({ before, after }).stats.operations).toBe(4);
    });

    it("keeps the longest run in order and moves the rest (one move, not remove + add)", () => {
      const ids = (...list: number[]) => list.map((id) => ({ id }));
      expect(keyed(ids(1, 2, 3, 4), ids(4, 1, 2, 3)).patch).toEqual([{ op: "move", from: "/3", path: "/0" }]);
      expect(keyed(ids(1, 2, 3, 4), ids(2, 3, 4, 1)).patch).toEqual([{ op: "move", from: "/0", path: "/3" }]);
      // Moved without moves: the old answer, for appliers that know only add, remove and replace.
      const plain = run({
        before: ids(1, 2, 3, 4),
        after: ids(4, 1, 2, 3),
        arrayMode: "key",
        arrayKey: "id",
        moves: false,
      });
      expect(plain.patch).toEqual([
        { op: "add", path: "/0", value: { id: 4 } },
        { op: "remove", path: "/4" },
      ]);
    });

    it("a keyed item that moves and changes is one move plus the change inside it (issue 18)", () => {
      const before = {
        items: [
          { id: "a", name: "alpha", tags: ["x"], qty: 1 },
          { id: "b", name: "beta", tags: ["y"], qty: 2 },
          { id: "c", name: "gamma", tags: ["z"], qty: 3 },
        ],
      };
      const after = {
        items: [
          { id: "c", name: "gamma", tags: ["z"], qty: 30 },
          { id: "a", name: "alpha", tags: ["x"], qty: 1 },
          { id: "b", name: "beta", tags: ["y"], qty: 2 },
        ],
      };
      const output = keyed(before, after);
      expect(output.changes).toEqual([
        { op: "move", from: "/items/2", path: "/items/0" },
        { op: "replace", path: "/items/0/qty", value: 30, previous: 3 },
      ]);
      expect(output.stats).toMatchObject({ operations: 2, move: 1, replace: 1, add: 0, remove: 0 });
      const { newDocument } = fastJsonPatch.applyPatch(
        structuredClone(before),
        output.patch as never,
        true,
        false,
      );
      expect(newDocument).toEqual(after);
    });

    it("with testOldValues, test operations guard what is moved, removed and replaced", () => {
      const note = "a description long enough that moving it is shorter than writing it again";
      const before = [
        { id: 1, v: "a", note },
        { id: 2, v: "b", note },
        { id: 3, v: "gone" },
      ];
      const after = [
        { id: 2, v: "B", note },
        { id: 1, v: "a", note },
      ];
      const output = run({ before, after, arrayMode: "key", arrayKey: "id", testOldValues: true });
      expect(output.patch).toEqual([
        { op: "test", path: "/2", value: { id: 3, v: "gone" } },
        { op: "remove", path: "/2" },
        { op: "test", path: "/1/id", value: 2 },
        { op: "move", from: "/1", path: "/0" },
        { op: "test", path: "/0/v", value: "b" },
        { op: "replace", path: "/0/v", value: "B" },
      ]);
      // A tiny item is shorter to remove and add again than to move and change.
      const tiny = run({
        before: [{ id: 1 }, { id: 2, v: 1 }],
        after: [{ id: 2, v: 2 }, { id: 1 }],
        arrayMode: "key",
        arrayKey: "id",
      });
      expect(tiny.stats).toMatchObject({ move: 0 });
      // A guarded patch refuses a document that is not before.
      const other = [
        { id: 1, v: "a", note },
        { id: 2, v: "changed", note },
        { id: 3, v: "gone" },
      ];
      expect(() =>
        fastJsonPatch.applyPatch(structuredClone(other), output.patch as never, true, false),
      ).toThrow();
      expect(() => applyPatch(other as Json, output.patch as never)).toThrow(/test/);
    });

    it("compares arrays without objects by index", () => {
      expect(keyed({ tags: ["x", "y"] }, { tags: ["y"] }).patch).toEqual([
        { op: "replace", path: "/tags/0", value: "y" },
        { op: "remove", path: "/tags/1" },
      ]);
      expect(keyed([{ id: 1 }], [1]).patch).toEqual([{ op: "replace", path: "/0", value: 1 }]);
    });
  });
});

describe("truncation and stats", () => {
  const before = { a: 1, b: 2, c: 3, d: [1, 2, 3] };
  const after = { a: 0, c: 3, d: [1], e: 5 };

  it("counts every operation of the complete patch", () => {
    expect(run({ before, after })).toMatchObject({
      truncated: false,
      stats: { operations: 5, add: 1, remove: 3, replace: 1, returned: 5 },
    });
  });

  it("beyond maxChanges returns the first operations, says so, and keeps the complete patch's hash", () => {
    const complete = run({ before, after });
    const truncated = run({ before, after, maxChanges: 2 });
    expect(truncated).toEqual({
      ...complete,
      patch: complete.patch.slice(0, 2),
      changes: complete.changes.slice(0, 2),
      stats: { ...complete.stats, returned: 2 },
      truncated: true,
    });
    // The prefix applies to before, but it does not produce after.
    const partial = applyPatch(before, truncated.patch);
    expect(jsonEqual(partial, after)).toBe(false);
    expect(run({ before, after, maxChanges: 5 }).truncated).toBe(false);
  });
});

describe("the patch is standard RFC 6902", () => {
  it("fast-json-patch applies it and gets after", () => {
    const before = { list: [1, 2, 3, { k: "v" }], "a/b": { "~": 1 }, gone: true };
    const after = { list: [0, 2, { k: "w" }], "a/b": { "~": 2, new: [] } };
    for (const arrayMode of ["index", "lcs"]) {
      const { patch } = run({ before, after, arrayMode });
      const { newDocument } = fastJsonPatch.applyPatch(structuredClone(before), patch as never, true, false);
      expect(newDocument).toEqual(after);
    }
  });
});
