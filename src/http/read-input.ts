import type { Context } from "hono";
import type { z } from "zod";
import type { AnyOperation } from "../catalog/operation.ts";
import {
  escapePointerToken,
  type FieldError,
  invalidRequest,
  Problem,
  toPointer,
  zodIssuesToFieldErrors,
} from "../problem.ts";

export const DEFAULT_MAX_BODY_BYTES = 1024 * 1024;

/**
 * Reads and validates an operation's input from the request, before any payment is asked for.
 * Throws a 400 Problem (with a JSON Pointer per invalid field) or a 413 for an oversized body.
 */
export async function readOperationInput(c: Context, operation: AnyOperation): Promise<unknown> {
  let raw: unknown = {};
  if (operation.inputFrom === "body") raw = await readJsonBody(c.req.raw, operation);
  if (operation.inputFrom === "query") raw = queryToObject(c.req.queries(), operation.input);
  const parsed = operation.input.safeParse(raw);
  if (!parsed.success) throw invalidRequest(zodIssuesToFieldErrors(parsed.error.issues));
  return parsed.data;
}

async function readJsonBody(request: Request, operation: AnyOperation): Promise<unknown> {
  const limit = operation.maxBodyBytes ?? DEFAULT_MAX_BODY_BYTES;
  const tooLarge = () =>
    new Problem(413, "body-too-large", "Request body too large", `the request body exceeds ${limit} bytes`);
  const declared = Number(request.headers.get("content-length") ?? "0");
  if (declared > limit) throw tooLarge();

  const chunks: Uint8Array[] = [];
  let size = 0;
  if (request.body) {
    const reader = request.body.getReader();
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      size += value.byteLength;
      if (size > limit) {
        await reader.cancel();
        throw tooLarge();
      }
      chunks.push(value);
    }
  }
  const text = Buffer.concat(chunks).toString("utf8");
  if (text.trim() === "") {
    if (operation.bodyOptional) return {};
    throw invalidRequest([{ pointer: "", message: "a JSON request body is required" }]);
  }
  let body: unknown;
  try {
    body = JSON.parse(text);
  } catch (error) {
    throw invalidRequest([
      { pointer: "", message: `the body is not valid JSON: ${(error as Error).message}` },
    ]);
  }
  const overflow = firstNonFiniteNumber(body);
  if (overflow !== undefined) {
    throw invalidRequest([{ pointer: overflow, message: "number out of range (not a finite double)" }]);
  }
  return body;
}

/**
 * JSON.parse turns 1e999 into Infinity, which no JSON output can carry. Finds the first such
 * number, iteratively (a deeply nested body must not exhaust the stack).
 */
function firstNonFiniteNumber(root: unknown): string | undefined {
  const stack: [unknown, string][] = [[root, ""]];
  while (stack.length > 0) {
    const [value, pointer] = stack.pop() as [unknown, string];
    if (typeof value === "number") {
      if (!Number.isFinite(value)) return pointer;
    } else if (typeof value === "object" && value !== null) {
      for (const [key, child] of Object.entries(value))
        stack.push([child, `${pointer}/${escapePointerToken(key)}`]);
    }
  }
  return undefined;
}

type FieldKind = "array" | "number" | "boolean" | "string";

function fieldKind(schema: z.ZodType): FieldKind {
  let current = schema as unknown as { def: { type: string; innerType?: z.ZodType } };
  while (
    current.def.innerType &&
    ["optional", "default", "nullable", "prefault"].includes(current.def.type)
  ) {
    current = current.def.innerType as unknown as typeof current;
  }
  const type = current.def.type;
  if (type === "array" || type === "tuple") return "array";
  if (type === "number" || type === "int") return "number";
  if (type === "boolean") return "boolean";
  return "string";
}

const NUMBER = /^-?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?$/;

/**
 * Query parameters → the same object a POST body would carry: array fields accept repeated
 * and comma-separated values, numbers and booleans are converted, anything else stays a
 * string so the schema reports it.
 */
export function queryToObject(queries: Record<string, string[]>, schema: z.ZodType): Record<string, unknown> {
  const shape = (schema as unknown as { shape?: Record<string, z.ZodType> }).shape ?? {};
  // Parameter names are data: "constructor" or "__proto__" must not reach prototype members.
  const result: Record<string, unknown> = Object.create(null);
  const errors: FieldError[] = [];
  for (const [name, values] of Object.entries(queries)) {
    const field = Object.hasOwn(shape, name) ? shape[name] : undefined;
    const kind = field ? fieldKind(field) : "string";
    if (kind === "array") {
      result[name] = values.flatMap((value) => value.split(",")).map((value) => value.trim());
      continue;
    }
    if (values.length > 1) {
      errors.push({
        pointer: toPointer([name]),
        message: "given more than once; this parameter takes one value",
      });
      continue;
    }
    const value = values[0] as string;
    if (kind === "number" && NUMBER.test(value)) result[name] = Number(value);
    else if (kind === "boolean" && (value === "true" || value === "false")) result[name] = value === "true";
    else result[name] = value;
  }
  if (errors.length > 0) throw invalidRequest(errors);
  return result;
}
