import type { CallToolResult, Tool } from "@modelcontextprotocol/sdk/types.js";
import { inputJsonSchema, outputJsonSchema } from "../contract/json-schema.ts";
import type { AnyOperation } from "../contract/operation.ts";
import type { PaymentTerms } from "../payments/resource-server/terms.ts";
import { GET_JOB_TOOL, isTool } from "./endpoint.ts";
import type { ToolCall } from "./paid-tool.ts";
import { PAYMENT_META_KEY, PAYMENT_RESPONSE_META_KEY } from "./tool-results.ts";

/** The JSON Schema of a tool's input or output: an object at the top (MCP requires it), no `$schema` inside. */
function objectSchema(schema: Record<string, unknown>): Record<string, unknown> & { type: "object" } {
  const { $schema: _dialect, ...rest } = schema;
  return { ...rest, type: "object" };
}

/** The x402 PaymentRequired object a tool error carries when a payment is required or was rejected. */
const PAYMENT_REQUIRED_SCHEMA = {
  type: "object",
  description: "x402 v2 PaymentRequired (isError): the terms to pay, and in `error` why a payment is needed.",
  required: ["x402Version", "resource", "accepts"],
  properties: {
    x402Version: { const: 2 },
    error: { type: "string" },
    resource: { type: "object", required: ["url"], properties: { url: { type: "string" } } },
    accepts: { type: "array", items: { type: "object" } },
    extensions: { type: "object" },
    [PAYMENT_RESPONSE_META_KEY]: { type: "object" },
  },
};

/** An RFC 9457 problem a tool error carries otherwise (invalid input with a JSON Pointer per field, 409, 503 …). */
const PROBLEM_SCHEMA = {
  type: "object",
  description: "RFC 9457 problem details (isError); nothing was charged.",
  required: ["type", "title", "status", "detail"],
  properties: {
    type: { type: "string" },
    title: { type: "string" },
    status: { type: "integer" },
    detail: { type: "string" },
    errors: {
      type: "array",
      items: {
        type: "object",
        required: ["pointer", "message"],
        properties: { pointer: { type: "string" }, message: { type: "string" } },
      },
    },
    retryAfterSeconds: { type: "integer" },
  },
};

/** Members of a tool's `_meta` in tools/list: the price and the terms, so a client may pay without asking first. */
export const PRICE_META_KEY = "utility402/price";

/**
 * An operation as an MCP tool: named by its id, its input schema the route's, its output schema the
 * route's result (or, with isError, the PaymentRequired or a problem: the x402 MCP transport puts the
 * PaymentRequired in structuredContent, which clients validate against this schema too).
 */
export function toolDefinition(operation: AnyOperation, terms: PaymentTerms): Tool {
  const { amount, asset, network, payTo } = terms.requirements;
  return {
    name: operation.id,
    title: operation.summary,
    description:
      `${operation.description}\n\nPrice: USD ${operation.priceUsd} per call (${amount} atomic units of USDC ` +
      `${asset} on ${network}), paid with x402 v2: call once without payment for the terms (isError, ` +
      `structuredContent = PaymentRequired), then again with the signed PaymentPayload in ` +
      `params._meta["${PAYMENT_META_KEY}"]. Invalid arguments and failed calls are never charged.` +
      (operation.kind === "async"
        ? ` The result is a queued job: read it with the free ${GET_JOB_TOOL} tool until it succeeds or fails; the payment is settled only when the result is ready.`
        : ""),
    inputSchema: objectSchema(inputJsonSchema(operation)),
    outputSchema: {
      type: "object",
      anyOf: [objectSchema(outputJsonSchema(operation)), PAYMENT_REQUIRED_SCHEMA, PROBLEM_SCHEMA],
    },
    annotations: { title: operation.summary, readOnlyHint: true, destructiveHint: false },
    _meta: {
      [PRICE_META_KEY]: { usd: operation.priceUsd, amount, asset, network, payTo },
      "x402/resource": terms.paymentRequired.resource.url,
    },
  };
}

/** The free get_job tool: a job's state or result, as GET /v1/jobs/{id} answers it. */
export const GET_JOB_TOOL_DEFINITION: Tool = {
  name: GET_JOB_TOOL,
  title: "Read a job's state or result (free)",
  description:
    "Free: reads the job a paid tool queued (research-brief answers its jobId) as GET /v1/jobs/{id} does: its " +
    "status (queued → running → succeeded | failed), its result once succeeded, and what became of its held " +
    "payment. Poll every pollAfterSeconds until the status is final.",
  inputSchema: {
    type: "object",
    properties: {
      id: { type: "string", format: "uuid", description: "The job id (jobId of the queued job)." },
    },
    required: ["id"],
    additionalProperties: false,
  },
  annotations: { title: "Read a job (free)", readOnlyHint: true, idempotentHint: true },
};

export type ToolHandler = (call: ToolCall) => Promise<CallToolResult>;

/** Every tool of the endpoint, from the one registry (endpoint.ts says which operations are tools). */
export function toolTable(
  operations: readonly AnyOperation[],
  toolTerms: (operation: AnyOperation) => PaymentTerms,
  paid: (operation: AnyOperation) => ToolHandler,
  getJob: ToolHandler,
): { list: Tool[]; handlers: Map<string, ToolHandler> } {
  const tools = operations.filter(isTool);
  return {
    list: [
      ...tools.map((operation) => toolDefinition(operation, toolTerms(operation))),
      GET_JOB_TOOL_DEFINITION,
    ],
    handlers: new Map([
      ...tools.map((operation) => [operation.id, paid(operation)] as const),
      [GET_JOB_TOOL, getJob],
    ]),
  };
}
