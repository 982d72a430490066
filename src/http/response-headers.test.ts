import { Writable } from "node:stream";
import { Hono } from "hono";
import pino from "pino";
import { describe, expect, it } from "vitest";
import { Metrics } from "../metrics.ts";
import { Problem } from "../problem.ts";
import { corsResponseHeaders } from "./cors.ts";
import { type RequestVariables, requestContext } from "./request-context.ts";
import { respond } from "./response-headers.ts";

const lines: Record<string, unknown>[] = [];
const sink = new Writable({
  write(chunk, _encoding, done) {
    lines.push(JSON.parse(chunk.toString()));
    done();
  },
});
const metrics = new Metrics();
const app = new Hono<{ Variables: RequestVariables }>();
app.use(
  "*",
  requestContext({
    log: pino(sink),
    metrics,
    headers: corsResponseHeaders(["PAYMENT-REQUIRED", "x-request-id"]),
  }),
);
app.post("/built", (c) =>
  respond(c, '{"x402Version":2}', {
    status: 402,
    headers: { "content-type": "application/json", "payment-required": "e30=" },
  }),
);
app.get("/json", (c) => c.json({ ok: true }));
app.get("/raw", () => new Response("raw", { status: 201, headers: { "x-own": "1" } }));
app.get("/problem", () => {
  throw Problem.of("payment-already-used", "already there");
});
app.onError((error, c) => {
  const { status, headers, body } = (error as Problem).toResponse(c.req.path);
  return respond(c, body, { status, headers });
});

describe("headers every response carries", () => {
  it("are on responses built with them, built by Hono, returned as they are, and on errors", async () => {
    const responses = [
      await app.request("/built", { method: "POST" }),
      await app.request("/json"),
      await app.request("/raw"),
      await app.request("/problem"),
    ];
    expect(responses.map((response) => response.status)).toEqual([402, 200, 201, 409]);
    const ids = new Set<string>();
    for (const response of responses) {
      expect(response.headers.get("access-control-allow-origin")).toBe("*");
      expect(response.headers.get("access-control-expose-headers")).toBe("PAYMENT-REQUIRED,x-request-id");
      ids.add(response.headers.get("x-request-id") ?? "");
    }
    expect([...ids].every((id) => /^[0-9a-f-]{36}$/.test(id))).toBe(true);
    expect(ids.size).toBe(4);
    // The route's own headers, status and body are kept.
    expect(responses[0]?.headers.get("payment-required")).toBe("e30=");
    expect(await responses[0]?.text()).toBe('{"x402Version":2}');
    expect(responses[2]?.headers.get("x-own")).toBe("1");
    expect(responses[3]?.headers.get("content-type")).toBe("application/problem+json");
  });

  it("echo a sane caller request id, write one access log line and count the request", async () => {
    lines.length = 0;
    const response = await app.request("/built", { method: "POST", headers: { "x-request-id": "trace-7" } });
    expect(response.headers.get("x-request-id")).toBe("trace-7");
    const unsafe = await app.request("/json", { headers: { "x-request-id": "bad id\twith tab" } });
    expect(unsafe.headers.get("x-request-id")).not.toContain("bad");
    expect(lines[0]).toMatchObject({
      requestId: "trace-7",
      method: "POST",
      path: "/built",
      status: 402,
      msg: "request",
    });
    expect(lines).toHaveLength(2);
    expect(await metrics.registry.metrics()).toMatch(
      /utility402_http_requests_total\{method="POST",route="\/built",status="402"\} \d+/,
    );
  });
});
