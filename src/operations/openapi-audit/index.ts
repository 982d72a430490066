import { defineOperation } from "../../catalog/operation.ts";
import type { AuditJob } from "./audit.ts";
import { type AuditPool, closeSharedAuditPool, DEFAULT_AUDIT_POOL_OPTIONS, sharedAuditPool } from "./pool.ts";
import {
  type OpenApiAuditInput,
  type OpenApiAuditOutput,
  OpenApiAuditRequest,
  OpenApiAuditResponse,
} from "./schema.ts";

/** A contract of up to 1 MiB sent as text grows when escaped into a JSON string: room for that. */
const MAX_BODY_BYTES = 2 * 1024 * 1024;

export const auditJob = (input: OpenApiAuditInput): AuditJob => ({
  document: input.contract.document,
  openapi: input.contract.openapi,
  ruleset: input.ruleset,
  maxFindings: input.maxFindings,
});

/** Runs one validated request in the worker pool; every failure is a Problem, so nothing is charged. */
export const runAudit = (
  input: OpenApiAuditInput,
  pool: AuditPool = sharedAuditPool(),
): Promise<OpenApiAuditOutput> => pool.run(auditJob(input));

const TIME_LIMIT = `${DEFAULT_AUDIT_POOL_OPTIONS.timeLimitMs / 1000} s`;

const EXAMPLE_CONTRACT = {
  openapi: "3.1.0",
  info: { title: "Weather", version: "1.0.0", license: { name: "MIT", identifier: "MIT" } },
  servers: [{ url: "https://api.weather.test" }],
  security: [],
  paths: {
    "/forecast": {
      get: {
        summary: "Forecast for a city",
        parameters: [{ name: "city", in: "query", required: true, schema: { type: "string" } }],
        responses: {
          "200": {
            description: "The forecast",
            content: { "application/json": { schema: { type: "object" } } },
          },
          "402": { description: "Payment required" },
        },
      },
    },
  },
};

export const openapiAudit = defineOperation({
  id: "openapi-audit",
  method: "POST",
  path: "/v1/openapi-audit",
  priceUsd: "0.05",
  kind: "sync",
  summary: "Audit an inline OpenAPI 3.0/3.1 contract",
  description:
    "Lints an inline OpenAPI 3.0 or 3.1 contract (object, JSON or YAML text, up to 1 MiB) with Redocly's " +
    "recommended (or recommended-strict) rules plus checks that matter to agents (operationId, 4xx responses, " +
    "examples, how to pay for a paid operation), and returns bounded, machine-readable findings (rule, " +
    "severity, JSON Pointer), sorted by severity then pointer. External $refs are never fetched: each one is " +
    `a no-external-refs finding. Each audit runs in a worker thread with a ${TIME_LIMIT} time limit.`,
  tags: ["api"],
  inputFrom: "body",
  input: OpenApiAuditRequest,
  maxBodyBytes: MAX_BODY_BYTES,
  // An object contract with duplicate keys is ambiguous: refused before payment, with a pointer.
  json: { rejectDuplicateKeys: true },
  output: OpenApiAuditResponse,
  outputContentType: "application/json",
  example: {
    input: { contract: EXAMPLE_CONTRACT, maxFindings: 100, ruleset: "recommended" },
    output: {
      openapiVersion: "3.1.0",
      valid: false,
      summary: { errors: 1, warnings: 1, info: 1 },
      findings: [
        {
          ruleId: "agent-payment-instructions",
          severity: "error",
          message:
            "GET /forecast answers 402 Payment Required but does not say how to pay: add an x-payment-info " +
            "object (price, network, asset, payTo), a payment security scheme (apiKey in header " +
            "PAYMENT-SIGNATURE or X-PAYMENT), or a described PAYMENT-REQUIRED header on the 402 response",
          pointer: "/paths/~1forecast/get/responses/402",
        },
        {
          ruleId: "agent-operation-id",
          severity: "warning",
          message: "GET /forecast has no operationId: agents and client generators name the call after it",
          pointer: "/paths/~1forecast/get",
        },
        {
          ruleId: "agent-examples",
          severity: "info",
          message:
            "GET /forecast: response 200 has no example (example or examples on a media type, or an example " +
            "on its schema)",
          pointer: "/paths/~1forecast/get/responses/200",
        },
      ],
      truncated: false,
    },
  },
  errorResponses: [
    {
      status: 422,
      description: `The audit exceeded its time limit (${TIME_LIMIT}) or its memory limit and was stopped. Never charged.`,
    },
    {
      status: 503,
      description:
        "Payments temporarily unavailable, or every audit worker is busy; retry after Retry-After. Never charged.",
    },
  ],
  handler: async (input) => ({ body: await runAudit(input) }),
  close: closeSharedAuditPool,
});
