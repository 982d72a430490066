import YAML from "yaml";
import { checkJsonStructure } from "../../http/read-input.ts";

/** A contract larger than this (UTF-8 bytes of the text, or of an object's JSON text) is a 400. */
export const MAX_CONTRACT_BYTES = 1024 * 1024;
/** Deeper nesting is a 400: Redocly walks recursively, and a YAML alias cycle would never end. */
export const MAX_CONTRACT_DEPTH = 100;
/** More JSON values than this is a 400 (bounds what YAML aliases can expand to). */
export const MAX_CONTRACT_NODES = 500_000;
/** YAML aliases beyond this are refused by the parser (the "billion laughs" guard of the yaml package). */
const MAX_YAML_ALIASES = 100;

export type ContractDocument = Record<string, unknown>;

/** One reason the contract is refused, with a path relative to `/contract`. */
export interface ContractIssue {
  path: (string | number)[];
  message: string;
}

/**
 * A contract that passed validation: the parsed document, its OpenAPI version and how it came.
 * It serialises (toJSON) as what the client sent, so request hashes and logs see the request itself.
 */
export class ParsedContract {
  constructor(
    readonly document: ContractDocument,
    readonly openapiVersion: "3.0" | "3.1",
    readonly openapi: string,
    private readonly sent: ContractDocument | string,
  ) {}

  toJSON(): ContractDocument | string {
    return this.sent;
  }
}

export const isPlainObject = (value: unknown): value is Record<string, unknown> =>
  typeof value === "object" && value !== null && !Array.isArray(value);

const OPENAPI_VERSION = /^3\.([01])\.\d+(?:-[0-9A-Za-z.-]+)?$/;

/** Parses and checks a contract (object, or JSON/YAML text) before any payment is asked for. */
export function parseContract(
  value: ContractDocument | string,
): { ok: true; contract: ParsedContract } | { ok: false; issues: ContractIssue[] } {
  const fail = (message: string, path: (string | number)[] = []) => ({
    ok: false as const,
    issues: [{ path, message }],
  });
  let document: unknown = value;
  const isText = typeof value === "string";
  if (isText) {
    const bytes = Buffer.byteLength(value, "utf8");
    if (bytes > MAX_CONTRACT_BYTES) {
      return fail(`the contract is ${bytes} bytes; the limit is ${MAX_CONTRACT_BYTES} bytes`);
    }
    const parsed = parseText(value);
    if ("error" in parsed) return fail(parsed.error);
    document = parsed.value;
    if (!isPlainObject(document)) {
      return fail(`the contract text must hold one object (an OpenAPI document), not ${describe(document)}`);
    }
  }
  const shape = checkShape(document);
  // A text contract's pointers would point into a string: report them on /contract itself.
  const at = (path: (string | number)[]) => (isText ? [] : path);
  if (shape) return fail(shape.message, at(shape.path));
  if (!isText) {
    const bytes = Buffer.byteLength(JSON.stringify(document), "utf8");
    if (bytes > MAX_CONTRACT_BYTES) {
      return fail(`the contract is ${bytes} bytes as JSON; the limit is ${MAX_CONTRACT_BYTES} bytes`);
    }
  }
  const doc = document as ContractDocument;
  const version = checkVersion(doc);
  if ("message" in version) {
    return fail(isText ? `in the contract text: ${version.message}` : version.message, at(version.path));
  }
  return { ok: true, contract: new ParsedContract(doc, version.major, version.openapi, value) };
}

