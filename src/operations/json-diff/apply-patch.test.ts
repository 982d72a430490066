import { describe, expect, it } from "vitest";
import { seededRandom } from "../../../test/helpers/random-json.ts";
import { applyPatch, jsonEqual, PatchError, type PatchOp } from "./apply-patch.ts";
import type { Json } from "./canonical.ts";

/** Recursively freezes a value so any in-place mutation throws (ESM code runs in strict mode). */
function deepFreeze<T>(value: T): T {
  if (value !== null && typeof value === "object") {
    for (const key of Reflect.ownKeys(value)) deepFreeze((value as Record<PropertyKey, unknown>)[key]);
    Object.freeze(value);
  }
  return value;
}

describe("applyPatch (RFC 6902 add, remove, replace)", () => {
  it("adds, removes and replaces members and items in order", () => {
    const document = deepFreeze({ a: 1, list: [1, 2, 3], nested: { x: [{ y: 1 }] } });
    const patch: PatchOp[] = [
      { op: "replace", path: "/a", value: 2 },
      { op: "add", path: "/b", value: { c: [] } },
      { op: "add", path: "/b/c/0", value: "first" },
      { op: "remove", path: "/list/0" },
      { op: "add", path: "/list/2", value: 4 },
      { op: "add", path: "/list/-", value: 5 },
      { op: "replace", path: "/nested/x/0/y", value: null },
      { op: "add", path: "/a", value: 3 }, // add on an existing member replaces it
    ];
    expect(applyPatch(document, patch)).toEqual({
      a: 3,
      b: { c: ["first"] },
      list: [2, 3, 4, 5],
      nested: { x: [{ y: null }] },
    });
  });

  it("never modifies the document or the values in the patch", () => {
    const document = deepFreeze({ a: { b: [1, 2] } });
    const value = deepFreeze({ inner: [1] });
    const result = applyPatch(document, [
      { op: "add", path: "/v", value },
      { op: "add", path: "/v/inner/-", value: 2 },
      { op: "remove", path: "/a/b/0" },
    ]);
    expect(result).toEqual({ a: { b: [2] }, v: { inner: [1, 2] } });
    expect(value).toEqual({ inner: [1] });
  });

  it("replaces the whole document at the empty path and refuses to remove it", () => {
    expect(applyPatch({ a: 1 }, [{ op: "replace", path: "", value: [1] }])).toEqual([1]);
    expect(applyPatch(1, [{ op: "add", path: "", value: "x" }])).toBe("x");
    expect(() => applyPatch(1, [{ op: "remove", path: "" }])).toThrow(PatchError);
  });

  it("decodes ~1 and ~0 and keeps __proto__ an ordinary member", () => {
    const document = JSON.parse('{"a/b":{"m~n":1},"__proto__":{"x":1}}');
    const result = applyPatch(document, [
      { op: "replace", path: "/a~1b/m~0n", value: 2 },
      { op: "replace", path: "/__proto__/x", value: 2 },
      { op: "add", path: "/~01", value: 3 },
    ]) as Record<string, Json>;
    expect(JSON.stringify(result)).toBe('{"a/b":{"m~n":2},"__proto__":{"x":2},"~1":3}');
    expect(Object.getPrototypeOf(result)).toBe(Object.prototype);
  });

  it("refuses operations that do not apply, naming the operation", () => {
    const document = { a: [1, 2], o: { k: 1 } };
    const failures: [PatchOp, string][] = [
      [{ op: "remove", path: "/missing" }, 'no member "missing"'],
      [{ op: "replace", path: "/a/2", value: 1 }, "no item at that index"],
      [{ op: "add", path: "/a/3", value: 1 }, "index beyond the end"],
      [{ op: "add", path: "/a/01", value: 1 }, "is not an array index"],
      [{ op: "remove", path: "/a/-" }, "is not an array index"],
      [{ op: "add", path: "/x/y", value: 1 }, 'no member "x"'],
      [{ op: "add", path: "/o/k/z", value: 1 }, "no container"],
      [{ op: "add", path: "a", value: 1 }, "not a JSON Pointer"],
      [{ op: "add", path: "/v" }, "value is missing"],
    ];
    for (const [operation, message] of failures) {
      const error = (() => {
        try {
          applyPatch(document, [{ op: "add", path: "/ok", value: 0 }, operation]);
        } catch (caught) {
          return caught;
        }
      })();
      expect(error, operation.path).toBeInstanceOf(PatchError);
      expect((error as PatchError).index).toBe(1);
      expect((error as PatchError).message).toContain(message);
    }
  });

  it("agrees with splice on random sequences of array operations (the cursor array)", () => {
    for (let seed = 1; seed <= 200; seed++) {
      const random = seededRandom(seed);
      const start = Array.from({ length: Math.floor(random() * 20) }, (_, i) => i);
      const expected = [...start];
      const patch: PatchOp[] = [];
      for (let step = 0; step < 30; step++) {
        const choice = random();
        if (choice < 0.4 || expected.length === 0) {
          const index = Math.floor(random() * (expected.length + 1));
          expected.splice(index, 0, 100 + step);
          patch.push({ op: "add", path: `/${index}`, value: 100 + step });
        } else if (choice < 0.7) {
          const index = Math.floor(random() * expected.length);
          expected.splice(index, 1);
          patch.push({ op: "remove", path: `/${index}` });
        } else {
          const index = Math.floor(random() * expected.length);
          expected[index] = -step;
          patch.push({ op: "replace", path: `/${index}`, value: -step });
        }
      }
      expect(applyPatch(start, patch), `seed ${seed}`).toEqual(expected);
    }
  });

  it("applies 200,000 removals at the front of a 200,000-item array (a splice each would move 2·10¹⁰ items)", () => {
    const length = 200_000;
    const document = Array.from({ length }, (_, i) => i);
    const patch: PatchOp[] = Array.from({ length }, () => ({ op: "remove", path: "/0" }));
    expect(applyPatch(document, patch)).toEqual([]);
  });
});

describe("jsonEqual", () => {
  it("ignores member order and the sign of zero, and nothing else", () => {
    expect(jsonEqual({ a: 1, b: [1, { c: null }] }, { b: [1, { c: null }], a: 1 })).toBe(true);
    expect(jsonEqual(0, -0)).toBe(true);
    expect(jsonEqual([1, 2], [2, 1])).toBe(false);
    expect(jsonEqual({ a: 1 }, { a: 1, b: 1 })).toBe(false);
    expect(jsonEqual({ a: 1, b: 2 }, { a: 1, c: 2 })).toBe(false);
    expect(jsonEqual([], {})).toBe(false);
    expect(jsonEqual({}, [])).toBe(false);
    expect(jsonEqual(null, {})).toBe(false);
    expect(jsonEqual("1", 1)).toBe(false);
  });
});
