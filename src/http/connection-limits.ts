import fs from "node:fs";
import { type IncomingMessage, type Server, type ServerOptions, ServerResponse } from "node:http";
import { BlockList, isIP, type Socket } from "node:net";
import type { Http2Bindings, HttpBindings } from "@hono/node-server";
import type { Context } from "hono";
import type { Logger } from "pino";
import type { Config } from "../config.ts";
import { Problem } from "../problem.ts";

export type HttpLimits = Config["http"];

/** What @hono/node-server passes a fetch handler as its second argument. */
export interface NodeBindings {
  incoming: IncomingMessage;
  outgoing: ServerResponse;
}

type Fetch = (request: Request, env: HttpBindings | Http2Bindings) => unknown;

const ON_CLOSE = Symbol("onClose");

/** What runs once when a response closes: `release(key)`, a function shared by all responses, so none is made per request. */
interface CloseHook {
  release: (key: string) => void;
  key: string;
}

/**
 * A response that calls back once when it closes, without adding a listener: `limitRequestsPerClient`
 * releases a request's count this way. One more "close" listener on every response made each request's
 * objects survive young-generation collections (3 MB promoted per scavenge instead of 0.2 MB): an unpaid
 * 402 cost about 35 % more CPU, most of it garbage collection.
 */
export class ClosingResponse<
  Request extends IncomingMessage = IncomingMessage,
> extends ServerResponse<Request> {
  [ON_CLOSE]?: CloseHook;

  // `arguments` passed on as they are: a rest parameter would build an array on every event of every response.
  override emit(event: string | symbol): boolean {
    if (event === "close") {
      const hook = this[ON_CLOSE];
      this[ON_CLOSE] = undefined;
      hook?.release(hook.key);
    }
    // biome-ignore lint/complexity/noArguments: see above
    return ServerResponse.prototype.emit.apply(this, arguments as unknown as [string]);
  }
}

/** Calls `release(key)` once when `response` closes (by ClosingResponse if it is one, else by a listener). */
function whenClosed(response: ServerResponse, release: (key: string) => void, key: string): void {
  if (response instanceof ClosingResponse) response[ON_CLOSE] = { release, key };
  else response.once("close", () => release(key));
}

/**
 * Node's own timeouts, tightened: a connection that sends nothing (or a request head slowly) is
 * answered 408 and closed after `headersTimeoutMs`, checked every second (Node 20 checks every
 * 30 s by default and waits 60 s, so idle sockets pile up for 90 s).
 */
export function httpServerOptions(limits: HttpLimits): ServerOptions {
  return {
    ServerResponse: ClosingResponse,
    headersTimeout: limits.headersTimeoutMs,
    requestTimeout: limits.requestTimeoutMs,
    keepAliveTimeout: limits.keepAliveTimeoutMs,
    connectionsCheckingInterval: Math.min(1000, Math.max(100, Math.floor(limits.headersTimeoutMs / 4))),
  };
}

/** "::ffff:10.0.0.1" (an IPv4 peer on a dual-stack socket) → "10.0.0.1". */
export const normalizeAddress = (address: string | undefined): string => {
  const plain = address ?? "";
  return plain.startsWith("::ffff:") && isIP(plain.slice(7)) === 4 ? plain.slice(7) : plain;
};

/** TRUSTED_PROXIES (addresses and CIDR subnets, validated by the config) as a list to test peers against. */
export function trustedProxyList(entries: readonly string[]): (address: string) => boolean {
  if (entries.length === 0) return () => false;
  const list = new BlockList();
  for (const entry of entries) {
    const [address = "", prefix] = entry.split("/");
    const family = isIP(address) === 6 ? "ipv6" : "ipv4";
    if (prefix === undefined) list.addAddress(address, family);
    else list.addSubnet(address, Number(prefix), family);
  }
  return (address) => {
    const family = isIP(address);
    return family !== 0 && list.check(address, family === 6 ? "ipv6" : "ipv4");
  };
}

