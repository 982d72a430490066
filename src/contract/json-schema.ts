import { z } from "zod";
import type { AnyOperation } from "./operation.ts";

type JsonSchema = Record<string, unknown>;

/**
 * Replaces every local `#/$defs/...` reference by the definition itself, so the schema stays valid
 * wherever it is embedded (inside the Bazaar extension's schema, "#" is no longer this root).
 * The registry's schemas are not recursive.
 */
function inlineDefinitions(schema: JsonSchema): JsonSchema {
  const defs = (schema.$defs ?? {}) as Record<string, unknown>;
  const resolve = (node: unknown, depth: number): unknown => {
    if (depth > 64) throw new Error("schema nesting too deep (a recursive schema cannot be inlined)");
    if (Array.isArray(node)) return node.map((item) => resolve(item, depth + 1));
    if (typeof node !== "object" || node === null) return node;
    const { $ref, ...rest } = node as JsonSchema;
    const resolved: JsonSchema = {};
    if (typeof $ref === "string" && $ref.startsWith("#/$defs/")) {
      Object.assign(resolved, resolve(defs[$ref.slice("#/$defs/".length)], depth + 1));
    } else if ($ref !== undefined) {
      resolved.$ref = $ref;
    }
    for (const [key, value] of Object.entries(rest)) {
      if (key !== "$defs") resolved[key] = resolve(value, depth + 1);
    }
    return resolved;
  };
  return resolve(schema, 0) as JsonSchema;
}

/** JSON Schema (2020-12) of what a client sends (defaults make fields optional), self-contained. */
export const inputJsonSchema = (operation: AnyOperation) =>
  inlineDefinitions(z.toJSONSchema(operation.input, { io: "input", unrepresentable: "any" }) as JsonSchema);

/** JSON Schema (2020-12) of a successful response body, self-contained. */
export const outputJsonSchema = (operation: AnyOperation) =>
  inlineDefinitions(z.toJSONSchema(operation.output, { io: "output", unrepresentable: "any" }) as JsonSchema);
