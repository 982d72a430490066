import { describe, expect, it } from "vitest";
import { sampleContract } from "../../../test/helpers/sample-openapi-contract.ts";
import { AGENT_RULES } from "./agent-rules.ts";
import {
  type AuditJob,
  auditDocument,
  comparePointers,
  findRefCycles,
  RefusingResolver,
  summarize,
} from "./audit.ts";
import type { ContractDocument, ParsedContract } from "./contract.ts";
import { auditJob, openapiAudit } from "./index.ts";
import { type Finding, OpenApiAuditRequest, OpenApiAuditResponse } from "./schema.ts";

/**
 * These tests pin Redocly's side of the audit and the agent rules (Spectral's side and the merge:
 * real-findings.test.ts); `engines` is left out of the comparisons here.
 */
const audit = (
  document: ContractDocument,
  options: { ruleset?: AuditJob["ruleset"]; maxFindings?: number } = {},
) =>
  auditDocument(
    {
      document,
      openapi: String(document.openapi),
      ruleset: "recommended",
      maxFindings: 500,
      ...options,
    },
    ["redocly"],
  ).then((result) => {
    const { findings, ...rest } = OpenApiAuditResponse.parse(result);
    return { ...rest, findings: findings.map(({ engines: _, ...finding }) => finding) };
  });

/** A contract that passes every recommended Redocly rule and every agent rule. */
const clean = (): ContractDocument => ({
  openapi: "3.1.0",
  info: { title: "Pets", version: "1.0.0", license: { name: "MIT", identifier: "MIT" } },
  servers: [{ url: "https://pets.test" }],
  security: [],
  paths: {
    "/pets/{id}": {
      get: {
        operationId: "getPet",
        summary: "Get a pet",
        parameters: [{ name: "id", in: "path", required: true, schema: { type: "string" } }],
        responses: {
          "200": {
            description: "The pet",
            content: { "application/json": { schema: { type: "object" }, example: { id: "1" } } },
          },
          "404": { description: "No such pet" },
        },
      },
    },
  },
});

const brief = (findings: Pick<Finding, "severity" | "ruleId" | "pointer">[]) =>
  findings.map((f) => `${f.severity} ${f.ruleId} ${f.pointer}`);

describe("auditDocument: Redocly's rules", () => {
  it("finds nothing in a clean contract", async () => {
    expect(await audit(clean())).toEqual({
      openapiVersion: "3.1.0",
      auditedAs: "3.1",
      valid: true,
      summary: { errors: 0, warnings: 0, info: 0 },
      findings: [],
      truncated: false,
    });
  });

  it("reports Redocly findings with JSON Pointers, warning severities and docs links", async () => {
    const document = clean();
    document.info = { title: "Pets", version: "1.0.0" };
    delete document.servers;
    const result = await audit(document);
    expect(result.findings).toEqual([
      {
        ruleId: "no-empty-servers",
        severity: "error",
        message: "Servers must be present.",
        pointer: "/openapi",
        docsUrl: "https://redocly.com/docs/cli/rules/oas/no-empty-servers",
      },
      {
        ruleId: "info-license",
        severity: "warning",
        message: "Info object should contain `license` field.",
        pointer: "/info",
        docsUrl: "https://redocly.com/docs/cli/rules/oas/info-license",
      },
    ]);
    expect(result).toMatchObject({ valid: false, summary: { errors: 1, warnings: 1, info: 0 } });
  });

  it("reports struct errors, with a docs link, for a structurally broken 3.0 contract", async () => {
    const result = await audit({ openapi: "3.0.3", info: 5, paths: [] });
    expect(result.openapiVersion).toBe("3.0.3");
    expect(result.findings.filter((f) => f.ruleId === "struct")).toEqual([
      expect.objectContaining({
        severity: "error",
        pointer: "/info",
        docsUrl: "https://redocly.com/docs/cli/rules/common/struct",
      }),
      expect.objectContaining({ severity: "error", pointer: "/paths" }),
    ]);
  });

  it("replaces Redocly's operationId and 4xx rules by the agent rules (one finding each)", async () => {
    const document = clean();
    const operation = (document.paths as any)["/pets/{id}"].get;
    delete operation.operationId;
    delete operation.responses["404"];
    expect(brief((await audit(document)).findings)).toEqual([
      "warning agent-operation-id /paths/~1pets~1{id}/get",
      "warning agent-4xx-response /paths/~1pets~1{id}/get/responses",
    ]);
  });

  it("keeps pointers of keys that need escaping exact (~0, ~1) and unencoded", async () => {
    const document = clean();
    (document.paths as any)["/a~b/{id}"] = (document.paths as any)["/pets/{id}"];
    delete (document.paths as any)["/pets/{id}"];
    delete (document.paths as any)["/a~b/{id}"].get.operationId;
    delete (document.paths as any)["/a~b/{id}"].get.summary;
    const result = await audit(document);
    expect(brief(result.findings)).toEqual([
      "error operation-summary /paths/~1a~0b~1{id}/get/summary",
      "warning agent-operation-id /paths/~1a~0b~1{id}/get",
    ]);
  });
});

