import { describe, expect, it } from "vitest";
import { canonicalJson } from "../../canonical-json.ts";
import { inputJsonSchema } from "../../contract/json-schema.ts";
import { zodIssuesToFieldErrors } from "../../problem.ts";
import {
  DeferredContract,
  MAX_CONTRACT_BYTES,
  MAX_CONTRACT_DEPTH,
  ParsedContract,
  parseContract,
} from "./contract.ts";
import { openapiAudit } from "./index.ts";
import { OpenApiAuditRequest } from "./schema.ts";

const minimal = { openapi: "3.1.0", info: { title: "T", version: "1" }, paths: {} };

/** The field errors a request is rejected with (the 400's `errors`); fails when it is accepted. */
function fieldErrors(request: unknown) {
  const result = OpenApiAuditRequest.safeParse(request);
  if (result.success) throw new Error("expected the request to be rejected, but it was accepted");
  return zodIssuesToFieldErrors(result.error.issues);
}

const accepted = (request: unknown) => OpenApiAuditRequest.parse(request);

describe("openapi-audit request: the contract", () => {
  it("accepts an object, JSON text and YAML text, and gives the same parsed document", () => {
    const yaml = "openapi: 3.1.0\ninfo:\n  title: T\n  version: '1'\npaths: {}\n";
    for (const contract of [minimal, JSON.stringify(minimal), yaml, `\uFEFF${yaml}`]) {
      const parsed = accepted({ contract }).contract as ParsedContract;
      expect(parsed).toBeInstanceOf(ParsedContract);
      expect(parsed.document).toEqual(minimal);
      expect(parsed.openapi).toBe("3.1.0");
      expect(parsed.openapiVersion).toBe("3.1");
    }
    expect(
      (accepted({ contract: { ...minimal, openapi: "3.0.3" } }).contract as ParsedContract).openapiVersion,
    ).toBe("3.0");
  });

  it("applies the defaults: 100 findings, the recommended ruleset", () => {
    expect(accepted({ contract: minimal })).toMatchObject({ maxFindings: 100, ruleset: "recommended" });
  });

  it("hashes and logs as what the client sent (the parsed document stays internal)", () => {
    const text = JSON.stringify(minimal);
    expect(canonicalJson(accepted({ contract: text }))).toBe(
      canonicalJson({ contract: text, maxFindings: 100, ruleset: "recommended" }),
    );
    expect(canonicalJson(accepted({ contract: minimal, maxFindings: 5 }))).toBe(
      canonicalJson({ contract: minimal, maxFindings: 5, ruleset: "recommended" }),
    );
  });

  it("rejects a Swagger 2.0 contract, as an object (pointer to the field) or as text", () => {
    expect(fieldErrors({ contract: { swagger: "2.0", info: {}, paths: {} } })).toEqual([
      {
        pointer: "/contract/swagger",
        message: expect.stringMatching(
          /^Swagger "2\.0" \(OpenAPI 2\.0\) is not supported: send an OpenAPI 3\.0, 3\.1 or 3\.2/,
        ),
      },
    ]);
    expect(fieldErrors({ contract: "swagger: '2.0'\ninfo: {}\npaths: {}\n" })).toEqual([
      { pointer: "/contract", message: expect.stringContaining("in the contract text: Swagger") },
    ]);
  });

  it("rejects other versions and documents that are not OpenAPI", () => {
    const cases: [unknown, string, RegExp][] = [
      [
        { ...minimal, openapi: "4.0.0" },
        "/contract/openapi",
        /OpenAPI "4\.0\.0" is not supported: only 3\.0\.x, 3\.1\.x and 3\.2\.x/,
      ],
      [{ ...minimal, openapi: "2.0" }, "/contract/openapi", /only 3\.0\.x, 3\.1\.x and 3\.2\.x/],
      [{ ...minimal, openapi: "3.1" }, "/contract/openapi", /only 3\.0\.x, 3\.1\.x and 3\.2\.x/],
      [
        { ...minimal, openapi: 3.1 },
        "/contract/openapi",
        /must be a version string such as "3\.1\.0", not a number/,
      ],
      [
        { info: {}, paths: {} },
        "/contract/openapi",
        /the "openapi" field \(3\.0\.x, 3\.1\.x or 3\.2\.x\) is missing/,
      ],
      [{ asyncapi: "2.6.0" }, "/contract/asyncapi", /AsyncAPI documents are not supported/],
      ["openapi: 3.1\ninfo: {}\n", "/contract", /not a number \(quote it in YAML\)/],
    ];
    for (const [contract, pointer, message] of cases) {
      expect(fieldErrors({ contract }), JSON.stringify(contract)).toEqual([
        { pointer, message: expect.stringMatching(message) },
      ]);
    }
  });

  it("rejects text that is not YAML or JSON, with the position", () => {
    expect(fieldErrors({ contract: "openapi: 3.1.0\ninfo: [\n" })).toEqual([
      {
        pointer: "/contract",
        message: expect.stringMatching(/^the contract text is not valid YAML: .* at line \d+, column \d+$/),
      },
    ]);
    expect(fieldErrors({ contract: '{"openapi": "3.1.0", "info": ' })).toEqual([
      { pointer: "/contract", message: expect.stringMatching(/^the contract text is not valid JSON: /) },
    ]);
    expect(fieldErrors({ contract: "openapi: 3.1.0\nopenapi: 3.0.0\n" })).toEqual([
      {
        pointer: "/contract",
        message: expect.stringMatching(/not valid YAML: Map keys must be unique at line 2, column 1/),
      },
    ]);
    expect(fieldErrors({ contract: "openapi: 3.1.0\n---\nopenapi: 3.0.0\n" })).toEqual([
      {
        pointer: "/contract",
        message: expect.stringMatching(/not valid YAML: Source contains multiple documents/),
      },
    ]);
  });

  it("rejects text that holds something other than one object", () => {
    for (const [contract, what] of [
      ["- a\n- b\n", "an array"],
      ["just words", "a string"],
      ["42", "a number"],
      ["null", "null"],
    ]) {
      expect(fieldErrors({ contract })).toEqual([
        {
          pointer: "/contract",
          message: `the contract text must hold one object (an OpenAPI document), not ${what}`,
        },
      ]);
    }
  });

  it("rejects a contract that is neither an object nor text", () => {
    for (const contract of [42, [minimal], null, true]) {
      expect(fieldErrors({ contract })).toEqual([
        {
          pointer: "/contract",
          message: "the contract must be an OpenAPI document: an object, or its JSON/YAML text",
        },
      ]);
    }
    expect(fieldErrors({ contract: "" })).toEqual([
      { pointer: "/contract", message: "the contract text is empty" },
    ]);
    expect(fieldErrors({})).toEqual([{ pointer: "/contract", message: expect.any(String) }]);
  });

  it(`caps the contract at ${MAX_CONTRACT_BYTES} bytes, as text or as an object's JSON`, () => {
    const padding = "x".repeat(MAX_CONTRACT_BYTES);
    expect(fieldErrors({ contract: `openapi: 3.1.0\ninfo:\n  description: ${padding}\n` })).toEqual([
      {
        pointer: "/contract",
        message: expect.stringMatching(
          new RegExp(`^the contract is \\d+ bytes; the limit is ${MAX_CONTRACT_BYTES} bytes$`),
        ),
      },
    ]);
    expect(fieldErrors({ contract: { ...minimal, info: { title: padding, version: "1" } } })).toEqual([
      {
        pointer: "/contract",
        message: expect.stringMatching(
          new RegExp(`^the contract is \\d+ bytes as JSON; the limit is ${MAX_CONTRACT_BYTES} bytes$`),
        ),
      },
    ]);
    // Multi-byte characters count as their UTF-8 bytes.
    const euros = "€".repeat(Math.ceil(MAX_CONTRACT_BYTES / 3) + 1);
    expect(fieldErrors({ contract: `openapi: 3.1.0\ninfo: {title: ${euros}}\n` })[0]?.message).toMatch(
      /bytes; the limit/,
    );
  });

  it(`caps nesting at ${MAX_CONTRACT_DEPTH} levels, with a pointer to where it goes too deep`, () => {
    let deep: Record<string, unknown> = {};
    const root = deep;
    for (let i = 0; i < MAX_CONTRACT_DEPTH + 5; i++) {
      deep.a = {};
      deep = deep.a as Record<string, unknown>;
    }
    const errors = fieldErrors({ contract: { ...minimal, components: { schemas: { deep: root } } } });
    expect(errors).toHaveLength(1);
    expect(errors[0]?.pointer).toBe(
      `/contract/components/schemas/deep${"/a".repeat(MAX_CONTRACT_DEPTH - 3)}`,
    );
    expect(errors[0]?.message).toMatch(/nests deeper than 100 levels/);
  });

  it("leaves a large text to the worker: an 85,000-key YAML (68 s on the main thread before) is not parsed here", () => {
    const text = `openapi: 3.1.0\ninfo: {title: t, version: '1'}\npaths: {}\nx-data:\n${Array.from({ length: 85_000 }, (_, i) => `  k${i}: 1\n`).join("")}`;
    const contract = accepted({ contract: text }).contract;
    expect(contract).toBeInstanceOf(DeferredContract);
    // Only a version it names is checked before payment; the rest is the worker's.
    expect(fieldErrors({ contract: text.replace("openapi: 3.1.0", "openapi: 2.0") })).toEqual([
      {
        pointer: "/contract",
        message: expect.stringMatching(/^in the contract text: OpenAPI "2\.0" is not supported/),
      },
    ]);
    // In the worker, duplicate keys are found in linear time.
    const parsed = parseContract(`${text}  k42: 2\n`, { inWorker: true });
    expect(parsed.ok ? [] : parsed.issues).toEqual([
      { path: [], message: expect.stringMatching(/Map keys must be unique at line 85005, column 3$/) },
    ]);
  });

  it("parses YAML with aliases in the worker, which rejects alias cycles and alias bombs before Redocly", () => {
    const inWorker = (text: string) => {
      // Expanding aliases can cost far more than the text's size: not on the main thread.
      expect(accepted({ contract: text }).contract).toBeInstanceOf(DeferredContract);
      const parsed = parseContract(text, { inWorker: true });
      return parsed.ok ? [] : parsed.issues;
    };
    expect(inWorker("openapi: 3.1.0\ninfo: &loop\n  self: *loop\n")).toEqual([
      {
        path: [],
        message: expect.stringMatching(/nests deeper than 100 levels \(or holds a YAML alias cycle\)/),
      },
    ]);
    const bomb = [
      "openapi: 3.1.0",
      "a: &a [x, x, x, x, x, x, x, x, x, x]",
      "b: &b [*a, *a, *a, *a, *a, *a, *a, *a, *a, *a]",
      "c: &c [*b, *b, *b, *b, *b, *b, *b, *b, *b, *b]",
      "d: &d [*c, *c, *c, *c, *c, *c, *c, *c, *c, *c]",
      "e: &e [*d, *d, *d, *d, *d, *d, *d, *d, *d, *d]",
      "f: [*e, *e, *e, *e, *e, *e, *e, *e, *e, *e]",
    ].join("\n");
    expect(inWorker(bomb)).toEqual([
      { path: [], message: expect.stringMatching(/^the contract text is not valid YAML: .*alias/i) },
    ]);
  });
});

