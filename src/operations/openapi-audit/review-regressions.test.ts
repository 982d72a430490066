import { describe, expect, it } from "vitest";
import { zodIssuesToFieldErrors } from "../../problem.ts";
import { auditDocument } from "./audit.ts";
import type { ContractDocument } from "./contract.ts";
import { OpenApiAuditRequest, OpenApiAuditResponse } from "./schema.ts";

const audit = (document: ContractDocument) =>
  auditDocument({
    document,
    openapi: String(document.openapi),
    ruleset: "recommended",
    maxFindings: 500,
  }).then((result) => OpenApiAuditResponse.parse(result));

const base = (components: Record<string, unknown>): ContractDocument => ({
  openapi: "3.1.0",
  info: { title: "t", version: "1" },
  paths: {},
  components,
});

describe("openapi-audit: cases a review found", () => {
  it("a $ref naming the contract's own document is an external reference, not a crash", async () => {
    for (const ref of ["/contract.json#/components/schemas/A", "contract.json#/components/schemas/B"]) {
      const result = await audit(
        base({ schemas: { A: { $ref: ref }, B: { $ref: "contract.json#/components/schemas/A" } } }),
      );
      expect(result.valid).toBe(false);
      expect(result.findings.map((f) => f.ruleId)).toContain("no-external-refs");
    }
  });

  it("a $ref inside literal example data is data, not a reference cycle", async () => {
    const result = await audit(
      base({ examples: { E: { summary: "x", value: { $ref: "#/components/examples/E/value" } } } }),
    );
    expect(result.findings.map((f) => f.ruleId)).not.toContain("no-ref-cycles");
  });

  it("a schema property named `value` still has its $ref cycles found", async () => {
    const result = await audit(
      base({
        schemas: {
          A: { type: "object", properties: { value: { $ref: "#/components/schemas/A/properties/value" } } },
        },
      }),
    );
    expect(result.findings.map((f) => f.ruleId)).toContain("no-ref-cycles");
  });

  it("duplicate keys in a JSON text contract are a 400 before payment", () => {
    const parsed = OpenApiAuditRequest.safeParse({
      contract: '{"openapi":"3.1.0","openapi":"3.0.0","info":{"title":"t","version":"1"},"paths":{}}',
    });
    expect(parsed.success).toBe(false);
    const errors = zodIssuesToFieldErrors(parsed.error?.issues ?? []);
    expect(errors[0]?.pointer).toBe("/contract");
    expect(errors[0]?.message).toContain("duplicate key at /openapi");
  });
});
