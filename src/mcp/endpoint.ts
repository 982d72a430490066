import type { AnyOperation } from "../contract/operation.ts";

/*
 * What the discovery documents say of the MCP endpoint, from the one registry: its path, its transport,
 * and which operations are tools. The door itself is in ./mcp-door.ts.
 */

/** The MCP endpoint (Streamable HTTP transport). */
export const MCP_PATH = "/mcp";

/** The MCP transport the endpoint speaks, as the x402 Bazaar extension names it. */
export const MCP_TRANSPORT = "streamable-http";

/** The free tool that reads a job (what GET /v1/jobs/{id} answers). */
export const GET_JOB_TOOL = "get_job";

/**
 * Whether an operation is an MCP tool (named by its id): every paid call whose input is a JSON body.
 * The query-string form of an operation is HTTP's compatibility twin of its POST form (the same tool);
 * products are ZIP downloads, left to HTTP (docs/mcp.md says why).
 */
export const isTool = (operation: AnyOperation) =>
  operation.kind !== "product" && operation.inputFrom === "body";

/** The endpoint as /catalog.json, /.well-known/x402 and /openapi.json list it. */
export function mcpEndpoint(operations: readonly AnyOperation[], baseUrl: string) {
  return {
    url: baseUrl + MCP_PATH,
    transport: MCP_TRANSPORT,
    payment:
      'x402 v2 MCP transport: an unpaid tool call answers isError with the PaymentRequired in structuredContent; retry with the PaymentPayload in params._meta["x402/payment"]; the receipt is in the result\'s _meta["x402/payment-response"]',
    tools: [
      ...operations
        .filter(isTool)
        .map((operation) => ({ name: operation.id, priceUsd: operation.priceUsd, kind: operation.kind })),
      { name: GET_JOB_TOOL, priceUsd: "0", kind: "free" },
    ],
  };
}