describe("auditDocument: rulesets", () => {
  const flawed = () => {
    const document = clean();
    document.info = { title: "Pets", version: "1.0.0" };
    const get = (document.paths as any)["/pets/{id}"].get;
    delete get.operationId;
    delete get.responses["200"].content["application/json"].example;
    return document;
  };

  it("recommended: agent rules at their own severities", async () => {
    const result = await audit(flawed());
    expect(brief(result.findings)).toEqual([
      "warning info-license /info",
      "warning agent-operation-id /paths/~1pets~1{id}/get",
      "info agent-examples /paths/~1pets~1{id}/get/responses/200",
    ]);
    expect(result.valid).toBe(true);
  });

  it("strict: Redocly's recommended-strict, and every agent finding an error", async () => {
    const result = await audit(flawed(), { ruleset: "strict" });
    expect(brief(result.findings)).toEqual([
      "error info-license /info",
      "error agent-operation-id /paths/~1pets~1{id}/get",
      "error agent-examples /paths/~1pets~1{id}/get/responses/200",
    ]);
    expect(result).toMatchObject({ valid: false, summary: { errors: 3, warnings: 0, info: 0 } });
  });

  it("documents a recommended severity for every agent rule", () => {
    expect(Object.keys(AGENT_RULES).sort()).toEqual([
      "agent-4xx-response",
      "agent-examples",
      "agent-operation-id",
      "agent-payment-402",
      "agent-payment-instructions",
    ]);
  });
});

