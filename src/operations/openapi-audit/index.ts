import { defineOperation } from "../../contract/operation.ts";
import type { AuditJob } from "./audit.ts";
import { MAX_OBJECT_VALUES } from "./contract.ts";
import { type AuditPool, closeSharedAuditPool, DEFAULT_AUDIT_POOL_OPTIONS, sharedAuditPool } from "./pool.ts";
import {
  type OpenApiAuditInput,
  type OpenApiAuditOutput,
  OpenApiAuditRequest,
  OpenApiAuditResponse,
} from "./schema.ts";

/** A contract of up to 3 MiB sent as text grows when escaped into a JSON string (\n, \"): room for that. */
const MAX_BODY_BYTES = 4 * 1024 * 1024;

export const auditJob = ({ contract, ruleset, maxFindings }: OpenApiAuditInput): AuditJob =>
  contract.deferred
    ? { text: contract.text, ruleset, maxFindings }
    : { document: contract.document, openapi: contract.openapi, ruleset, maxFindings };

/**
 * Runs one validated request in the worker pool; every failure is a Problem, so nothing is charged.
 * `client` (the payer) gets its fair share of the workers: see AuditPool.
 */
export const runAudit = (
  input: OpenApiAuditInput,
  pool: AuditPool = sharedAuditPool(),
  client?: string,
): Promise<OpenApiAuditOutput> => pool.run(auditJob(input), client);

const TIME_LIMIT = `${DEFAULT_AUDIT_POOL_OPTIONS.timeLimitMs / 1000} s`;

const EXAMPLE_CONTRACT = {
  openapi: "3.1.0",
  info: {
    title: "Weather",
    version: "1.0.0",
    description: "Forecasts, paid per call with x402.",
    contact: { url: "https://weather.test/support" },
    license: { name: "MIT", identifier: "MIT" },
  },
  servers: [{ url: "https://api.weather.test" }],
  tags: [{ name: "forecast", description: "Forecasts" }],
  // The payment scheme is declared but not applied to the operation: its 402 does not say how to pay.
  security: [],
  components: { securitySchemes: { x402: { type: "apiKey", in: "header", name: "PAYMENT-SIGNATURE" } } },
  paths: {
    "/forecast": {
      get: {
        summary: "Forecast for a city",
        description: "The next 24 hours for one city.",
        tags: ["forecast"],
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
    "Lints an inline OpenAPI 3.0, 3.1 or 3.2 contract (JSON or YAML text up to 3 MiB, or an object of up to 12,000 values) with Redocly's " +
    "recommended (or recommended-strict) rules and Spectral's OpenAPI ruleset side by side, plus checks that " +
    "matter to agents (operationId, 4xx responses, examples, how to pay where the API declares x402), and " +
    "returns bounded, machine-readable findings (rule, severity, JSON Pointer, the engines that found it), one " +
    "per problem, sorted by severity then pointer. External $refs are never fetched or read: each one is a " +
    `no-external-refs finding. Each audit runs in a worker thread with a ${TIME_LIMIT} time limit.`,
  tags: ["api"],
  inputFrom: "body",
  input: OpenApiAuditRequest,
  maxBodyBytes: MAX_BODY_BYTES,
  // An object contract with duplicate keys is ambiguous: refused before payment, with a pointer. A body
  // of many values would take the event loop longer than 50 ms to parse: counted, and refused, first.
  json: { rejectDuplicateKeys: true, maxValues: MAX_OBJECT_VALUES + 16 },
  output: OpenApiAuditResponse,
  outputContentType: "application/json",
  example: {
    input: { contract: EXAMPLE_CONTRACT, maxFindings: 100, ruleset: "recommended" },
    // The 402 header's example: the contract above would take half of the header's budget.
    briefInput: {
      contract: {
        openapi: "3.1.0",
        info: { title: "Weather", version: "1.0.0" },
        paths: { "/forecast": { get: { responses: { "200": { description: "The forecast" } } } } },
      },
    },
    output: {
      openapiVersion: "3.1.0",
      auditedAs: "3.1",
      valid: false,
      summary: { errors: 1, warnings: 2, info: 1 },
      findings: [
        {
          ruleId: "agent-payment-instructions",
          severity: "error",
          message:
            "GET /forecast answers 402 Payment Required but does not say how to pay: add an x-payment-info object (price, network, asset, payTo), a payment security scheme (apiKey in header PAYMENT-SIGNATURE or X-PAYMENT), or a described PAYMENT-REQUIRED header on the 402 response",
          pointer: "/paths/~1forecast/get/responses/402",
          engines: ["openapi-audit:agent-payment-instructions"],
        },
        {
          ruleId: "no-unused-components",
          severity: "warning",
          message: 'Security scheme: "x402" is never used.',
          pointer: "/components/securitySchemes/x402",
          docsUrl: "https://redocly.com/docs/cli/rules/oas/no-unused-components",
          engines: ["redocly:no-unused-components"],
        },
        {
          ruleId: "agent-operation-id",
          severity: "warning",
          message: "GET /forecast has no operationId: agents and client generators name the call after it",
          pointer: "/paths/~1forecast/get",
          engines: ["openapi-audit:agent-operation-id", "spectral:operation-operationId"],
        },
        {
          ruleId: "agent-examples",
          severity: "info",
          message:
            "GET /forecast: response 200 has no example (example or examples on a media type, or an example on its schema)",
          pointer: "/paths/~1forecast/get/responses/200",
          engines: ["openapi-audit:agent-examples"],
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
  handler: async (input, ctx) => ({
    body: await runAudit(input, sharedAuditPool(), ctx.payer),
  }),
  close: closeSharedAuditPool,
});
