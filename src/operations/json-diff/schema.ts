import { z } from "zod";

// The body is parsed JSON, so any value here is already JSON; z.json() would be recursive for the OpenAPI generator.
const JsonValue = z.unknown().meta({ description: "Any JSON value." });

export const JsonDiffRequest = z
  .strictObject({
    before: JsonValue,
    after: JsonValue,
    arrayMode: z.enum(["index", "lcs", "key"]).default("index"),
    arrayKey: z.string().min(1).optional(),
    maxChanges: z.int().min(1).max(10000).default(1000),
  })
  .refine((r) => r.arrayMode !== "key" || r.arrayKey !== undefined, {
    path: ["arrayKey"],
    message: 'required when arrayMode is "key"',
  })
  .meta({ id: "JsonDiffRequest" });

const PatchOperation = z.strictObject({
  op: z.enum(["add", "remove", "replace"]),
  path: z.string(),
  value: JsonValue.optional(),
});

export const JsonDiffResponse = z
  .strictObject({
    equal: z.boolean(),
    beforeHash: z.string().regex(/^sha256:[0-9a-f]{64}$/),
    afterHash: z.string().regex(/^sha256:[0-9a-f]{64}$/),
    patchHash: z.string().regex(/^sha256:[0-9a-f]{64}$/),
    changes: z.array(PatchOperation.extend({ previous: JsonValue.optional() })),
    patch: z.array(PatchOperation),
    stats: z.record(z.string(), z.int()),
    truncated: z.boolean(),
  })
  .meta({ id: "JsonDiffResponse" });