describe("auditDocument: external and circular references", () => {
  it("refuses every external reference and reports each one as no-external-refs, auditing the rest", async () => {
    const document = clean();
    const get = (document.paths as any)["/pets/{id}"].get;
    get.parameters.push({ $ref: "https://schemas.test/params.yaml#/Limit" });
    get.responses["404"] = { $ref: "./responses.yaml#/NotFound" };
    document.components = {
      schemas: { Pet: { $ref: "file:///etc/passwd" }, Owner: { type: "object" } },
    };
    const result = await audit(document);
    expect(result.findings.filter((f) => f.ruleId === "no-external-refs")).toEqual([
      {
        ruleId: "no-external-refs",
        severity: "error",
        message:
          'external $ref "file:///etc/passwd" was not fetched: this audit reads only the contract it is sent ' +
          "(never a URL or a file); bundle the contract into one document (e.g. redocly bundle) to audit what it references",
        pointer: "/components/schemas/Pet",
      },
      expect.objectContaining({
        pointer: "/paths/~1pets~1{id}/get/parameters/1",
        message: expect.stringContaining('"https://schemas.test/params.yaml"'),
      }),
      expect.objectContaining({
        pointer: "/paths/~1pets~1{id}/get/responses/404",
        message: expect.stringContaining('"./responses.yaml"'),
      }),
    ]);
    // Redocly's own no-unresolved-refs is kept for local references that do not resolve...
    expect(result.findings.filter((f) => f.ruleId === "no-unresolved-refs")).toEqual([]);
    // ...and the rest of the contract is still audited.
    expect(
      result.findings.some(
        (f) => f.ruleId === "no-unused-components" && f.pointer === "/components/schemas/Owner",
      ),
    ).toBe(true);
  });

  it("reports a local reference that does not resolve as Redocly's no-unresolved-refs", async () => {
    const document = clean();
    (document.paths as any)["/pets/{id}"].get.responses["200"].content["application/json"].schema = {
      $ref: "#/components/schemas/Missing",
    };
    expect(brief((await audit(document)).findings)).toEqual([
      "error no-unresolved-refs /paths/~1pets~1{id}/get/responses/200/content/application~1json/schema",
    ]);
  });

  it("the refusing resolver never loads anything and records what was asked", async () => {
    const resolver = new RefusingResolver();
    await expect(resolver.resolveDocument(null, "http://127.0.0.1:1/x.yaml")).rejects.toThrow(
      'external reference "http://127.0.0.1:1/x.yaml" is not fetched',
    );
    await expect(resolver.loadExternalRef("/etc/hostname")).rejects.toThrow("is not fetched");
    expect(resolver.refused).toEqual(["http://127.0.0.1:1/x.yaml", "/etc/hostname"]);
  });

  it("reports $ref cycles (which stop Redocly) as no-ref-cycles and lints everything else", async () => {
    const document = clean();
    document.components = {
      schemas: {
        Self: { $ref: "#/components/schemas/Self" },
        Ping: { $ref: "#/components/schemas/Pong" },
        Pong: { $ref: "#/components/schemas/Ping" },
        Via: { $ref: "#/components/schemas/Holder/properties/x" },
        Holder: { $ref: "#/components/schemas/Real" },
        Real: { type: "object", properties: { x: { $ref: "#/components/schemas/Via" } } },
        // Recursion through properties is a normal recursive schema, not a cycle of references.
        Tree: {
          type: "object",
          properties: { children: { type: "array", items: { $ref: "#/components/schemas/Tree" } } },
        },
      },
    };
    const before = structuredClone(document);
    const result = await audit(document);
    expect(
      result.findings.filter((f) => f.ruleId === "no-ref-cycles").map((f) => [f.pointer, f.message]),
    ).toEqual([
      [
        "/components/schemas/Ping",
        "circular $ref: #/components/schemas/Ping → #/components/schemas/Pong → #/components/schemas/Ping never reaches a value",
      ],
      [
        "/components/schemas/Pong",
        "circular $ref: #/components/schemas/Ping → #/components/schemas/Pong → #/components/schemas/Ping never reaches a value",
      ],
      [
        "/components/schemas/Real/properties/x",
        expect.stringContaining("#/components/schemas/Via → #/components/schemas/Holder/properties/x"),
      ],
      [
        "/components/schemas/Self",
        "circular $ref: #/components/schemas/Self → #/components/schemas/Self never reaches a value",
      ],
      ["/components/schemas/Via", expect.stringContaining("circular $ref: #/components/schemas/Via")],
    ]);
    expect(result.findings.some((f) => f.ruleId === "no-unused-components")).toBe(true);
    expect(document).toEqual(before); // the caller's document is not changed
    expect(findRefCycles(clean())).toEqual([]);
  });
});

