import type { AnyOperation } from "../catalog/operation.ts";
import { INLINE_JSON_BODY_BYTES, parseLargeJsonBody } from "../http/large-json-body.ts";
import { DEFAULT_MAX_BODY_BYTES } from "../http/read-input.ts";
import { parseJsonBody } from "../input/parse-input.ts";
import { invalidRequest, Problem, zodIssuesToFieldErrors } from "../problem.ts";

/**
 * A tool's arguments read as the route reads the same JSON body: the operation's own body reader or the
 * JSON reader with its limits, then its schema. The validated input is the route's for the same JSON, so a
 * payment made through one door is the same request through the other (same fingerprint), and an invalid
 * field is named by the same JSON Pointer as the route's 400. Throws that Problem, before any payment.
 */
export async function readToolInput(
  operation: AnyOperation,
  args: Record<string, unknown>,
): Promise<unknown> {
  const text = JSON.stringify(args);
  const body = Buffer.from(text, "utf8");
  const limit = operation.maxBodyBytes ?? DEFAULT_MAX_BODY_BYTES;
  if (body.byteLength > limit) {
    throw Problem.of("body-too-large", `the tool's arguments exceed ${limit} bytes of JSON`);
  }
  if (operation.readBody) return operation.readBody(body, { contentType: "application/json", query: {} });
  const raw =
    body.byteLength <= INLINE_JSON_BODY_BYTES
      ? parseJsonBody(text, operation)
      : await parseLargeJsonBody(body, operation);
  const parsed = operation.input.safeParse(raw);
  if (!parsed.success) throw invalidRequest(zodIssuesToFieldErrors(parsed.error.issues));
  return parsed.data;
}
