import type { AnyOperation } from "../contract/operation.ts";
import { INLINE_JSON_BODY_BYTES, parseLargeJsonBody } from "../http/large-json-body.ts";
import { DEFAULT_MAX_BODY_BYTES } from "../http/read-input.ts";
import { bodyByteLength, parseJsonBody } from "../input/parse-input.ts";
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
  const text = argumentsText(args);
  const size = bodyByteLength(text);
  const limit = operation.maxBodyBytes ?? DEFAULT_MAX_BODY_BYTES;
  if (size > limit) {
    throw Problem.of("body-too-large", `the tool's arguments exceed ${limit} bytes of JSON`);
  }
  if (operation.readBody) return operation.readBody(text, { contentType: "application/json", query: {} });
  const raw =
    size <= INLINE_JSON_BODY_BYTES
      ? parseJsonBody(text, operation)
      : await parseLargeJsonBody(Buffer.from(text, "utf8"), operation);
  const parsed = operation.input.safeParse(raw);
  if (!parsed.success) throw invalidRequest(zodIssuesToFieldErrors(parsed.error.issues));
  return parsed.data;
}

/**
 * The arguments as JSON text, the body the route would have read. JSON.stringify recurses, so arguments
 * nested deeper than the stack allows (a 1 MiB message holds 500,000 levels) are written without recursion
 * instead: the route's reader then refuses them with its own JSON Pointer, as it refuses the same body.
 */
function argumentsText(args: Record<string, unknown>): string {
  try {
    return JSON.stringify(args);
  } catch (error) {
    if (!(error instanceof RangeError)) throw error;
    return deepJsonText(args);
  }
}

/** JSON.stringify of a JSON value (as JSON.parse made it), with a stack of what is left to write instead of recursion. */
function deepJsonText(root: unknown): string {
  const out: string[] = [];
  // Values to write, or text (brackets, commas, member names) to write as it is.
  const pending: ({ value: unknown } | string)[] = [{ value: root }];
  while (pending.length > 0) {
    const next = pending.pop() as { value: unknown } | string;
    if (typeof next === "string") {
      out.push(next);
      continue;
    }
    const { value } = next;
    if (Array.isArray(value)) {
      out.push("[");
      pending.push("]");
      for (let i = value.length - 1; i >= 0; i--) {
        pending.push({ value: value[i] });
        if (i > 0) pending.push(",");
      }
    } else if (typeof value === "object" && value !== null) {
      out.push("{");
      pending.push("}");
      const members = Object.entries(value).filter(([, member]) => member !== undefined);
      for (let i = members.length - 1; i >= 0; i--) {
        const [key, member] = members[i] as [string, unknown];
        pending.push({ value: member }, `${JSON.stringify(key)}:`);
        if (i > 0) pending.push(",");
      }
    } else {
      out.push(JSON.stringify(value) ?? "null");
    }
  }
  return out.join("");
}
