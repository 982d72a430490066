import type { Server } from "node:http";
import http from "node:http";
import net from "node:net";
import { serve } from "@hono/node-server";
import { Hono } from "hono";
import pino from "pino";
import { afterEach, describe, expect, it } from "vitest";
import { loadConfig } from "../config.ts";
import { Metrics } from "../metrics.ts";
import {
  clientAddress,
  defaultMaxConnections,
  guardConnections,
  type HttpLimits,
  httpServerOptions,
  limitRequestsPerClient,
  trustedProxyList,
} from "./connection-limits.ts";
import { type RequestVariables, requestContext } from "./request-context.ts";

const silent = pino({ level: "silent" });
const limits = (overrides: Partial<HttpLimits> = {}): HttpLimits => ({
  ...loadConfig({}).http,
  ...overrides,
});

describe("clientAddress", () => {
  const trusted = trustedProxyList(["10.0.0.0/8", "127.0.0.1", "fd00::/8"]);

  it("is the peer when the peer is not a trusted proxy, whatever X-Forwarded-For says", () => {
    expect(clientAddress("203.0.113.9", "198.51.100.1", trusted)).toBe("203.0.113.9");
    expect(clientAddress("::ffff:203.0.113.9", undefined, trusted)).toBe("203.0.113.9");
  });

  it("behind trusted proxies, is the rightmost forwarded address that is not one of them", () => {
    // The client wrote "1.1.1.1" itself; the proxy appended the address it saw.
    expect(clientAddress("127.0.0.1", "1.1.1.1, 198.51.100.7", trusted)).toBe("198.51.100.7");
    expect(clientAddress("127.0.0.1", "198.51.100.7, 10.1.2.3", trusted)).toBe("198.51.100.7");
    expect(clientAddress("fd00::1", "2001:db8::5", trusted)).toBe("2001:db8::5");
    expect(clientAddress("127.0.0.1", ["1.1.1.1", "198.51.100.8"], trusted)).toBe("198.51.100.8");
  });

  it("stays the proxy when nothing was forwarded or the forwarded entry is not an address", () => {
    expect(clientAddress("127.0.0.1", undefined, trusted)).toBe("127.0.0.1");
    expect(clientAddress("127.0.0.1", "unknown", trusted)).toBe("127.0.0.1");
    expect(clientAddress("127.0.0.1", "10.0.0.5", trusted)).toBe("10.0.0.5");
  });
});

describe("settings", () => {
  it("have documented defaults and name the setting when invalid", () => {
    expect(loadConfig({}).http).toEqual({
      maxConnections: undefined,
      maxConnectionsPerClient: 256,
      maxRequestsPerClient: 64,
      headersTimeoutMs: 10_000,
      requestTimeoutMs: 120_000,
      keepAliveTimeoutMs: 5000,
      trustedProxies: [],
    });
    expect(loadConfig({ TRUSTED_PROXIES: " 10.0.0.0/8, ::1 " }).http.trustedProxies).toEqual([
      "10.0.0.0/8",
      "::1",
    ]);
    expect(() => loadConfig({ TRUSTED_PROXIES: "10.0.0.0/33,proxy.local" })).toThrow(
      /TRUSTED_PROXIES: "10.0.0.0\/33" is not an IP address or CIDR subnet; "proxy.local" is not/,
    );
    expect(() => loadConfig({ HTTP_HEADERS_TIMEOUT_MS: "30000", HTTP_REQUEST_TIMEOUT_MS: "20000" })).toThrow(
      /HTTP_REQUEST_TIMEOUT_MS: must be at least HTTP_HEADERS_TIMEOUT_MS/,
    );
    expect(() => loadConfig({ MAX_CONNECTIONS: "8" })).toThrow(/MAX_CONNECTIONS: /);
  });

  it("default the global cap from the open-file limit", () => {
    expect(defaultMaxConnections()).toBeGreaterThanOrEqual(16);
    expect(defaultMaxConnections()).toBeLessThanOrEqual(10_000);
    expect(defaultMaxConnections("/nonexistent")).toBe(4096);
    expect(httpServerOptions(limits()).headersTimeout).toBe(10_000);
  });
});

/** A real server with the guard and the per-client request limit, as serve.ts builds it. */
async function startServer(http: HttpLimits, app: Hono<{ Variables: RequestVariables }>) {
  const server = await new Promise<Server>((resolve) => {
    const created = serve(
      {
        fetch: limitRequestsPerClient(app.fetch, http),
        port: 0,
        hostname: "127.0.0.1",
        serverOptions: httpServerOptions(http),
      },
      () => resolve(created as Server),
    ) as Server;
    guardConnections(created, http, silent);
  });
  return { server, port: (server.address() as net.AddressInfo).port };
}

const servers: Server[] = [];
const sockets: net.Socket[] = [];
afterEach(async () => {
  for (const socket of sockets.splice(0)) socket.destroy();
  await Promise.all(
    servers.splice(0).map(
      (server) =>
        new Promise((resolve) => {
          server.closeAllConnections();
          server.close(resolve);
        }),
    ),
  );
});