function parseText(text: string): { value: unknown } | { error: string } {
  const source = text.startsWith("\uFEFF") ? text.slice(1) : text;
  if (source.trim() === "") return { error: "the contract text is empty" };
  const looksLikeJson = /^\s*[{[]/.test(source);
  let jsonError: string | undefined;
  if (looksLikeJson) {
    try {
      const value = JSON.parse(source);
      // JSON.parse keeps the last of two equal keys silently; a contract must not be ambiguous.
      const duplicate = checkJsonStructure(source, { rejectDuplicateKeys: true });
      if (duplicate) return { error: `the contract text has a duplicate key at ${duplicate.pointer}` };
      return { value };
    } catch (error) {
      jsonError = (error as Error).message;
    }
  }
  try {
    return {
      value: YAML.parse(source, { merge: true, maxAliasCount: MAX_YAML_ALIASES, uniqueKeys: true }),
    };
  } catch (error) {
    if (jsonError !== undefined) return { error: `the contract text is not valid JSON: ${jsonError}` };
    // The yaml package appends a code frame after the first line; the first line has the position.
    const firstLine = ((error as Error).message.split("\n")[0] ?? "").replace(/:$/, "");
    return { error: `the contract text is not valid YAML: ${firstLine}` };
  }
}

const describe = (value: unknown) =>
  value === null ? "null" : Array.isArray(value) ? "an array" : `a ${typeof value}`;

interface Visit {
  value: unknown;
  depth: number;
  parent?: Visit;
  key?: string | number;
}

const pathOf = (visit: Visit) => {
  const path: (string | number)[] = [];
  for (let at: Visit | undefined = visit; at?.parent; at = at.parent) path.unshift(at.key as string | number);
  return path;
};

/** Depth and size in one iterative pass (a deep or cyclic document must not exhaust the stack). */
function checkShape(root: unknown): ContractIssue | undefined {
  const stack: Visit[] = [{ value: root, depth: 0 }];
  let nodes = 0;
  while (stack.length > 0) {
    const visit = stack.pop() as Visit;
    if (++nodes > MAX_CONTRACT_NODES) {
      return { path: [], message: `the contract has more than ${MAX_CONTRACT_NODES} values` };
    }
    const { value, depth } = visit;
    if (typeof value !== "object" || value === null) continue;
    if (depth >= MAX_CONTRACT_DEPTH) {
      return {
        path: pathOf(visit),
        message: `the contract nests deeper than ${MAX_CONTRACT_DEPTH} levels (or holds a YAML alias cycle)`,
      };
    }
    if (Array.isArray(value)) {
      for (let key = 0; key < value.length; key++) {
        stack.push({ value: value[key], depth: depth + 1, parent: visit, key });
      }
    } else {
      for (const key of Object.keys(value)) {
        stack.push({ value: (value as Record<string, unknown>)[key], depth: depth + 1, parent: visit, key });
      }
    }
  }
  return undefined;
}

function checkVersion(
  doc: ContractDocument,
): { major: "3.0" | "3.1"; openapi: string } | { message: string; path: string[] } {
  if (Object.hasOwn(doc, "swagger")) {
    return {
      path: ["swagger"],
      message:
        `Swagger ${JSON.stringify(doc.swagger)} (OpenAPI 2.0) is not supported: send an OpenAPI 3.0 or 3.1 ` +
        "contract (convert it first, e.g. with swagger2openapi)",
    };
  }
  if (Object.hasOwn(doc, "asyncapi")) {
    return {
      path: ["asyncapi"],
      message: "AsyncAPI documents are not supported: send an OpenAPI 3.0 or 3.1 contract",
    };
  }
  const openapi = doc.openapi;
  if (openapi === undefined) {
    return {
      path: ["openapi"],
      message: 'not an OpenAPI document: the "openapi" field (3.0.x or 3.1.x) is missing',
    };
  }
  if (typeof openapi !== "string") {
    return {
      path: ["openapi"],
      message: `"openapi" must be a version string such as "3.1.0", not ${describe(openapi)} (quote it in YAML)`,
    };
  }
  const match = OPENAPI_VERSION.exec(openapi);
  if (!match) {
    return {
      path: ["openapi"],
      message: `OpenAPI ${JSON.stringify(openapi)} is not supported: only 3.0.x and 3.1.x are audited`,
    };
  }
  return { major: match[1] === "0" ? "3.0" : "3.1", openapi };
}