/**
 * The client a request is counted against: the peer's address, or, when the peer is a trusted
 * proxy, the rightmost address in X-Forwarded-For that is not itself a trusted proxy (addresses to
 * its left were written by the client and prove nothing). A forwarded entry that is not an IP
 * address leaves the request counted against the proxy that sent it.
 */
export function clientAddress(
  peer: string | undefined,
  forwardedFor: string | string[] | undefined,
  isTrusted: (address: string) => boolean,
): string {
  let client = normalizeAddress(peer);
  if (!isTrusted(client) || forwardedFor === undefined) return client;
  const hops = (Array.isArray(forwardedFor) ? forwardedFor.join(",") : forwardedFor).split(",");
  for (let i = hops.length - 1; i >= 0; i--) {
    const hop = normalizeAddress(hops[i]?.trim());
    if (isIP(hop) === 0) return client;
    client = hop;
    if (!isTrusted(hop)) return hop;
  }
  return client;
}

/**
 * Half the process's open-file limit (Node raises the soft limit to the hard one at start), at most
 * 10,000: the rest is left for the store, the chain, files and workers. 4096 where the limit cannot
 * be read.
 */
export function defaultMaxConnections(limitsFile = "/proc/self/limits"): number {
  try {
    const line = fs
      .readFileSync(limitsFile, "utf8")
      .split("\n")
      .find((text) => text.startsWith("Max open files"));
    const soft = Number(line?.slice("Max open files".length).trim().split(/\s+/)[0]);
    if (Number.isInteger(soft) && soft > 0) return Math.max(16, Math.min(10_000, Math.floor(soft / 2)));
  } catch {}
  return 4096;
}

const refusalBody = (detail: string) => Problem.of("too-many-connections", detail).body();

/** A whole HTTP/1.1 answer written on a connection that is refused before any request is read. */
function rawRefusal(detail: string): Buffer {
  const body = JSON.stringify(refusalBody(detail));
  return Buffer.from(
    "HTTP/1.1 503 Service Unavailable\r\ncontent-type: application/problem+json\r\nretry-after: 1\r\n" +
      `connection: close\r\ncontent-length: ${Buffer.byteLength(body)}\r\n\r\n${body}`,
  );
}

export interface ConnectionGuard {
  /** The global cap in force (MAX_CONNECTIONS, or its default from the open-file limit). */
  maxConnections: number;
  stats(): { open: number; clients: number; refused: number };
}

/**
 * Caps the server's open connections, in all and per client address. A connection over a cap is
 * answered 503 (problem+json, Retry-After: 1) and closed at once, so it never holds a file
 * descriptor for long; a trusted proxy's own connections count only against the global cap.
 */
export function guardConnections(server: Server, limits: HttpLimits, log: Logger): ConnectionGuard {
  const maxConnections = limits.maxConnections ?? defaultMaxConnections();
  const isTrusted = trustedProxyList(limits.trustedProxies);
  const perClient = new Map<string, number>();
  const globalRefusal = rawRefusal(
    `this service has ${maxConnections} connections open, its limit; retry shortly; nothing was charged`,
  );
  const clientRefusal = rawRefusal(
    `at most ${limits.maxConnectionsPerClient} connections from one client address; reuse a kept-alive connection; nothing was charged`,
  );
  let open = 0;
  let refused = 0;
  let refusedSinceLog = 0;
  let lastLog = 0;

  const refuse = (socket: Socket, answer: Buffer, reason: string, address: string) => {
    refused++;
    refusedSinceLog++;
    // Written without waiting for a request; the descriptor is released as soon as the answer is out.
    socket.on("error", () => {});
    socket.write(answer, () => socket.destroy());
    setImmediate(() => socket.destroy()).unref?.();
    const now = Date.now();
    if (now - lastLog >= 10_000) {
      log.warn({ reason, address, refused: refusedSinceLog, open, maxConnections }, "connections refused");
      lastLog = now;
      refusedSinceLog = 0;
    }
  };

  server.on("connection", (socket: Socket) => {
    const address = normalizeAddress(socket.remoteAddress);
    if (open >= maxConnections) return refuse(socket, globalRefusal, "global", address);
    const count = perClient.get(address) ?? 0;
    if (count >= limits.maxConnectionsPerClient && !isTrusted(address)) {
      return refuse(socket, clientRefusal, "per-client", address);
    }
    open++;
    perClient.set(address, count + 1);
    socket.once("close", () => {
      open--;
      const left = (perClient.get(address) ?? 1) - 1;
      if (left > 0) perClient.set(address, left);
      else perClient.delete(address);
    });
  });
  return { maxConnections, stats: () => ({ open, clients: perClient.size, refused }) };
}

