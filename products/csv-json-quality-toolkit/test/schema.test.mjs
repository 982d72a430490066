import assert from "node:assert/strict";
import { test } from "node:test";
import { checkSchema, validate } from "../lib/schema.mjs";

const schema = {
  type: "object",
  required: ["id"],
  additionalProperties: false,
  properties: {
    id: { type: "integer", minimum: 1 },
    tags: { type: "array", items: { type: "string", minLength: 1 }, uniqueItems: true },
    when: { type: "string", format: "date" },
    kind: { $ref: "#/$defs/kind" },
  },
  $defs: { kind: { enum: ["a", "b"] } },
};

test("a valid value has no errors", () => assert.deepEqual(validate(schema, { id: 1, tags: ["x"], when: "2024-02-29", kind: "a" }), []));
test("errors point at the field", () => {
  assert.deepEqual(validate(schema, { id: 0, tags: ["x", "x", ""], when: "2023-02-29", kind: "c", extra: 1 }).map((e) => e.pointer), [
    "/id", "/tags", "/tags/2", "/when", "/kind", "/extra",
  ]);
});
test("a missing required property is reported at its pointer", () => assert.equal(validate(schema, {})[0].pointer, "/id"));
test("a wrong type stops further checks of that value", () => assert.deepEqual(validate(schema, { id: "1" }).map((e) => e.message), ["expected integer, got string"]));
test("oneOf needs exactly one match", () => {
  assert.equal(validate({ oneOf: [{ type: "number" }, { type: "integer" }] }, 1).length, 1);
  assert.equal(validate({ oneOf: [{ type: "number" }, { type: "integer" }] }, 1.5).length, 0);
});
test("unsupported keywords are refused, not ignored", () => {
  assert.deepEqual(checkSchema({ type: "object", properties: { a: { dependentRequired: {} } } }), ["/properties/a/dependentRequired: keyword not supported by this validator"]);
});
