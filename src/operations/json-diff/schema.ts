import { z } from "zod";
import type { Json } from "./canonical.ts";

/** Arrays and objects `before` and `after` may each nest (the request body adds one level). */
export const MAX_DOCUMENT_DEPTH = 64;
/** arrayMode "lcs": the longest array it aligns ... */
export const LCS_MAX_ITEMS = 2000;
/** ... and the most work per request: Σ length² over every array of both documents. */
export const LCS_MAX_SQUARED_ITEMS = 16_000_000;
/** A 400 lists at most this many problems in the documents. */
const MAX_DOCUMENT_ERRORS = 20;

// The body is parsed JSON, so any value here is already JSON; z.json() would be recursive for the OpenAPI generator.
const JsonValue = z.unknown().meta({ description: "Any JSON value." });

const isPlainObject = (value: unknown): value is Record<string, unknown> =>
  typeof value === "object" && value !== null && !Array.isArray(value);

/** A key value of arrayMode "key": a string or a number (the string "1" and the number 1 differ). */
export const isArrayKeyValue = (value: unknown): value is string | number =>
  typeof value === "string" || typeof value === "number";

/** Positions by key value; numbers compare as numbers (1.0 is 1, -0 is 0), without building strings. */
export class ArrayKeyIndex {
  private readonly strings = new Map<string, number>();
  private readonly numbers = new Map<number, number>();

  get(value: string | number): number | undefined {
    return typeof value === "string" ? this.strings.get(value) : this.numbers.get(value);
  }

  set(value: string | number, position: number): void {
    if (typeof value === "string") this.strings.set(value, position);
    else this.numbers.set(value, position);
  }
}

/** RFC 8785 has no form for a lone UTF-16 surrogate (JSON.parse accepts "\ud800"), so it cannot be hashed. */
const isWellFormed = (text: string) => (text as unknown as { isWellFormed(): boolean }).isWellFormed();

type Report = (path: (string | number)[], message: string) => void;

interface DocumentCheck {
  arrayMode: "index" | "lcs" | "key";
  arrayKey: string | undefined;
  report: Report;
  /** Σ length² of the arrays seen (for the lcs work bound). */
  squaredItems: number;
}

/**
 * Everything about a document that can be known before payment: hashable strings, depth, and the
 * array rules of the chosen mode. Recursion stops at MAX_DOCUMENT_DEPTH, so it stays shallow even
 * for a document that was not read through the HTTP depth check.
 */
function checkDocument(value: unknown, path: (string | number)[], depth: number, check: DocumentCheck): void {
  if (typeof value === "string") {
    if (!isWellFormed(value))
      check.report(path, "contains a lone UTF-16 surrogate, which RFC 8785 cannot hash");
    return;
  }
  if (typeof value !== "object" || value === null) return;
  if (depth > MAX_DOCUMENT_DEPTH) {
    check.report(path, `nested deeper than ${MAX_DOCUMENT_DEPTH} levels of arrays and objects`);
    return;
  }
  if (Array.isArray(value)) {
    checkArray(value, path, check);
    for (let i = 0; i < value.length; i++) {
      path.push(i);
      checkDocument(value[i], path, depth + 1, check);
      path.pop();
    }
    return;
  }
  for (const key of Object.keys(value)) {
    path.push(key);
    if (!isWellFormed(key))
      check.report(path, "the key contains a lone UTF-16 surrogate, which RFC 8785 cannot hash");
    checkDocument((value as Record<string, unknown>)[key], path, depth + 1, check);
    path.pop();
  }
}

function checkArray(array: unknown[], path: (string | number)[], check: DocumentCheck): void {
  if (check.arrayMode === "lcs") {
    check.squaredItems += array.length * array.length;
    if (array.length > LCS_MAX_ITEMS) {
      check.report(
        path,
        `this array has ${array.length} items; arrayMode "lcs" aligns arrays of at most ${LCS_MAX_ITEMS} items ` +
          '(use "index" or "key")',
      );
    }
    return;
  }
  if (check.arrayMode !== "key" || !array.some(isPlainObject)) return;
  const key = check.arrayKey as string;
  const firstIndexById = new ArrayKeyIndex();
  array.forEach((item, index) => {
    if (!isPlainObject(item)) {
      check.report(
        [...path, index],
        `arrayMode "key": this array holds objects, so every item must be an object with "${key}"`,
      );
      return;
    }
    if (!Object.hasOwn(item, key)) {
      check.report(
        [...path, index],
        `missing "${key}" (arrayMode "key" matches the items of this array by it)`,
      );
      return;
    }
    const id = item[key];
    if (!isArrayKeyValue(id)) {
      check.report([...path, index, key], `"${key}" must be a string or a number to match items by it`);
      return;
    }
    const first = firstIndexById.get(id);
    if (first !== undefined) {
      check.report(
        [...path, index, key],
        `duplicate "${key}" ${JSON.stringify(item[key])} (also at index ${first}); items must be unique by "${key}"`,
      );
      return;
    }
    firstIndexById.set(id, index);
  });
}

