import type { MiddlewareHandler } from "hono";
import { addResponseHeaders, applyResponseHeaders, respond } from "./response-headers.ts";

const ALLOW_METHODS = "GET,HEAD,PUT,POST,DELETE,PATCH,QUERY";

/**
 * CORS for any origin, answering like `hono/cors` with `origin: "*"`. Its headers are gathered
 * before the route and written with the route's own response (see ./response-headers.ts) instead of
 * being set on a placeholder response: Hono's own middleware touches `c.res` before the route runs,
 * which makes Hono copy every returned Response through its body stream.
 */
export function openCors(options: { allowHeaders: string[]; exposeHeaders: string[] }): MiddlewareHandler {
  const allowHeaders = options.allowHeaders.join(",");
  const exposeHeaders = options.exposeHeaders.join(",");
  return async (c, next) => {
    addResponseHeaders(c, {
      "access-control-allow-origin": "*",
      "access-control-expose-headers": exposeHeaders,
    });
    if (c.req.method === "OPTIONS") {
      return respond(c, null, {
        status: 204,
        headers: {
          "access-control-allow-methods": ALLOW_METHODS,
          "access-control-allow-headers": allowHeaders,
          vary: "Access-Control-Request-Headers",
        },
      });
    }
    await next();
    applyResponseHeaders(c);
  };
}
