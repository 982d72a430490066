import type { RequestBody } from "../../contract/operation.ts";
import { decodeBody, parseJsonBody } from "../../input/parse-input.ts";
import { invalidRequest, zodIssuesToFieldErrors } from "../../problem.ts";
import { CanonicalWriter, type Json, sha256 } from "./canonical.ts";
import { type JsonDiffInput, JsonDiffRequest, MAX_DOCUMENT_DEPTH } from "./schema.ts";

/** The body wraps the documents in one object, so they may nest MAX_DOCUMENT_DEPTH levels each. */
export const JSON_DIFF_BODY_LIMITS = { maxDepth: MAX_DOCUMENT_DEPTH + 1, rejectDuplicateKeys: true };

/**
 * A json-diff body from its text or bytes to the validated request, with every check the JSON reader makes
 * (valid JSON, depth, duplicate member names, 1e999 and lone surrogates) and the request schema's;
 * throws a 400 Problem naming the field. The same function runs on the main thread for a small body
 * and in a worker for a large one, so both answer alike.
 */
export function readJsonDiffRequest(body: RequestBody): JsonDiffInput {
  const raw = parseJsonBody(decodeBody(body), { json: JSON_DIFF_BODY_LIMITS });
  const parsed = JsonDiffRequest.safeParse(raw);
  if (!parsed.success) throw invalidRequest(zodIssuesToFieldErrors(parsed.error.issues));
  return parsed.data as JsonDiffInput;
}

/** sha256 of the RFC 8785 form of a validated request: what identifies it (with its payment). */
export function requestDigest(input: JsonDiffInput): string {
  const writer = new CanonicalWriter();
  writer.value(input as unknown as Json);
  return sha256(writer.bytes());
}
