import type { Server } from "@modelcontextprotocol/sdk/server/index.js";
import { WebStandardStreamableHTTPServerTransport } from "@modelcontextprotocol/sdk/server/webStandardStreamableHttp.js";

const jsonRpcError = (status: number, code: number, message: string) =>
  new Response(JSON.stringify({ jsonrpc: "2.0", error: { code, message }, id: null }), {
    status,
    headers: { "content-type": "application/json" },
  });

/**
 * A POST's JSON-RPC message, read as the routes read a JSON body of a declared length: whole, straight
 * from the socket (the transport's own reader builds a web stream for it, the dearest part of a small
 * request). A body without a declared length is left to the transport, which cuts it at the same bound.
 */
async function readMessage(request: Request, maxBodyBytes: number) {
  const declared = request.headers.get("content-length");
  if (declared === null) return undefined;
  if (Number(declared) > maxBodyBytes) {
    return jsonRpcError(413, -32000, `the request body exceeds ${maxBodyBytes} bytes`);
  }
  try {
    return { parsedBody: JSON.parse(await request.text()) as unknown };
  } catch {
    return jsonRpcError(400, -32700, "Parse error: Invalid JSON");
  }
}

/**
 * One request to the MCP endpoint, answered by the SDK's Streamable HTTP transport in its stateless mode:
 * a server and transport for this request alone, closed once it is answered. No session is kept, so there
 * is nothing a flood of initializations can fill: a session held nothing the tools use (a paid call carries
 * its payment, the server sends nothing unasked), and without one any instance behind a load balancer
 * answers any request. No `mcp-session-id` is issued; one a client still sends is ignored.
 */
export async function answerMcpRequest(
  request: Request,
  createServer: () => Server,
  maxBodyBytes: number,
): Promise<Response> {
  if (request.method !== "POST") {
    // The server sends nothing unasked (no event stream to GET) and keeps no session (none to DELETE).
    return new Response(null, { status: 405, headers: { allow: "POST" } });
  }
  const body = await readMessage(request, maxBodyBytes);
  if (body instanceof Response) return body;
  const server = createServer();
  const transport = new WebStandardStreamableHTTPServerTransport({
    sessionIdGenerator: undefined,
    enableJsonResponse: true,
    maxRequestBodySize: maxBodyBytes,
  });
  try {
    await server.connect(transport);
    return await transport.handleRequest(request, body);
  } finally {
    await server.close();
  }
}
