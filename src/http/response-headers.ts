import type { Context } from "hono";

export interface ResponseHeaderVariables {
  /** Headers every response to this request carries (x-request-id, CORS), set by `requestContext`. */
  responseHeaders: Record<string, string>;
}

type WithResponseHeaders = Context<{ Variables: ResponseHeaderVariables }>;

/** Responses that already carry the request's headers. */
const complete = new WeakSet<Response>();

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
  const own = (c as WithResponseHeaders).get("responseHeaders");
  const response = new Response(body, {
    status: init.status,
    headers: own ? { ...init.headers, ...own } : init.headers,
  });
  complete.add(response);
  return response;
}

/** After the route: puts the request's headers on a response that was built without `respond`. */
export function applyResponseHeaders(c: Context): void {
  const response = c.res;
  if (complete.has(response)) return;
  const own = (c as WithResponseHeaders).get("responseHeaders");
  if (own) for (const [name, value] of Object.entries(own)) response.headers.set(name, value);
  complete.add(response);
}
