import { defineOperation } from "../../catalog/operation.ts";
import { OpenApiAuditRequest, OpenApiAuditResponse } from "./schema.ts";

export const openapiAudit = defineOperation({
  id: "openapi-audit",
  method: "POST",
  path: "/v1/openapi-audit",
  priceUsd: "0.05",
  kind: "sync",
  summary: "Audit an inline OpenAPI 3.0/3.1 contract",
  description:
    "Lints an inline OpenAPI 3.0 or 3.1 contract and returns bounded, machine-readable findings " +
    "(rule, severity, JSON Pointer), never fetching external references.",
  tags: ["api"],
  inputFrom: "body",
  input: OpenApiAuditRequest,
  output: OpenApiAuditResponse,
  outputContentType: "application/json",
  example: {
    input: { contract: { openapi: "3.1.0", info: { title: "Demo", version: "1.0.0" }, paths: {} } },
  },
  errorResponses: [],
});
