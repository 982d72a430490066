import { randomUUID } from "node:crypto";
import type { Server } from "@modelcontextprotocol/sdk/server/index.js";
import { WebStandardStreamableHTTPServerTransport } from "@modelcontextprotocol/sdk/server/webStandardStreamableHttp.js";
import { isInitializeRequest } from "@modelcontextprotocol/sdk/types.js";

/** MCP_MAX_SESSIONS and MCP_SESSION_IDLE_SECONDS (src/config.ts). */
export interface McpSessionSettings {
  maxSessions: number;
  sessionIdleMs: number;
}

/** The Streamable HTTP transport's session header. */
export const SESSION_HEADER = "mcp-session-id";

/** Seconds a client refused a new session (all taken) is told to wait: the idle sweep frees one by then at most. */
const FULL_RETRY_AFTER_SECONDS = 30;

interface Session {
  server: Server;
  transport: WebStandardStreamableHTTPServerTransport;
  lastSeen: number;
  /** Requests of this session being answered: a busy session is never closed as idle. */
  inFlight: number;
}

const jsonRpcError = (status: number, code: number, message: string, headers: Record<string, string> = {}) =>
  new Response(JSON.stringify({ jsonrpc: "2.0", error: { code, message }, id: null }), {
    status,
    headers: { "content-type": "application/json", ...headers },
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
 * The MCP endpoint's sessions, bounded: at most `maxSessions` at once (a new one beyond that is refused
 * with 503 and Retry-After, nothing else is touched), each closed once idle for `sessionIdleMs` (a client
 * then gets 404 and initializes a new one, as the MCP transport specifies). One SDK Server and transport
 * per session; results are plain JSON answers to each POST (no server-initiated stream: a GET is 405), so
 * no session holds a connection open.
 */
export class McpSessions {
  private readonly sessions = new Map<string, Session>();
  /** Initializations under way, counted against the bound before their session is known. */
  private opening = 0;
  private closed = false;
  private readonly sweeper: NodeJS.Timeout;

  constructor(
    private readonly settings: McpSessionSettings,
    private readonly now: () => number = Date.now,
  ) {
    this.sweeper = setInterval(() => void this.sweep(), Math.min(settings.sessionIdleMs / 2, 30_000));
    this.sweeper.unref();
  }

  /** Sessions open now. */
  get size(): number {
    return this.sessions.size;
  }

  /** One request to the endpoint: routed to its session, or a new session for an initialization. */
  async handle(request: Request, createServer: () => Server, maxBodyBytes: number): Promise<Response> {
    if (request.method === "GET") {
      // The server sends nothing unasked, so it offers no event stream (the transport specification's 405).
      return new Response(null, { status: 405, headers: { allow: "POST, DELETE" } });
    }
    const body = request.method === "POST" ? await readMessage(request, maxBodyBytes) : undefined;
    if (body instanceof Response) return body;
    const id = request.headers.get(SESSION_HEADER);
    if (id !== null) {
      const session = this.sessions.get(id);
      if (!session)
        return jsonRpcError(404, -32001, "Session not found (closed or unknown): initialize a new one");
      session.inFlight++;
      session.lastSeen = this.now();
      try {
        return await session.transport.handleRequest(request, body);
      } finally {
        session.inFlight--;
        session.lastSeen = this.now();
      }
    }
    // Only an initialization opens a session: anything else without one is refused before it costs a server
    // or counts against the bound (a message read by the transport itself is left to it to refuse).
    const message = body?.parsedBody;
    if (
      request.method !== "POST" ||
      (body !== undefined && !(Array.isArray(message) ? message : [message]).some(isInitializeRequest))
    )
      return jsonRpcError(
        400,
        -32000,
        `Bad Request: no ${SESSION_HEADER} header (initialize a session first)`,
      );
    if (this.closed) return jsonRpcError(503, -32000, "the service is shutting down");
    await this.sweep();
    if (this.sessions.size + this.opening >= this.settings.maxSessions) {
      return jsonRpcError(
        503,
        -32000,
        `every MCP session is taken (${this.settings.maxSessions}); retry in ${FULL_RETRY_AFTER_SECONDS} s`,
        { "retry-after": String(FULL_RETRY_AFTER_SECONDS) },
      );
    }
    this.opening++;
    const server = createServer();
    const session: Session = { server, transport: undefined as never, lastSeen: this.now(), inFlight: 1 };
    session.transport = new WebStandardStreamableHTTPServerTransport({
      sessionIdGenerator: randomUUID,
      enableJsonResponse: true,
      maxRequestBodySize: maxBodyBytes,
      onsessioninitialized: (sessionId) => {
        this.sessions.set(sessionId, session);
      },
      onsessionclosed: (sessionId) => {
        this.sessions.delete(sessionId);
      },
    });
    try {
      await server.connect(session.transport);
      return await session.transport.handleRequest(request, body);
    } finally {
      this.opening--;
      session.inFlight--;
      // Anything but an initialization (refused by the transport) leaves no session behind.
      const sessionId = session.transport.sessionId;
      if (sessionId === undefined || !this.sessions.has(sessionId)) await server.close();
    }
  }

  /** Closes the sessions idle for longer than the setting allows. */
  async sweep(): Promise<void> {
    const idleSince = this.now() - this.settings.sessionIdleMs;
    const idle = [...this.sessions].filter(([, s]) => s.inFlight === 0 && s.lastSeen < idleSince);
    await Promise.all(idle.map(([sessionId]) => this.drop(sessionId)));
  }

  /** Refuses new sessions and closes every open one (the service is stopping; in-flight calls have drained). */
  async close(): Promise<void> {
    this.closed = true;
    clearInterval(this.sweeper);
    await Promise.all([...this.sessions.keys()].map((sessionId) => this.drop(sessionId)));
  }

  private async drop(sessionId: string): Promise<void> {
    const session = this.sessions.get(sessionId);
    if (!session) return;
    this.sessions.delete(sessionId);
    await session.server.close();
  }
}
