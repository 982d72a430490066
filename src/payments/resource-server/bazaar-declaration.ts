import { declareDiscoveryExtension } from "@x402/extensions/bazaar";
import { inputJsonSchema, outputJsonSchema } from "../../contract/json-schema.ts";
import type { AnyOperation } from "../../contract/operation.ts";

/**
 * The route's full x402 Bazaar discovery extension: the complete input and output JSON Schemas and
 * both examples. Listed in /.well-known/x402 (the OpenAPI document and the agent skills carry the same
 * schemas); too large for a header (up to 10 KB of JSON, 13 KB once base64-encoded).
 */
export function bazaarDeclaration(operation: AnyOperation): Record<string, unknown> {
  const output = { example: operation.example.output, schema: outputJsonSchema(operation) };
  if (operation.inputFrom === "body") {
    return declareDiscoveryExtension({
      bodyType: "json",
      input: operation.example.input as Record<string, unknown> | undefined,
      inputSchema: inputJsonSchema(operation),
      output,
    });
  }
  return declareDiscoveryExtension({
    input: operation.example.input as Record<string, unknown> | undefined,
    inputSchema: inputJsonSchema(operation),
    output,
  });
}

/**
 * The input schema reduced to its first level: each top-level property with its JSON type only, and
 * which ones are required. It still validates the route's example (it only drops constraints), and is
 * what the Bazaar specification's own examples declare (`"city": { "type": "string" }`).
 */
export function shallowInputSchema(operation: AnyOperation): Record<string, unknown> {
  const full = inputJsonSchema(operation);
  const properties = (full.properties ?? {}) as Record<string, Record<string, unknown>>;
  return {
    type: "object",
    properties: Object.fromEntries(
      Object.entries(properties).map(([name, schema]) => [
        name,
        schema.type !== undefined ? { type: schema.type } : {},
      ]),
    ),
    ...(Array.isArray(full.required) && full.required.length > 0 ? { required: full.required } : {}),
  };
}

/**
 * The members an output always has: a JSON Schema with only the `type` and the `required` names (each
 * branch of a top-level anyOf alike). Small enough for every route's 402 header; the complete output
 * schema is in /openapi.json and /.well-known/x402.
 */
export function requiredMembersSchema(full: Record<string, unknown>): Record<string, unknown> {
  if (Array.isArray(full.anyOf)) return { anyOf: full.anyOf.map(requiredMembersSchema) };
  return {
    ...(full.type !== undefined ? { type: full.type } : {}),
    ...(Array.isArray(full.required) && full.required.length > 0 ? { required: full.required } : {}),
  };
}

/** The example input the compact extension carries: the operation's brief one if it has one. */
export const briefExampleInput = (operation: AnyOperation) =>
  (operation.example.briefInput ?? operation.example.input) as Record<string, unknown> | undefined;

/**
 * The compact Bazaar extension a 402 carries: the example input, a first-level input schema and the
 * output's required members. The input part is built by the official declareDiscoveryExtension; the
 * output schema sits where that function puts an output example's schema
 * (`schema.properties.output.properties.example`, where indexers such as @agentcash/discovery read it),
 * without the example itself in `info` (`info.output` is optional in the Bazaar specification). The
 * official client echoes the extension back in PAYMENT-SIGNATURE, so it bounds both headers: every
 * route's PAYMENT-REQUIRED and PAYMENT-SIGNATURE stay within one 4 KB proxy buffer (nginx's default).
 * The full declaration, with the complete schemas and the output example, is in /.well-known/x402.
 */
export function compactBazaarDeclaration(operation: AnyOperation): Record<string, unknown> {
  const input = briefExampleInput(operation);
  const { bazaar } =
    operation.inputFrom === "body"
      ? declareDiscoveryExtension({ bodyType: "json", input, inputSchema: shallowInputSchema(operation) })
      : declareDiscoveryExtension({ input, inputSchema: shallowInputSchema(operation) });
  const declared = bazaar as { info: unknown; schema: { properties: Record<string, unknown> } };
  // The schema of `info.output` (whose `example` is not given here), reduced to what the header can carry.
  const output = { properties: { example: requiredMembersSchema(outputJsonSchema(operation)) } };
  const properties = { ...declared.schema.properties, output };
  return { bazaar: { ...declared, schema: { ...declared.schema, properties } } };
}
