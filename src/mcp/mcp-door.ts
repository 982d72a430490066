import { Server } from "@modelcontextprotocol/sdk/server/index.js";
import {
  CallToolRequestSchema,
  ErrorCode,
  ListToolsRequestSchema,
  McpError,
} from "@modelcontextprotocol/sdk/types.js";
import { AjvJsonSchemaValidator } from "@modelcontextprotocol/sdk/validation/ajv";
import type { Hono } from "hono";
import type { Logger } from "pino";
import type { AnyOperation, StartedOperation } from "../catalog/operation.ts";
import { JOB_STATUS_PATH } from "../catalog/registry.ts";
import { SERVICE } from "../catalog/service.ts";
import { INLINE_JSON_BODY_BYTES } from "../http/large-json-body.ts";
import type { PaymentGate } from "../payments/resource-server/gate.ts";
import type { SignedOffers } from "../payments/resource-server/signed-offers.ts";
import type { PaymentTerms } from "../payments/resource-server/terms.ts";
import { invalidRequest } from "../problem.ts";
import { GET_JOB_TOOL, isTool, MCP_PATH } from "./endpoint.ts";
import { paidTool } from "./paid-tool.ts";
import { problemResult, storedResult } from "./tool-results.ts";
import { toolTerms } from "./tool-terms.ts";
import { type ToolHandler, toolTable } from "./tools.ts";
import { answerMcpRequest } from "./transport.ts";

/**
 * The largest request the endpoint reads: a tool's arguments up to the size the HTTP routes parse on the
 * main thread (INLINE_JSON_BODY_BYTES) and the JSON-RPC envelope with its payment. The SDK parses a whole
 * message on the main thread (its checks walk every key), so an unpaid message is bounded as an unpaid
 * HTTP body is; larger inputs (the routes take 1 MiB, json-diff 8 MiB) go to the HTTP route, which parses
 * them in a worker.
 */
export const MCP_MAX_REQUEST_BYTES = INLINE_JSON_BODY_BYTES + 64 * 1024;

/** What the MCP door needs of the service (a part of buildApp's services). */
export interface McpDoorServices {
  operations: readonly AnyOperation[];
  started: ReadonlyMap<string, StartedOperation<unknown, unknown>>;
  termsById: ReadonlyMap<string, PaymentTerms>;
  gate: PaymentGate;
  log: Logger;
  /** Keeps each tool's terms carrying signed offers for its mcp://tool/<id> resource; absent: unsigned. */
  signedOffers?: SignedOffers;
  now?: () => Date;
}

const INSTRUCTIONS =
  `${SERVICE.name}: ${SERVICE.description} Every tool but ${GET_JOB_TOOL} is paid per call with x402 v2 (scheme exact, ` +
  "USDC): call a tool without payment to get its terms (isError, structuredContent = PaymentRequired), sign them " +
  'with an x402 client and call again with the PaymentPayload in params._meta["x402/payment"]; the receipt is in ' +
  'the result\'s _meta["x402/payment-response"]. Invalid arguments and failed calls are never charged. The ZIP ' +
  "products are sold over HTTP only (see /catalog.json).";

/**
 * Mounts the MCP endpoint (Streamable HTTP) at /mcp: every tool generated from the registry, each paid
 * through the same gate as its HTTP route (paid-tool.ts), plus the free get_job tool.
 */
export function mountMcp<E extends object>(app: Hono<E>, services: McpDoorServices): void {
  const { gate, log, termsById, started } = services;
  const now = services.now ?? (() => new Date());
  // Every tool's terms now, so that their offers are signed before the first call (offers.ready()).
  const termsOf = new Map(
    services.operations
      .filter(isTool)
      .map((operation) => [operation.id, toolTerms(operation, termsById.get(operation.id) as PaymentTerms)]),
  );
  for (const [id, toolTermsOf] of termsOf)
    void services.signedOffers?.keep(toolTermsOf, `tool ${id}`, "json");
  const terms = (operation: AnyOperation) => termsOf.get(operation.id) as PaymentTerms;
  // The free tool reads a job through its route (GET /v1/jobs/{id}): one answer, whichever door asks.
  const getJob: ToolHandler = async (call) => {
    const id = call.arguments?.id;
    // "." and ".." pass encodeURIComponent unchanged and are dot segments of a URL path: /v1/jobs/ or /v1/ would answer.
    if (typeof id !== "string" || id === "." || id === "..") {
      return problemResult(invalidRequest([{ pointer: "/id", message: "must be a UUID" }]).body());
    }
    const response = await app.request(JOB_STATUS_PATH.replace("{id}", encodeURIComponent(id)));
    return storedResult({ status: response.status, headers: {}, body: await response.text() }, false);
  };
  const tools = toolTable(
    services.operations,
    terms,
    (operation) =>
      paidTool({ gate, operation, terms: terms(operation), handler: started.get(operation.id), log, now }),
    getJob,
  );
  // Every request has a server of its own (transport.ts): the one piece a Server would otherwise build
  // for itself, an Ajv instance (2 ms of CPU, more than the rest of a call's MCP handling), is shared. It
  // checks what a client answers to the server's own requests, which this server never sends.
  const jsonSchemaValidator = new AjvJsonSchemaValidator();
  const createServer = () => {
    const server = new Server(
      { name: SERVICE.name, version: "1.0.0" },
      { capabilities: { tools: {} }, instructions: INSTRUCTIONS, jsonSchemaValidator },
    );
    server.setRequestHandler(ListToolsRequestSchema, async () => ({ tools: tools.list }));
    server.setRequestHandler(CallToolRequestSchema, async ({ params }) => {
      const handler = tools.handlers.get(params.name);
      if (!handler) throw new McpError(ErrorCode.InvalidParams, `Unknown tool: ${params.name}`);
      return handler(params);
    });
    return server;
  };
  app.all(MCP_PATH, (c) => answerMcpRequest(c.req.raw, createServer, MCP_MAX_REQUEST_BYTES));
}
