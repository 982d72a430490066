import { randomUUID } from "node:crypto";
import type { MiddlewareHandler } from "hono";
import { routePath } from "hono/route";
import type { Logger } from "pino";
import type { Metrics } from "../metrics.ts";
import { requestRefusal } from "./connection-limits.ts";
import { applyResponseHeaders, type ResponseHeaderVariables, respond } from "./response-headers.ts";

export interface RequestVariables extends ResponseHeaderVariables {
  requestId: string;
}

const CLIENT_REQUEST_ID = /^[A-Za-z0-9._:-]{1,128}$/;

/**
 * The one middleware every request passes: gives it an id (the caller's x-request-id when it is
 * sane, else a UUID), answers a request `limitRequestsPerClient` refused (429), puts that id and `headers` (the CORS headers) on its response, and writes an
 * access log line and the request metrics. Loggers for the request's own lines are children made
 * where they are needed, with `requestId` bound.
 */
export function requestContext(options: {
  log: Logger;
  metrics: Metrics;
  headers?: Record<string, string>;
}): MiddlewareHandler<{ Variables: RequestVariables }> {
  const { log, metrics } = options;
  const headers = options.headers ?? {};
  return async (c, next) => {
    const started = performance.now();
    const incoming = c.req.header("x-request-id");
    const requestId = incoming && CLIENT_REQUEST_ID.test(incoming) ? incoming : randomUUID();
    c.set("requestId", requestId);
    c.set("responseHeaders", Object.assign({}, headers, { "x-request-id": requestId }));
    // A client over its requests in flight (see limitRequestsPerClient) is answered here, before any route.
    const refusal = requestRefusal(c);
    if (refusal) {
      const answer = refusal.toResponse(c.req.path);
      c.res = respond(c, answer.body, answer);
    } else {
      await next();
    }
    applyResponseHeaders(c);
    const seconds = (performance.now() - started) / 1000;
    const matched = routePath(c, -1);
    const route = matched && matched !== "*" && matched !== "/*" ? matched : "unmatched";
    const status = c.res.status;
    metrics.request(c.req.method, route, status, seconds);
    log.info(
      { requestId, method: c.req.method, path: c.req.path, status, ms: Math.round(seconds * 1e4) / 10 },
      "request",
    );
  };
}
