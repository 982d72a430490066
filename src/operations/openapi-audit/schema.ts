import { z } from "zod";

export const OpenApiAuditRequest = z
  .strictObject({
    contract: z
      .union([z.record(z.string(), z.unknown()), z.string().min(1)])
      .meta({ description: "An OpenAPI 3.0 or 3.1 document, as an object or as JSON/YAML text." }),
    maxFindings: z.int().min(1).max(500).default(100),
    ruleset: z.enum(["recommended", "strict"]).default("recommended"),
  })
  .meta({ id: "OpenApiAuditRequest" });

export const OpenApiAuditResponse = z
  .strictObject({
    openapiVersion: z.string(),
    valid: z.boolean(),
    summary: z.strictObject({ errors: z.int().min(0), warnings: z.int().min(0), info: z.int().min(0) }),
    findings: z.array(
      z.strictObject({
        ruleId: z.string(),
        severity: z.enum(["error", "warning", "info"]),
        message: z.string(),
        pointer: z.string(),
        docsUrl: z.url().optional(),
      }),
    ),
    truncated: z.boolean(),
  })
  .meta({ id: "OpenApiAuditResponse" });