describe("openapi-audit request: the options", () => {
  it("bounds maxFindings to 1–500 integers and ruleset to the two rulesets", () => {
    for (const maxFindings of [0, 501, 1.5, "10"]) {
      expect(fieldErrors({ contract: minimal, maxFindings })).toEqual([
        { pointer: "/maxFindings", message: expect.any(String) },
      ]);
    }
    expect(accepted({ contract: minimal, maxFindings: 1 }).maxFindings).toBe(1);
    expect(accepted({ contract: minimal, maxFindings: 500 }).maxFindings).toBe(500);
    expect(fieldErrors({ contract: minimal, ruleset: "all" })).toEqual([
      { pointer: "/ruleset", message: expect.any(String) },
    ]);
    expect(accepted({ contract: minimal, ruleset: "strict" }).ruleset).toBe("strict");
  });

  it("rejects unknown properties, one pointer each", () => {
    expect(fieldErrors({ contract: minimal, rules: "all", url: "https://x.test/openapi.json" })).toEqual([
      { pointer: "/rules", message: "unknown property (not allowed)" },
      { pointer: "/url", message: "unknown property (not allowed)" },
    ]);
  });

  it("publishes a JSON Schema that takes an object or a string as the contract", () => {
    const schema = inputJsonSchema(openapiAudit) as any;
    expect(schema.properties.contract.anyOf).toEqual([{ type: "object" }, { type: "string", minLength: 1 }]);
    expect(schema.required).toEqual(["contract"]);
    expect(schema.additionalProperties).toBe(false);
  });
});