export const JsonDiffRequest = z
  .strictObject({
    before: JsonValue.meta({
      description: `The original document: any JSON value, nested at most ${MAX_DOCUMENT_DEPTH} levels, no duplicate member names.`,
    }),
    after: JsonValue.meta({ description: "The new document, with the same limits." }),
    arrayMode: z
      .enum(["index", "lcs", "key"])
      .default("index")
      .meta({
        description:
          '"index" compares arrays position by position; "lcs" keeps a longest common subsequence of equal ' +
          `items in place (arrays of at most ${LCS_MAX_ITEMS} items, and a sum of squared array lengths over both ` +
          `documents of at most ${LCS_MAX_SQUARED_ITEMS}); "key" matches the objects of an array by arrayKey.`,
      }),
    arrayKey: z.string().min(1).optional().meta({
      description: 'Required with arrayMode "key" and only then: the member that identifies an item.',
    }),
    moves: z
      .boolean()
      .default(true)
      .meta({
        description:
          'Emit "move" for an item that changed place (arrayMode "key" and "lcs") and "copy" for a value the ' +
          "document already holds, where that makes the patch shorter; false: add, remove and replace only.",
      }),
    testOldValues: z
      .boolean()
      .default(false)
      .meta({
        description:
          'Precede every remove, replace and move with a "test" of the old value (of the key member for a keyed ' +
          "move), so the patch fails on any document other than before; no copy is emitted then.",
      }),
    maxChanges: z.int().min(1).max(10000).default(1000).meta({
      description: "Most operations returned; beyond it the answer is truncated (see `truncated`).",
    }),
  })
  .superRefine((request, ctx) => {
    if (request.arrayMode === "key" && request.arrayKey === undefined) {
      ctx.addIssue({ code: "custom", path: ["arrayKey"], message: 'required when arrayMode is "key"' });
    }
    if (request.arrayMode !== "key" && request.arrayKey !== undefined) {
      ctx.addIssue({
        code: "custom",
        path: ["arrayKey"],
        message: `only used with arrayMode "key" (arrayMode is "${request.arrayMode}")`,
      });
    }
    if (request.arrayMode === "key" && request.arrayKey === undefined) return;
    let errors = 0;
    const check: DocumentCheck = {
      arrayMode: request.arrayMode,
      arrayKey: request.arrayKey,
      squaredItems: 0,
      report: (path, message) => {
        if (++errors <= MAX_DOCUMENT_ERRORS) ctx.addIssue({ code: "custom", path: [...path], message });
      },
    };
    checkDocument(request.before, ["before"], 1, check);
    checkDocument(request.after, ["after"], 1, check);
    if (request.arrayMode === "lcs" && check.squaredItems > LCS_MAX_SQUARED_ITEMS) {
      ctx.addIssue({
        code: "custom",
        path: ["arrayMode"],
        message:
          `"lcs" allows a sum of squared array lengths of at most ${LCS_MAX_SQUARED_ITEMS} over both ` +
          `documents; these have ${check.squaredItems} (use "index" or "key")`,
      });
    }
  })
  .meta({ id: "JsonDiffRequest" });

export type JsonDiffInput = Omit<z.output<typeof JsonDiffRequest>, "before" | "after"> & {
  before: Json;
  after: Json;
};

const Pointer = z.string().meta({ description: "RFC 6901 JSON Pointer (`~` as `~0`, `/` as `~1`)." });

const patchOperation = <Extra extends z.ZodRawShape>(extra: { remove: Extra; replace: Extra }) =>
  z.discriminatedUnion("op", [
    z.strictObject({ op: z.literal("add"), path: Pointer, value: JsonValue }),
    z.strictObject({ op: z.literal("remove"), path: Pointer, ...extra.remove }),
    z.strictObject({ op: z.literal("replace"), path: Pointer, value: JsonValue, ...extra.replace }),
    z.strictObject({ op: z.literal("move"), from: Pointer, path: Pointer }),
    z.strictObject({ op: z.literal("copy"), from: Pointer, path: Pointer }),
    z.strictObject({ op: z.literal("test"), path: Pointer, value: JsonValue }),
  ]);

const PatchOperation = patchOperation({ remove: {}, replace: {} }).meta({
  id: "JsonPatchOperation",
  description: "One RFC 6902 operation.",
});

const Change = patchOperation({
  remove: { previous: JsonValue.meta({ description: "The value removed." }) },
  replace: { previous: JsonValue.meta({ description: "The value replaced." }) },
}).meta({ id: "JsonDiffChange", description: "A patch operation with the value it removes or replaces." });

const Hash = z.string().regex(/^sha256:[0-9a-f]{64}$/);

export const JsonDiffResponse = z
  .strictObject({
    equal: z.boolean().meta({ description: "The documents are equal in RFC 8785 canonical form." }),
    beforeHash: Hash.meta({ description: "sha256 of the RFC 8785 canonical form of before." }),
    afterHash: Hash.meta({ description: "sha256 of the RFC 8785 canonical form of after." }),
    patchHash: Hash.meta({
      description: "sha256 of the RFC 8785 canonical form of the complete patch, even when truncated.",
    }),
    changes: z
      .array(Change)
      .meta({ description: "The operations of patch, in the same order, with previous values." }),
    patch: z.array(PatchOperation).meta({
      description:
        "RFC 6902 patch from before to after; apply in order. Complete unless truncated, then its first maxChanges operations.",
    }),
    stats: z.strictObject({
      operations: z.int().min(0).meta({ description: "Operations in the complete patch." }),
      add: z.int().min(0),
      remove: z.int().min(0),
      replace: z.int().min(0),
      move: z.int().min(0),
      copy: z.int().min(0),
      test: z.int().min(0),
      returned: z.int().min(0).meta({ description: "Operations in patch and changes (at most maxChanges)." }),
    }),
    truncated: z.boolean().meta({
      description:
        "The complete patch has more than maxChanges operations: patch and changes hold its first maxChanges " +
        "operations, which apply to before but do not produce after.",
    }),
  })
  .meta({ id: "JsonDiffResponse" });

export type JsonDiffOutput = z.output<typeof JsonDiffResponse>;
