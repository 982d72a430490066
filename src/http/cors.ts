import type { MiddlewareHandler } from "hono";

const ALLOW_METHODS = "GET,HEAD,PUT,POST,DELETE,PATCH,QUERY";

/**
 * CORS for any origin, answering like `hono/cors` with `origin: "*"`, but adding its headers to the
 * response after the handler instead of to a placeholder before it. Hono's own middleware touches
 * `c.res` before the route runs, which makes Hono copy every returned Response through its body
 * stream; @hono/node-server then cannot write the body string directly. That copy was the largest
 * cost of an unpaid 402.
 */
export function openCors(options: { allowHeaders: string[]; exposeHeaders: string[] }): MiddlewareHandler {
  const allowHeaders = options.allowHeaders.join(",");
  const exposeHeaders = options.exposeHeaders.join(",");
  return async (c, next) => {
    if (c.req.method === "OPTIONS") {
      return new Response(null, {
        status: 204,
        statusText: "No Content",
        headers: {
          "Access-Control-Allow-Origin": "*",
          "Access-Control-Expose-Headers": exposeHeaders,
          "Access-Control-Allow-Methods": ALLOW_METHODS,
          "Access-Control-Allow-Headers": allowHeaders,
          Vary: "Access-Control-Request-Headers",
        },
      });
    }
    await next();
    c.res.headers.set("Access-Control-Allow-Origin", "*");
    c.res.headers.set("Access-Control-Expose-Headers", exposeHeaders);
  };
}
