import type { Handler } from "hono";
import { respond } from "./response-headers.ts";

const ALLOW_METHODS = "GET,HEAD,PUT,POST,DELETE,PATCH,QUERY";

export interface CorsPolicy {
  /** Request headers a browser agent may send. */
  allowHeaders: string[];
  /** Response headers a browser agent may read. */
  exposeHeaders: string[];
}

/**
 * CORS for any origin, answering like `hono/cors` with `origin: "*"`. These headers go on every
 * response, written with it by `requestContext` (see ./response-headers.ts): Hono's own middleware
 * sets them on a placeholder response before the route runs, which makes Hono copy every returned
 * Response through its body stream.
 */
export const corsResponseHeaders = (policy: CorsPolicy): Record<string, string> => ({
  "access-control-allow-origin": "*",
  "access-control-expose-headers": policy.exposeHeaders.join(","),
});

/** The answer to a preflight (OPTIONS) on any path. */
export function corsPreflight(policy: CorsPolicy): Handler {
  const headers = {
    "access-control-allow-methods": ALLOW_METHODS,
    "access-control-allow-headers": policy.allowHeaders.join(","),
    vary: "Access-Control-Request-Headers",
  };
  return (c) => respond(c, null, { status: 204, headers });
}