describe("auditDocument: agent rules", () => {
  it("runs every agent rule on the sample contract, at the documented severities", async () => {
    const result = await audit(sampleContract(12));
    expect(result.summary).toEqual({ errors: 2, warnings: 2, info: 2 });
    expect(brief(result.findings)).toEqual([
      "error agent-payment-instructions /paths/~1resources-0~1{id}/delete/responses/402",
      "error agent-payment-instructions /paths/~1resources-11~1{id}/delete/responses/402",
      "warning agent-operation-id /paths/~1resources-0~1{id}/get",
      "warning agent-operation-id /paths/~1resources-10~1{id}/get",
      "info agent-examples /paths/~1resources-0~1{id}/get/responses/200",
      "info agent-examples /paths/~1resources-7~1{id}/get/responses/200",
    ]);
  });

  it("the operation's example is what an audit of its example input answers", async () => {
    const input = OpenApiAuditRequest.parse(openapiAudit.example.input);
    expect(await auditDocument(auditJob(input))).toEqual(openapiAudit.example.output);
  });

  it("gives the same findings for a YAML text contract as for the object", async () => {
    const yaml = [
      "openapi: 3.0.3",
      "info: {title: T, version: '1'}",
      "paths:",
      "  /pets:",
      "    get:",
      "      responses:",
      "        '200': {description: OK}",
    ].join("\n");
    const fromText = OpenApiAuditRequest.parse({ contract: yaml }).contract as ParsedContract;
    const fromObject = OpenApiAuditRequest.parse({ contract: fromText.document }).contract as ParsedContract;
    const run = (document: ContractDocument) => audit(document);
    expect(await run(fromText.document)).toEqual(await run(fromObject.document));
  });
});

describe("ordering, de-duplication, counting and truncation", () => {
  const finding = (severity: Finding["severity"], pointer: string, ruleId = "r"): Finding => ({
    ruleId,
    severity,
    message: `${ruleId} at ${pointer}`,
    pointer,
    engines: [`redocly:${ruleId}`],
  });

  it("sorts by severity, then pointer token by token (a parent before its children), then rule id", () => {
    const findings = [
      finding("info", ""),
      finding("warning", "/paths/~1a-b"),
      finding("error", "/paths/~1a/get"),
      finding("warning", "/paths/~1a/get", "b"),
      finding("warning", "/paths/~1a/get", "a"),
      finding("error", "/paths/~1a"),
      finding("error", ""),
      finding("warning", "/info"),
    ];
    expect(
      summarize(findings, "3.1.0", 100).findings.map((f) => `${f.severity} ${f.pointer} ${f.ruleId}`),
    ).toEqual([
      "error  r",
      "error /paths/~1a r",
      "error /paths/~1a/get r",
      "warning /info r",
      "warning /paths/~1a/get a",
      "warning /paths/~1a/get b",
      "warning /paths/~1a-b r",
      "info  r",
    ]);
  });

  it("compares pointers token by token", () => {
    expect(comparePointers("/a", "/a/b")).toBeLessThan(0);
    expect(comparePointers("/a/b", "/a-b")).toBeLessThan(0);
    expect(comparePointers("/b", "/a/z")).toBeGreaterThan(0);
    expect(comparePointers("/x", "/x")).toBe(0);
    expect(comparePointers("", "/a")).toBeLessThan(0);
  });

  it("drops exact duplicates (Redocly reports some twice)", () => {
    const result = summarize(
      [finding("error", "/a"), finding("error", "/a"), finding("error", "/b")],
      "3.0.0",
      10,
    );
    expect(result.findings).toHaveLength(2);
    expect(result.summary.errors).toBe(2);
  });

  it("counts every finding in the summary but returns at most maxFindings, and says so", () => {
    const findings = [
      finding("error", "/a"),
      finding("warning", "/b"),
      finding("warning", "/c"),
      finding("info", "/d"),
    ];
    expect(summarize(findings, "3.1.0", 2)).toEqual({
      openapiVersion: "3.1.0",
      auditedAs: "3.1",
      valid: false,
      summary: { errors: 1, warnings: 2, info: 1 },
      findings: [findings[0], findings[1]],
      truncated: true,
    });
    expect(summarize(findings, "3.1.0", 4).truncated).toBe(false);
    expect(summarize([finding("warning", "/a")], "3.1.0", 1).valid).toBe(true);
  });

  it("applies maxFindings to a real audit", async () => {
    const result = await audit(sampleContract(12), { maxFindings: 3 });
    expect(result.findings).toHaveLength(3);
    expect(result).toMatchObject({ truncated: true, summary: { errors: 2, warnings: 2, info: 2 } });
  });
});
