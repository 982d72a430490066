import type { z } from "zod";
import type { AnyOperation, JsonBodyLimits, RequestBody } from "../contract/operation.ts";
import { escapePointerToken, type FieldError, invalidRequest, toPointer } from "../problem.ts";

/*
 * An operation's input from text, whatever carries it: a JSON body's checks and query parameters.
 * The HTTP reader (http/read-input.ts) and operations that read their own body both use it.
 */

/** UTF-8 as `Request.text()` decodes it: invalid bytes become U+FFFD, a leading byte order mark is dropped (RFC 8259 §8.1 allows ignoring it). */
const utf8 = new TextDecoder();

/** A body decoded as the JSON reader decodes it (text is already decoded). */
export const decodeBody = (body: RequestBody): string =>
  typeof body === "string" ? body : utf8.decode(body);

/** A body's size in bytes of UTF-8. */
export const bodyByteLength = (body: RequestBody): number =>
  typeof body === "string" ? Buffer.byteLength(body, "utf8") : body.byteLength;

/**
 * Every JSON body's nesting ceiling, whatever the operation's own limits: no real input is deeper, and a
 * value nested much deeper cannot cross to or from a worker thread (structured clone recurses: a body of
 * 150,000 levels parsed in the large-body worker was a 500).
 */
export const MAX_JSON_DEPTH = 1000;

/**
 * The JSON reader's checks on a body's text: present (unless optional), valid JSON, the operation's
 * structural limits (and MAX_JSON_DEPTH), and values no JSON output can carry. Returns the parsed value.
 */
export function parseJsonBody(text: string, operation: Pick<AnyOperation, "bodyOptional" | "json">): unknown {
  if (text.trim() === "") {
    if (operation.bodyOptional) return {};
    throw invalidRequest([{ pointer: "", message: "a JSON request body is required" }]);
  }
  const maxValues = operation.json?.maxValues;
  if (maxValues !== undefined && holdsMoreValues(text, maxValues)) {
    throw invalidRequest([
      {
        pointer: "",
        message: `the body holds more than ${maxValues} JSON values (objects, arrays, members)`,
      },
    ]);
  }
  let body: unknown;
  try {
    body = JSON.parse(text);
  } catch (error) {
    throw invalidRequest([
      { pointer: "", message: `the body is not valid JSON: ${(error as Error).message}` },
    ]);
  }
  // One literal of one shape (a spread of the operation's limits made a new shape per call: a missed
  // property lookup per read in checkJsonStructure).
  const error = checkJsonStructure(text, {
    maxDepth: Math.min(operation.json?.maxDepth ?? MAX_JSON_DEPTH, MAX_JSON_DEPTH),
    rejectDuplicateKeys: operation.json?.rejectDuplicateKeys === true,
  });
  if (error) throw invalidRequest([error]);
  const unrepresentable = MAY_HOLD_UNREPRESENTABLE.some((pattern) => pattern.test(text))
    ? firstUnrepresentable(body)
    : undefined;
  if (unrepresentable) throw invalidRequest([unrepresentable]);
  return body;
}

/**
 * JSON text that may hold what firstUnrepresentable looks for. The text is decoded from UTF-8 (an
 * encoded surrogate becomes U+FFFD), so only a \uD800–\uDFFF escape can make a lone surrogate, and
 * only an exponent or an integer part of 309 or more digits can overflow a double. Most bodies have
 * neither and skip the walk. Three patterns rather than one alternation, and the digit run with a fixed
 * prefix: V8 then skips ahead instead of trying every position (a 4.5 MB body: 8 ms instead of 42 ms).
 */
const MAY_HOLD_UNREPRESENTABLE = [/\\u[dD][89a-fA-F]/, /[0-9][eE]/, /\d\d\d\d\d\d\d\d[0-9]{301}/];

const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;

/**
 * Values JSON.parse accepts but no JSON output can carry faithfully: 1e999 (parsed as Infinity)
 * and strings or member names with a lone UTF-16 surrogate (not Unicode text; RFC 8785, which the
 * request hash uses, refuses them). Iterative, so a deeply nested body cannot exhaust the stack.
 */
function firstUnrepresentable(root: unknown): FieldError | undefined {
  const stack: [unknown, string][] = [[root, ""]];
  while (stack.length > 0) {
    const [value, pointer] = stack.pop() as [unknown, string];
    if (typeof value === "number" && !Number.isFinite(value)) {
      return { pointer, message: "number out of range (not a finite double)" };
    }
    if (typeof value === "string" && LONE_SURROGATE.test(value)) {
      return { pointer, message: "string contains a lone UTF-16 surrogate (not Unicode text)" };
    }
    if (typeof value === "object" && value !== null) {
      for (const [key, child] of Object.entries(value)) {
        const childPointer = `${pointer}/${escapePointerToken(key)}`;
        if (LONE_SURROGATE.test(key)) {
          return {
            pointer: childPointer,
            message: "member name contains a lone UTF-16 surrogate (not Unicode text)",
          };
        }
        stack.push([child, childPointer]);
      }
    }
  }
  return undefined;
}

