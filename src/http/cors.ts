import type { Handler } from "hono";
import { respond } from "./response-headers.ts";

const ALLOW_METHODS = "GET,HEAD,PUT,POST,DELETE,PATCH,QUERY";

/** A header name (an RFC 9110 token): all a preflight's Access-Control-Request-Headers may list. */
const HEADER_NAME = /^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/;

/**
 * CORS for any origin, answering like `hono/cors` with `origin: "*"`. These headers go on every
 * response, written with it by `requestContext` (see ./response-headers.ts): Hono's own middleware
 * sets them on a placeholder response before the route runs, which makes Hono copy every returned
 * Response through its body stream.
 *
 * `exposeHeaders`: the response headers a browser agent may read.
 */
export const corsResponseHeaders = (exposeHeaders: readonly string[]): Record<string, string> => ({
  "access-control-allow-origin": "*",
  "access-control-expose-headers": exposeHeaders.join(","),
});

/**
 * The answer to a preflight (OPTIONS) on any path: every method, and every request header the
 * browser asks for (Access-Control-Request-Headers reflected, as `hono/cors` does without an
 * allow-list), so any client's headers pass: `@x402/fetch` adds `Access-Control-Expose-Headers`
 * to its paid retry, others add their own. The service is public and takes no credentials (no
 * cookies, `Access-Control-Allow-Credentials` never sent), so an allow-list would protect nothing:
 * a client outside a browser sends any header it likes. Only well-formed names are reflected.
 */
export function corsPreflight(): Handler {
  const always = {
    "access-control-allow-methods": ALLOW_METHODS,
    vary: "Access-Control-Request-Headers",
  };
  return (c) => {
    const requested = c.req.header("access-control-request-headers");
    if (!requested) return respond(c, null, { status: 204, headers: always });
    const names = requested
      .split(",")
      .map((name) => name.trim())
      .filter((name) => HEADER_NAME.test(name));
    const headers = names.length ? { ...always, "access-control-allow-headers": names.join(",") } : always;
    return respond(c, null, { status: 204, headers });
  };
}
