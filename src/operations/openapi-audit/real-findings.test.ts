import fs from "node:fs";
import { describe, expect, it } from "vitest";
import { zodIssuesToFieldErrors } from "../../problem.ts";
import { auditDocument } from "./audit.ts";
import { auditJob } from "./index.ts";
import {
  type OpenApiAuditOutput,
  OpenApiAuditRequest,
  OpenApiAuditResponse,
  type Ruleset,
} from "./schema.ts";

/**
 * Small contract files (fixtures/) for false errors and missed problems found by comparing the audit
 * with Redocly CLI and Spectral on real contracts. Each goes through the request schema (as a text
 * contract, the way an agent sends a file) and the audit.
 */
const fixture = (name: string) => fs.readFileSync(new URL(`./fixtures/${name}`, import.meta.url), "utf8");

async function auditText(text: string, ruleset: Ruleset = "recommended"): Promise<OpenApiAuditOutput> {
  const parsed = OpenApiAuditRequest.safeParse({ contract: text, ruleset, maxFindings: 500 });
  if (!parsed.success) throw new Error(JSON.stringify(zodIssuesToFieldErrors(parsed.error.issues)));
  return OpenApiAuditResponse.parse(await auditDocument(auditJob(parsed.data)));
}

const errors = (result: OpenApiAuditOutput) => result.findings.filter((f) => f.severity === "error");

describe("openapi-audit on small real-world contracts", () => {
  it("a 402 that is not a payment challenge (Rebilly's DELETE /contacts/{id}) is a note, not an error", async () => {
    const text = fixture("rebilly-402.yaml");
    for (const ruleset of ["recommended", "strict"] as const) {
      const result = await auditText(text, ruleset);
      const note = result.findings.find((f) => f.ruleId === "agent-payment-instructions");
      expect(note).toMatchObject({
        severity: "info",
        pointer: "/paths/~1contacts~1{id}/delete/responses/402",
        message: expect.stringContaining("does not declare x402"),
      });
      if (ruleset === "recommended") expect(errors(result)).toEqual([]);
    }
  });

  it("the same 402 is an error where the API declares x402 (a payment scheme elsewhere)", async () => {
    const text = fixture("rebilly-402.yaml").replace(
      "components:\n",
      "components:\n  securitySchemes:\n    x402: {type: apiKey, in: header, name: PAYMENT-SIGNATURE}\n",
    );
    const result = await auditText(text);
    expect(result.valid).toBe(false);
    expect(errors(result)).toMatchObject([
      { ruleId: "agent-payment-instructions", pointer: "/paths/~1contacts~1{id}/delete/responses/402" },
    ]);
  });

  it("a $ref inside example data is data: no external-reference error, nothing fetched", async () => {
    const result = await auditText(fixture("example-ref.yaml"));
    expect(result.findings.filter((f) => /ref/i.test(f.ruleId))).toEqual([]);
    expect(errors(result)).toEqual([]);
    expect(result.valid).toBe(true);
  });

  it("a numeric enum on a string type is found by both engines, reported once per enum", async () => {
    const result = await auditText(fixture("numeric-enum-string.yaml"));
    const found = result.findings.filter((f) =>
      f.pointer.startsWith("/paths/~1orders/get/parameters/0/schema"),
    );
    expect(found).toHaveLength(1);
    expect(found[0]).toMatchObject({
      severity: "error",
      pointer: "/paths/~1orders/get/parameters/0/schema/enum",
      message: 'enum values 1, 2, 3 are not of type "string"',
      engines: ["redocly:no-enum-type-mismatch", "spectral:typed-enum"],
    });
  });

  it("`items` as an array in OpenAPI 3.0 is an error", async () => {
    const result = await auditText(fixture("items-array-3.0.yaml"));
    expect(result.valid).toBe(false);
    expect(errors(result)).toMatchObject([
      {
        pointer: "/paths/~1tags/get/responses/200/content/application~1json/schema/items",
        engines: expect.arrayContaining(["spectral:oas3-schema"]),
      },
    ]);
  });

  it("a licence URL with a trailing space is an error", async () => {
    const result = await auditText(fixture("license-url-space.yaml"));
    expect(result.valid).toBe(false);
    expect(errors(result)).toMatchObject([
      { pointer: "/info/license/url", message: expect.stringMatching(/url/i) },
    ]);
  });

  it("an OpenAPI 3.2 document is accepted and audited with the 3.1 rules, and the result says so", async () => {
    const result = await auditText(fixture("openapi-3.2.yaml"));
    expect(result.openapiVersion).toBe("3.2.0");
    expect(result.auditedAs).toBe("3.1");
    expect(result.findings).toContainEqual(
      expect.objectContaining({
        ruleId: "openapi-3.2-audited-as-3.1",
        severity: "info",
        pointer: "/openapi",
      }),
    );
    expect(result.valid).toBe(true);
  });

  it("every finding names the engines that found it; a problem both engines find is reported once", async () => {
    const result = await auditText(fixture("items-array-3.0.yaml"));
    for (const finding of result.findings) {
      expect(finding.engines.length).toBeGreaterThan(0);
      for (const engine of finding.engines) expect(engine).toMatch(/^(redocly|spectral|openapi-audit):/);
    }
    const keys = result.findings.map((f) => `${f.pointer} ${f.message}`);
    expect(new Set(keys).size).toBe(keys.length);
  });
});