/**
 * The first breach of an operation's JSON body limits: a container nested deeper than `maxDepth`
 * (the outermost value is level 1) or a key an object names twice (JSON.parse silently keeps the
 * last one). One linear scan without recursion over text JSON.parse has already accepted, so the
 * text is well-formed; strings are skipped with indexOf and only keys are decoded.
 */
export function checkJsonStructure(text: string, limits: JsonBodyLimits): FieldError | undefined {
  const maxDepth = limits.maxDepth ?? Number.POSITIVE_INFINITY;
  const rejectDuplicates = limits.rejectDuplicateKeys === true;
  if (maxDepth === Number.POSITIVE_INFINITY && !rejectDuplicates) return undefined;
  // One entry per open container: whether it is an array, the current index or key, the keys seen.
  const isArray: boolean[] = [];
  const position: (number | string)[] = [];
  const keysSeen: (string[] | Set<string> | undefined)[] = [];
  let expectKey = false;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c === 0x22 /* " */) {
      const end = stringEnd(text, i);
      if (expectKey) {
        const raw = text.slice(i + 1, end);
        const key = raw.indexOf("\\") === -1 ? raw : (JSON.parse(text.slice(i, end + 1)) as string);
        const top = isArray.length - 1;
        if (rejectDuplicates && seenBefore(keysSeen, top, key)) {
          return {
            pointer: `${pointerOf(position, top)}/${escapePointerToken(key)}`,
            message: `duplicate key "${key}": this object names it more than once`,
          };
        }
        position[top] = key;
        expectKey = false;
      }
      i = end;
    } else if (c === 0x7b /* { */ || c === 0x5b /* [ */) {
      if (isArray.length >= maxDepth) {
        return {
          pointer: pointerOf(position, isArray.length),
          message: `nested deeper than ${maxDepth} levels of arrays and objects (the body is level 1)`,
        };
      }
      isArray.push(c === 0x5b);
      position.push(0);
      keysSeen.push(undefined);
      expectKey = c === 0x7b;
    } else if (c === 0x7d /* } */ || c === 0x5d /* ] */) {
      isArray.pop();
      position.pop();
      keysSeen.pop();
      expectKey = false;
    } else if (c === 0x2c /* , */) {
      const top = isArray.length - 1;
      if (isArray[top]) position[top] = (position[top] as number) + 1;
      else expectKey = true;
    }
  }
  return undefined;
}

/** The characters holdsMoreValues stops at; a regular expression finds the next one faster than a loop. */
const VALUE_OR_STRING = /["{[,]/g;

/**
 * Whether the text has more than `max` commas and opening brackets outside strings; stops at the first one
 * over, and skips strings with indexOf, so the cost is bounded by `max`, not by the size of the body.
 */
function holdsMoreValues(text: string, max: number): boolean {
  let count = 0;
  VALUE_OR_STRING.lastIndex = 0;
  for (let match = VALUE_OR_STRING.exec(text); match; match = VALUE_OR_STRING.exec(text)) {
    if (match[0] === '"') {
      const end = stringEnd(text, match.index);
      if (end < 0) return false; // unterminated: JSON.parse reports it
      VALUE_OR_STRING.lastIndex = end + 1;
    } else if (++count > max) {
      return true;
    }
  }
  return false;
}

/** Index of the quote that closes the string opening at `start` (one preceded by an even run of backslashes). */
function stringEnd(text: string, start: number): number {
  let end = start;
  for (;;) {
    end = text.indexOf('"', end + 1);
    let backslashes = 0;
    while (text.charCodeAt(end - 1 - backslashes) === 0x5c) backslashes++;
    if (backslashes % 2 === 0) return end;
  }
}

/** Records `key` for the container at `top`; true when it was already there. Small objects use a list. */
function seenBefore(keysSeen: (string[] | Set<string> | undefined)[], top: number, key: string): boolean {
  const keys = keysSeen[top];
  if (keys === undefined) {
    keysSeen[top] = [key];
    return false;
  }
  if (Array.isArray(keys)) {
    if (keys.includes(key)) return true;
    keys.push(key);
    if (keys.length > 16) keysSeen[top] = new Set(keys);
    return false;
  }
  if (keys.has(key)) return true;
  keys.add(key);
  return false;
}

const pointerOf = (position: readonly (number | string)[], count: number) =>
  toPointer(position.slice(0, count));

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
