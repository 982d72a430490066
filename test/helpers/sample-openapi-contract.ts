import type { ContractDocument } from "../../src/operations/openapi-audit/contract.ts";

/**
 * A realistic, deterministic OpenAPI 3.1 contract for benchmarks and tests: `resources` CRUD
 * resources (two paths, four operations each) with shared components, examples, problem
 * responses and a paid x402 operation per resource, plus a few deliberate findings (a missing
 * operationId, a response without example, a paid operation that does not say how to pay).
 * About 100 KB of JSON at 40 resources.
 */
export function sampleContract(resources = 40): ContractDocument {
  const paths: Record<string, unknown> = {};
  const schemas: Record<string, unknown> = {
    Problem: {
      type: "object",
      required: ["type", "title", "status"],
      properties: {
        type: { type: "string", format: "uri-reference" },
        title: { type: "string" },
        status: { type: "integer", minimum: 100, maximum: 599 },
        detail: { type: "string" },
      },
    },
  };
  const problem = (description: string) => ({
    description,
    content: {
      "application/problem+json": {
        schema: { $ref: "#/components/schemas/Problem" },
        example: { type: "about:blank", title: description, status: 400 },
      },
    },
  });
  for (let index = 0; index < resources; index++) {
    const name = `Resource${index}`;
    const slug = `resources-${index}`;
    const example = { id: `r-${index}`, name: `item ${index}`, quantity: index, tags: ["a", "b"] };
    schemas[name] = {
      type: "object",
      required: ["id", "name"],
      properties: {
        id: { type: "string", description: `Identifier of a ${name}.` },
        name: { type: "string", minLength: 1, maxLength: 200 },
        quantity: { type: "integer", minimum: 0 },
        tags: { type: "array", items: { type: "string" }, maxItems: 20 },
        createdAt: { type: "string", format: "date-time" },
      },
      example,
    };
    const idParameter = {
      name: "id",
      in: "path",
      required: true,
      schema: { type: "string" },
      example: `r-${index}`,
    };
    const ok = (schema: unknown) => ({
      description: "OK",
      content: { "application/json": { schema, example } },
    });
    paths[`/${slug}`] = {
      get: {
        operationId: `list${name}`,
        summary: `List ${name} items`,
        tags: ["resources"],
        parameters: [
          { name: "limit", in: "query", schema: { type: "integer", minimum: 1, maximum: 100 }, example: 10 },
        ],
        responses: {
          "200": {
            description: "OK",
            content: {
              "application/json": {
                schema: { type: "array", items: { $ref: `#/components/schemas/${name}` } },
                example: [example],
              },
            },
          },
          "400": { $ref: "#/components/responses/BadRequest" },
        },
      },
      post: {
        operationId: `create${name}`,
        summary: `Create a ${name}`,
        tags: ["resources"],
        requestBody: {
          required: true,
          content: { "application/json": { schema: { $ref: `#/components/schemas/${name}` }, example } },
        },
        responses: {
          "201": ok({ $ref: `#/components/schemas/${name}` }),
          "400": { $ref: "#/components/responses/BadRequest" },
          "402": {
            description: "Payment required (x402).",
            headers: {
              "PAYMENT-REQUIRED": {
                description: "base64 JSON x402 v2 PaymentRequired.",
                schema: { type: "string" },
              },
            },
          },
        },
        security: [{ x402: [] }],
        "x-payment-info": { protocols: ["x402"], priceUsd: "0.01", network: "eip155:8453" },
      },
    };
    paths[`/${slug}/{id}`] = {
      parameters: [idParameter],
      get: {
        // A deliberate finding every tenth resource: no operationId.
        ...(index % 10 === 0 ? {} : { operationId: `get${name}` }),
        summary: `Get one ${name}`,
        tags: ["resources"],
        responses: {
          // A deliberate finding every seventh resource: a success response without any example.
          "200":
            index % 7 === 0
              ? { description: "OK", content: { "application/json": { schema: { type: "object" } } } }
              : ok({ $ref: `#/components/schemas/${name}` }),
          "404": problem("Not found"),
        },
      },
      delete: {
        operationId: `delete${name}`,
        summary: `Delete a ${name}`,
        tags: ["resources"],
        responses: {
          "204": { description: "Deleted" },
          "404": problem("Not found"),
          // A deliberate finding every eleventh resource: paid, but no word on how to pay.
          ...(index % 11 === 0 ? { "402": { description: "Payment required" } } : {}),
        },
      },
    };
  }
  return {
    openapi: "3.1.0",
    info: {
      title: "Sample inventory",
      version: "1.0.0",
      description: "A generated contract for benchmarks and tests.",
      license: { name: "MIT", identifier: "MIT" },
    },
    servers: [{ url: "https://inventory.sample.test" }],
    tags: [{ name: "resources", description: "Generated resources." }],
    security: [],
    paths,
    components: {
      schemas,
      responses: { BadRequest: problem("Bad request") },
      securitySchemes: {
        x402: { type: "apiKey", in: "header", name: "PAYMENT-SIGNATURE", description: "x402 v2 payment." },
      },
    },
  };
}
