import type { Context } from "hono";

export interface ResponseHeaderVariables {
  /** Headers the middlewares put on every response (x-request-id, CORS), gathered before the route runs. */
  responseHeaders: Record<string, string>;
}

type WithResponseHeaders = Context<{ Variables: ResponseHeaderVariables }>;

/** Responses that already carry the gathered headers. */
const complete = new WeakSet<Response>();

/** Asks for headers on this request's response, whatever the route answers. */
export function addResponseHeaders(c: Context, headers: Record<string, string>): void {
  const context = c as WithResponseHeaders;
  const gathered = context.get("responseHeaders");
  if (gathered) Object.assign(gathered, headers);
  else context.set("responseHeaders", { ...headers });
}

/**
 * A Response with the gathered headers in it from the start. The headers stay a plain object, which
 * @hono/node-server writes as it is; adding them afterwards builds a web `Headers` (validating every
 * value, a 5 KB PAYMENT-REQUIRED included), the dearest part of an unpaid 402 before this.
 */
export function respond(
  c: Context,
  body: string | Uint8Array<ArrayBuffer> | null,
  init: { status: number; headers?: Record<string, string> },
): Response {
  const gathered = (c as WithResponseHeaders).get("responseHeaders");
  const response = new Response(body, {
    status: init.status,
    headers: gathered ? { ...init.headers, ...gathered } : init.headers,
  });
  complete.add(response);
  return response;
}

/** After the route: puts the gathered headers on a response that was built without `respond`. */
export function applyResponseHeaders(c: Context): void {
  const response = c.res;
  if (complete.has(response)) return;
  const gathered = (c as WithResponseHeaders).get("responseHeaders");
  if (gathered) for (const [name, value] of Object.entries(gathered)) response.headers.set(name, value);
  complete.add(response);
}
