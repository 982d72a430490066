import { Hono } from "hono";
import { cors } from "hono/cors";
import pino from "pino";
import { describe, expect, it } from "vitest";
import { Metrics } from "../metrics.ts";
import { corsPreflight, corsResponseHeaders } from "./cors.ts";
import { type RequestVariables, requestContext } from "./request-context.ts";

const EXPOSED = ["PAYMENT-REQUIRED", "PAYMENT-RESPONSE", "x-request-id"];

const app = new Hono<{ Variables: RequestVariables }>();
app.use(
  "*",
  requestContext({
    log: pino({ level: "silent" }),
    metrics: new Metrics(),
    headers: corsResponseHeaders(EXPOSED),
  }),
);
app.options("*", corsPreflight());

/** `hono/cors` for any origin, without an allow-list: the answer ours must give. */
const reference = new Hono();
reference.use("*", cors({ origin: "*", exposeHeaders: EXPOSED }));

const preflight = (target: Hono<any>, path: string, requestHeaders?: string) =>
  target.request(path, {
    method: "OPTIONS",
    headers: {
      origin: "http://127.0.0.1:5173",
      "access-control-request-method": "POST",
      ...(requestHeaders === undefined ? {} : { "access-control-request-headers": requestHeaders }),
    },
  });

const corsHeadersOf = (response: Response) =>
  Object.fromEntries(
    [...response.headers].filter(([name]) => name.startsWith("access-control-") || name === "vary"),
  );

describe("CORS preflight", () => {
  it.each([
    // What Chromium asks before @x402/fetch 2.27's paid retry (the header it adds, then the call's own).
    ["the official client's paid retry", "access-control-expose-headers,content-type,payment-signature"],
    ["a download resumed with its token", "if-range,range,x-download-token"],
    ["a client with its own headers, spaced as typed", "Authorization, X-Trace-Id ,x-request-id"],
  ])("allows the headers asked for by %s, as hono/cors answers", async (_case, requested) => {
    const [ours, theirs] = [
      await preflight(app, "/v1/csv-cleanup", requested),
      await preflight(reference, "/v1/csv-cleanup", requested),
    ];
    expect(ours.status).toBe(204);
    expect(theirs.status).toBe(204);
    expect(corsHeadersOf(ours)).toEqual(corsHeadersOf(theirs));
    expect(ours.headers.get("access-control-allow-headers")).toBe(
      requested
        .split(",")
        .map((name) => name.trim())
        .join(","),
    );
    expect(ours.headers.get("vary")).toBe("Access-Control-Request-Headers");
  });

  it("answers on any path with 204, any origin, every method, the exposed headers and a request id", async () => {
    for (const path of ["/v1/products/some-product", "/anywhere/else"]) {
      const response = await preflight(app, path, "payment-signature");
      expect(response.status).toBe(204);
      expect(await response.text()).toBe("");
      expect(response.headers.get("access-control-allow-origin")).toBe("*");
      expect(response.headers.get("access-control-allow-methods")).toBe(
        "GET,HEAD,PUT,POST,DELETE,PATCH,QUERY",
      );
      expect(response.headers.get("access-control-expose-headers")).toBe(EXPOSED.join(","));
      expect(response.headers.get("access-control-allow-credentials")).toBeNull();
      expect(response.headers.get("x-request-id")).toMatch(/^[0-9a-f-]{36}$/);
    }
  });

  it("allows no header when none is asked for, and still says the answer varies with the ask", async () => {
    const response = await preflight(app, "/v1/csv-cleanup");
    expect(response.status).toBe(204);
    expect(response.headers.get("access-control-allow-headers")).toBeNull();
    expect(response.headers.get("vary")).toBe("Access-Control-Request-Headers");
  });

  it("reflects only well-formed header names", async () => {
    const response = await preflight(app, "/v1/csv-cleanup", "content-type, bad name,,x-ok,x(paren)");
    expect(response.headers.get("access-control-allow-headers")).toBe("content-type,x-ok");
    const nothingValid = await preflight(app, "/v1/csv-cleanup", "bad name, ;");
    expect(nothingValid.headers.get("access-control-allow-headers")).toBeNull();
  });
});
