import type { Context } from "hono";
import type { AnyOperation, RequestBody } from "../contract/operation.ts";
import { decodeBody, parseJsonBody, queryToObject } from "../input/parse-input.ts";
import { invalidRequest, Problem, zodIssuesToFieldErrors } from "../problem.ts";
import { INLINE_JSON_BODY_BYTES, parseLargeJsonBody } from "./large-json-body.ts";

export const DEFAULT_MAX_BODY_BYTES = 1024 * 1024;

/**
 * Reads and validates an operation's input from the request, before any payment is asked for.
 * Throws a 400 Problem (with a JSON Pointer per invalid field) or a 413 for an oversized body.
 */
export async function readOperationInput(c: Context, operation: AnyOperation): Promise<unknown> {
  if (operation.inputFrom === "body" && operation.readBody) {
    const body = await readRequestBody(c.req.raw, operation.maxBodyBytes ?? DEFAULT_MAX_BODY_BYTES);
    return operation.readBody(body, { contentType: c.req.header("content-type"), query: c.req.queries() });
  }
  let raw: unknown = {};
  if (operation.inputFrom === "body") raw = await readJsonBody(c.req.raw, operation);
  if (operation.inputFrom === "query") raw = queryToObject(c.req.queries(), operation.input);
  const parsed = operation.input.safeParse(raw);
  if (!parsed.success) throw invalidRequest(zodIssuesToFieldErrors(parsed.error.issues));
  return parsed.data;
}

const tooLarge = (limit: number) => Problem.of("body-too-large", `the request body exceeds ${limit} bytes`);

async function readJsonBody(request: Request, operation: AnyOperation): Promise<unknown> {
  const limit = operation.maxBodyBytes ?? DEFAULT_MAX_BODY_BYTES;
  const declared = request.headers.get("content-length");
  if (declared !== null) {
    if (Number(declared) > limit) throw tooLarge(limit);
    // A declared length within the limit: read it whole. @hono/node-server reads it straight from
    // the socket this way, without building a web ReadableStream (the dearest part of a 402 reply).
    if (Number(declared) <= INLINE_JSON_BODY_BYTES) return parseJsonBody(await request.text(), operation);
    return parseLargeJsonBody(new Uint8Array(await request.arrayBuffer()), operation);
  }
  if (!request.body) return parseJsonBody("", operation);
  // Chunked: count while reading, so an endless body is cut at the limit.
  const body = await readCounting(request.body, limit);
  if (body.byteLength <= INLINE_JSON_BODY_BYTES) return parseJsonBody(decodeBody(body), operation);
  return parseLargeJsonBody(body, operation);
}

/**
 * The body for an operation's own reader, cut at `limit` (413) whether or not a length was declared: its
 * text when the declared length is at most INLINE_JSON_BODY_BYTES, else its bytes (see RequestBody).
 */
async function readRequestBody(request: Request, limit: number): Promise<RequestBody> {
  const declared = request.headers.get("content-length");
  if (declared !== null) {
    if (Number(declared) > limit) throw tooLarge(limit);
    // Read whole, straight from the socket: touching `request.body` first would make
    // @hono/node-server build a web Request and ReadableStream (most of an unpaid 402's CPU). As text
    // when small: arrayBuffer() copies the socket's chunk into a new ArrayBuffer, dearer than decoding it.
    if (Number(declared) <= INLINE_JSON_BODY_BYTES) return request.text();
    return new Uint8Array(await request.arrayBuffer());
  }
  if (!request.body) return new Uint8Array(0);
  return readCounting(request.body, limit);
}

/** A body without a declared length, counted while read so an endless one is cut at `limit` (413). */
async function readCounting(body: ReadableStream<Uint8Array>, limit: number): Promise<Buffer> {
  const chunks: Uint8Array[] = [];
  let size = 0;
  const reader = body.getReader();
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    size += value.byteLength;
    if (size > limit) {
      await reader.cancel();
      throw tooLarge(limit);
    }
    chunks.push(value);
  }
  return Buffer.concat(chunks);
}
