import { z } from "zod";
import { type ContractDocument, isPlainObject, MAX_CONTRACT_BYTES, parseContract } from "./contract.ts";

/**
 * The contract is parsed and its version checked here, before any payment: a YAML or JSON syntax
 * error, a Swagger 2.0 document or an oversized contract is a 400 that is never charged.
 */
const Contract = z
  .union(
    [
      // Checked in place: z.record would rebuild (and copy) the whole top level of the document.
      z
        .custom<ContractDocument>(isPlainObject, { error: "the contract must be an object or a string" })
        .meta({ type: "object" }),
      z.string().min(1, { error: "the contract text is empty" }),
    ],
    { error: "the contract must be an OpenAPI document: an object, or its JSON/YAML text" },
  )
  .transform((value, ctx) => {
    const result = parseContract(value);
    if (result.ok) return result.contract;
    for (const issue of result.issues) {
      ctx.issues.push({ code: "custom", input: value, path: issue.path, message: issue.message });
    }
    return z.NEVER;
  })
  .meta({
    description:
      "An OpenAPI 3.0 or 3.1 document, as an object or as JSON/YAML text; at most " +
      `${MAX_CONTRACT_BYTES} bytes (the text, or the object as JSON). External $refs are never fetched.`,
  });

export const OpenApiAuditRequest = z
  .strictObject({
    contract: Contract,
    maxFindings: z
      .int()
      .min(1)
      .max(500)
      .default(100)
      .meta({ description: "At most this many findings are returned (the summary counts all of them)." }),
    ruleset: z
      .enum(["recommended", "strict"])
      .default("recommended")
      .meta({
        description:
          "recommended: Redocly's recommended rules plus the agent rules at their own severities; " +
          "strict: Redocly's recommended-strict rules and every agent finding as an error.",
      }),
  })
  .meta({ id: "OpenApiAuditRequest" });

export type OpenApiAuditInput = z.output<typeof OpenApiAuditRequest>;
export type Ruleset = OpenApiAuditInput["ruleset"];

export const Severity = z.enum(["error", "warning", "info"]);
export type Severity = z.output<typeof Severity>;

export const Finding = z
  .strictObject({
    ruleId: z.string().meta({ description: "A Redocly rule id, or one of this service's agent-* rules." }),
    severity: Severity,
    message: z.string(),
    pointer: z
      .string()
      .meta({ description: "JSON Pointer (RFC 6901) into the contract; empty for the root." }),
    docsUrl: z.url().optional(),
    engines: z
      .array(z.string())
      .min(1)
      .meta({
        description:
          'Who found it, as "<engine>:<its rule id>": redocly, spectral or openapi-audit (the agent and contract ' +
          "rules). A problem several engines report at the same pointer is one finding listing them all.",
      }),
  })
  .meta({ id: "OpenApiAuditFinding" });
export type Finding = z.output<typeof Finding>;

export const OpenApiAuditResponse = z
  .strictObject({
    openapiVersion: z.string().meta({ description: 'The contract\'s "openapi" field, e.g. "3.1.0".' }),
    auditedAs: z.enum(["3.0", "3.1"]).meta({
      description: "The rule set the contract was audited with: 3.1 for OpenAPI 3.1 and 3.2 documents.",
    }),
    valid: z.boolean().meta({ description: "True when the audit found no error." }),
    summary: z
      .strictObject({ errors: z.int().min(0), warnings: z.int().min(0), info: z.int().min(0) })
      .meta({ description: "Counts of all findings, including those beyond maxFindings." }),
    findings: z
      .array(Finding)
      .meta({ description: "Sorted by severity (error, warning, info), then by pointer, then by rule id." }),
    truncated: z.boolean().meta({ description: "True when more than maxFindings findings were found." }),
  })
  .meta({ id: "OpenApiAuditResponse" });

export type OpenApiAuditOutput = z.output<typeof OpenApiAuditResponse>;