/** Opens `count` connections; resolves with how many the server still holds after a moment. */
async function holdConnections(port: number, count: number): Promise<{ held: number; refusals: string[] }> {
  const refusals: string[] = [];
  const opened = await Promise.all(
    Array.from(
      { length: count },
      () =>
        new Promise<net.Socket>((resolve) => {
          const socket = net.connect({ port, host: "127.0.0.1" }, () => resolve(socket));
          socket.on("data", (chunk) => refusals.push(chunk.toString()));
          socket.on("error", () => {});
          sockets.push(socket);
        }),
    ),
  );
  // Refused connections are answered and closed at once: wait until the count settles.
  let held = opened.length;
  for (let i = 0; i < 50; i++) {
    await new Promise((resolve) => setTimeout(resolve, 20));
    const now = opened.filter((socket) => !socket.destroyed && !socket.readableEnded).length;
    if (now === held && i > 5) break;
    held = now;
  }
  return { held, refusals };
}

describe("the connection guard", () => {
  const app = () => new Hono<{ Variables: RequestVariables }>().get("/", (c) => c.text("ok"));

  it("answers connections over the per-client cap 503 problem+json and closes them", async () => {
    const { server, port } = await startServer(limits({ maxConnectionsPerClient: 5 }), app());
    servers.push(server);
    const { held, refusals } = await holdConnections(port, 12);
    expect(held).toBe(5);
    expect(refusals).toHaveLength(7);
    for (const refusal of refusals) {
      expect(refusal).toMatch(/^HTTP\/1\.1 503 Service Unavailable\r\n/);
      expect(refusal).toContain("content-type: application/problem+json");
      expect(refusal).toContain("retry-after: 1");
      const body = JSON.parse(refusal.slice(refusal.indexOf("\r\n\r\n") + 4));
      expect(body).toMatchObject({ type: "urn:utility402:problem:too-many-connections", status: 503 });
    }
  });

  it("does not cut a trusted proxy's own connections by the per-client cap, only by the global one", async () => {
    const proxied = limits({ maxConnectionsPerClient: 5, maxConnections: 16, trustedProxies: ["127.0.0.1"] });
    const { server, port } = await startServer(proxied, app());
    servers.push(server);
    expect((await holdConnections(port, 12)).held).toBe(12);
    expect((await holdConnections(port, 8)).held).toBe(4); // 16 in all
  });
});

describe("requests in flight per client", () => {
  /** An app whose /slow route waits until released, behind the request context like the real one. */
  function slowApp() {
    const waiting: Array<() => void> = [];
    const app = new Hono<{ Variables: RequestVariables }>();
    app.use("*", requestContext({ log: silent, metrics: new Metrics() }));
    app.get("/slow", async (c) => {
      await new Promise<void>((resolve) => waiting.push(resolve));
      return c.text("done");
    });
    app.get("/healthz", (c) => c.json({ status: "ok" }));
    return {
      app,
      release: () => {
        for (const resolve of waiting.splice(0)) resolve();
      },
      waiting,
    };
  }

  const get = (port: number, path: string, headers: Record<string, string> = {}) =>
    new Promise<{ status: number; headers: http.IncomingHttpHeaders; body: string }>((resolve, reject) => {
      http
        .get({ host: "127.0.0.1", port, path, headers, agent: false }, (response) => {
          let body = "";
          response.on("data", (chunk) => (body += chunk));
          response.on("end", () =>
            resolve({ status: response.statusCode ?? 0, headers: response.headers, body }),
          );
        })
        .on("error", reject);
    });

  it("answers 429 problem+json with Retry-After over the limit; health stays open; a slot frees when a response ends", async () => {
    const { app, release, waiting } = slowApp();
    const { server, port } = await startServer(limits({ maxRequestsPerClient: 2 }), app);
    servers.push(server);
    const first = [get(port, "/slow"), get(port, "/slow")];
    while (waiting.length < 2) await new Promise((resolve) => setTimeout(resolve, 10));

    const refused = await get(port, "/slow");
    expect(refused.status).toBe(429);
    expect(refused.headers["content-type"]).toBe("application/problem+json");
    expect(refused.headers["retry-after"]).toBe("1");
    expect(refused.headers["x-request-id"]).toBeTruthy();
    expect(JSON.parse(refused.body)).toMatchObject({
      type: "urn:utility402:problem:too-many-requests",
      status: 429,
      instance: "/slow",
    });
    expect((await get(port, "/healthz")).status).toBe(200);

    release();
    expect((await Promise.all(first)).map((response) => response.status)).toEqual([200, 200]);
    const again = get(port, "/slow");
    while (waiting.length < 1) await new Promise((resolve) => setTimeout(resolve, 10));
    release();
    expect((await again).status).toBe(200);
  });

  it("behind a trusted proxy, counts each forwarded client on its own", async () => {
    const { app, release, waiting } = slowApp();
    const { server, port } = await startServer(
      limits({ maxRequestsPerClient: 1, trustedProxies: ["127.0.0.1"] }),
      app,
    );
    servers.push(server);
    const a = get(port, "/slow", { "x-forwarded-for": "198.51.100.1" });
    const b = get(port, "/slow", { "x-forwarded-for": "198.51.100.2" });
    while (waiting.length < 2) await new Promise((resolve) => setTimeout(resolve, 10));
    expect((await get(port, "/slow", { "x-forwarded-for": "198.51.100.1" })).status).toBe(429);
    // A client cannot escape its count by writing a forwarded address of its own to the left.
    expect((await get(port, "/slow", { "x-forwarded-for": "9.9.9.9, 198.51.100.2" })).status).toBe(429);
    release();
    expect((await Promise.all([a, b])).map((response) => response.status)).toEqual([200, 200]);
  });
});