/**
 * An orchestrator's probes and the metrics scrape: always answered, whoever asks (never counted
 * against a client's requests in flight), and the only paths of the health listener (HEALTH_PORT).
 */
export const PROBE_PATHS: ReadonlySet<string> = new Set(["/healthz", "/readyz", "/metrics"]);

/** A request target's path: before any query string (indexOf, not split: no array per request). */
const pathOf = (url: string): string => {
  const query = url.indexOf("?");
  return query === -1 ? url : url.slice(0, query);
};

const REFUSAL = Symbol("utility402.requestRefusal");
const CLIENT = Symbol("utility402.client");
type Marked = IncomingMessage & { [REFUSAL]?: Problem; [CLIENT]?: string };

/**
 * Counts each client's requests in flight (from the request until its response is finished or
 * its connection closes). A request over MAX_REQUESTS_PER_CLIENT is marked, still handed to the
 * app, whose first middleware (`requestContext`) answers it 429 with the request id, CORS headers
 * and an access log line like any other, before any operation or payment runs.
 */
export function limitRequestsPerClient(fetch: Fetch, limits: HttpLimits): Fetch {
  const isTrusted = trustedProxyList(limits.trustedProxies);
  const inFlight = new Map<string, number>();
  const max = limits.maxRequestsPerClient;
  const tooMany = Problem.of(
    "too-many-requests",
    `at most ${max} requests from one client may be in flight at once; retry when one has finished; nothing was charged`,
    { headers: { "retry-after": "1" } },
  );
  const release = (client: string) => {
    const left = (inFlight.get(client) ?? 1) - 1;
    if (left > 0) inFlight.set(client, left);
    else inFlight.delete(client);
  };
  return (request, bindings) => {
    const env = bindings as NodeBindings;
    const incoming = env?.incoming as Marked | undefined;
    if (!incoming || PROBE_PATHS.has(pathOf(incoming.url ?? ""))) {
      return fetch(request, bindings);
    }
    const client = clientAddress(
      incoming.socket?.remoteAddress,
      incoming.headers["x-forwarded-for"],
      isTrusted,
    );
    incoming[CLIENT] = client;
    const count = inFlight.get(client) ?? 0;
    if (count >= max) {
      incoming[REFUSAL] = tooMany;
      return fetch(request, bindings);
    }
    inFlight.set(client, count + 1);
    // Released when the response closes, however the request ends (an error too: it is answered 500 and closes).
    whenClosed(env.outgoing, release, client);
    return fetch(request, bindings);
  };
}

/** The refusal `limitRequestsPerClient` put on this request, if any (read by `requestContext`). */
export function requestRefusal(c: Context): Problem | undefined {
  const env = c.env as Partial<NodeBindings> | undefined;
  return (env?.incoming as Marked | undefined)?.[REFUSAL];
}

/** The client a request is counted against (see clientAddress), as `limitRequestsPerClient` found it. */
export function requestClient(c: Context): string | undefined {
  const env = c.env as Partial<NodeBindings> | undefined;
  return (env?.incoming as Marked | undefined)?.[CLIENT];
}
