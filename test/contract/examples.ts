import type { AnyOperation } from "../../src/contract/operation.ts";
import { queryToObject } from "../../src/input/parse-input.ts";
import { toPointer, zodIssuesToFieldErrors } from "../../src/problem.ts";

/** One request of an operation, as a client sends it: the path with its query, and the rest of the request. */
export interface ExampleRequest {
  pathAndQuery: string;
  init: RequestInit;
}

/** An input the operation's schema refuses, and the JSON Pointers the refusal names. */
export interface InvalidExample {
  request: ExampleRequest;
  /** The pointers the operation's own schema reports for it: the field made invalid, or inside it. */
  pointers: string[];
}

type Input = Record<string, unknown>;

/** The input as a request of the operation: a JSON body, a query string, or nothing (a download). */
export function requestOf(operation: AnyOperation, input: Input): ExampleRequest {
  if (operation.inputFrom === "body") {
    return {
      pathAndQuery: operation.path,
      init: {
        method: operation.method,
        headers: { "content-type": "application/json" },
        body: JSON.stringify(input),
      },
    };
  }
  const query = new URLSearchParams();
  for (const [name, value] of Object.entries(input)) {
    for (const item of Array.isArray(value) ? value : [value]) query.append(name, String(item));
  }
  const search = query.toString();
  return {
    pathAndQuery: `${operation.path}${search ? `?${search}` : ""}`,
    init: { method: operation.method },
  };
}

/**
 * The operation's declared example input (the one /openapi.json, the Bazaar extension and SKILL.md show),
 * unless the contract environment gives the one its stand-ins can answer; undefined when neither exists.
 * A download takes no input.
 */
export function validInput(operation: AnyOperation, fromEnvironment?: Input): Input | undefined {
  if (operation.inputFrom === "none") return {};
  return fromEnvironment ?? (operation.example.input as Input | undefined);
}

/** A value of each JSON type: for a field, the first its schema refuses makes the input invalid. */
const WRONG_BODY_VALUES: unknown[] = [true, 12345, "contract-suite: not this", [], {}, null];
/** A query parameter is text: one no enum, number, boolean, date, code or id of the API spells this way. */
const WRONG_QUERY_VALUES = ["contract-suite: not this"];

/** The parameters a query string carries, grouped by name as the HTTP layer reads them. */
function queryParameters(pathAndQuery: string): Record<string, string[]> {
  const grouped: Record<string, string[]> = {};
  for (const [name, value] of new URL(pathAndQuery, "http://contract.invalid").searchParams) {
    grouped[name] = [...(grouped[name] ?? []), value];
  }
  return grouped;
}

/**
 * An invalid input made from the valid example: one of its fields (or, for an example without fields,
 * one the schema declares) replaced by a value of a type the field does not take. The schema of the
 * operation says which replacement it refuses and with which pointers; the service must answer the same.
 */
export function invalidExample(operation: AnyOperation, valid: Input): InvalidExample | undefined {
  if (operation.inputFrom === "none") return undefined;
  const shape = (operation.input as unknown as { shape?: Record<string, unknown> }).shape ?? {};
  const fields = [...new Set([...Object.keys(valid), ...Object.keys(shape)])];
  const wrongValues = operation.inputFrom === "query" ? WRONG_QUERY_VALUES : WRONG_BODY_VALUES;
  for (const field of fields) {
    for (const wrong of wrongValues) {
      const input = { ...valid, [field]: wrong };
      const request = requestOf(operation, input);
      // What the schema gets: the body as it is, or the query read as the HTTP layer reads it.
      const candidate =
        operation.inputFrom === "query"
          ? queryToObject(queryParameters(request.pathAndQuery), operation.input)
          : input;
      const parsed = operation.input.safeParse(candidate);
      if (parsed.success) continue;
      const pointers = [
        ...new Set(zodIssuesToFieldErrors(parsed.error.issues).map((error) => error.pointer)),
      ];
      const own = toPointer([field]);
      if (pointers.every((pointer) => pointer === own || pointer.startsWith(`${own}/`))) {
        return { request, pointers };
      }
    }
  }
  return undefined;
}
