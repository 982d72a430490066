import { randomUUID } from "node:crypto";
import type { MiddlewareHandler } from "hono";
import { routePath } from "hono/route";
import type { Logger } from "pino";
import type { Metrics } from "../metrics.ts";

export interface RequestVariables {
  requestId: string;
  log: Logger;
}

const CLIENT_REQUEST_ID = /^[A-Za-z0-9._:-]{1,128}$/;

/**
 * Gives every request an id (the caller's x-request-id when it is sane, else a UUID), a child
 * logger that stamps it on every line, the x-request-id response header, an access log line
 * and the request metrics.
 */
export function requestContext(
  log: Logger,
  metrics: Metrics,
): MiddlewareHandler<{ Variables: RequestVariables }> {
  return async (c, next) => {
    const started = process.hrtime.bigint();
    const incoming = c.req.header("x-request-id");
    const requestId = incoming && CLIENT_REQUEST_ID.test(incoming) ? incoming : randomUUID();
    const requestLog = log.child({ requestId });
    c.set("requestId", requestId);
    c.set("log", requestLog);
    await next();
    // Set on the response itself: c.header() after the route would make Hono copy the response.
    c.res.headers.set("x-request-id", requestId);
    const seconds = Number(process.hrtime.bigint() - started) / 1e9;
    const matched = routePath(c, -1);
    const route = matched && matched !== "*" && matched !== "/*" ? matched : "unmatched";
    metrics.request(c.req.method, route, c.res.status, seconds);
    requestLog.info(
      { method: c.req.method, path: c.req.path, status: c.res.status, ms: Math.round(seconds * 1e4) / 10 },
      "request",
    );
  };
}
