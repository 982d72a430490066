import type { Context } from "hono";

export interface ResponseHeaderVariables {
  /** Headers every response to this request carries (x-request-id, CORS), set by `requestContext`. */
  responseHeaders: Record<string, string>;
  /** The response `respond` built with those headers in it already. */
  completeResponse?: Response;
}

type WithResponseHeaders = Context<{ Variables: ResponseHeaderVariables }>;

/**
 * A Response with the request's headers in it from the start. The headers stay a plain object,
 * which @hono/node-server writes as it is; adding them afterwards builds a web `Headers`
 * (validating every value, a 5 KB PAYMENT-REQUIRED included), the dearest part of an unpaid 402.
 */
export function respond(
  c: Context,
  body: string | Uint8Array<ArrayBuffer> | null,
  init: { status: number; headers?: Record<string, string> },
): Response {
  const context = c as WithResponseHeaders;
  const own = context.get("responseHeaders");
  const response = new Response(body, {
    status: init.status,
    // Object.assign, not spreads: V8 copies a second spread property by property in its runtime (3.9 µs for
    // a 402's headers against 0.2 µs; docs/performance.md, 2026-11-27).
    headers: own ? Object.assign({}, init.headers, own) : init.headers,
  });
  context.set("completeResponse", response);
  return response;
}

/** After the route: puts the request's headers on a response that was built without `respond`. */
export function applyResponseHeaders(c: Context): void {
  const context = c as WithResponseHeaders;
  const response = c.res;
  if (context.get("completeResponse") === response) return;
  const own = context.get("responseHeaders");
  if (own) for (const [name, value] of Object.entries(own)) response.headers.set(name, value);
  context.set("completeResponse", response);
}
