import YAML from "yaml";
import { checkJsonStructure } from "../../input/parse-input.ts";

/**
 * A contract larger than this (UTF-8 bytes of the text, or of an object's JSON text) is a 400. Twilio's
 * api_v2010 is 1.87 MB; at 4 MiB the body's JSON checks on the main thread came close to 50 ms.
 */
export const MAX_CONTRACT_BYTES = 3 * 1024 * 1024;
/**
 * A text contract up to this size is parsed on the main thread before payment (a syntax error is a 400
 * before anything is asked for). A larger one could keep the event loop busy for longer than 50 ms, so it
 * is parsed in the audit worker: its errors are then a 400 after the payment is verified, still never charged.
 */
export const MAIN_THREAD_TEXT_BYTES = 8 * 1024;
/** A YAML alias (`*name`): expanding aliases can cost far more than the text's size, so such a text is parsed in the worker. */
const YAML_ALIAS = /(?:^|[\s[{,:-])\*[^\s,[\]{}]/;
/** Deeper nesting is a 400: Redocly walks recursively, and a YAML alias cycle would never end. */
export const MAX_CONTRACT_DEPTH = 100;
/**
 * An object contract (parsed by the request's JSON.parse on the main thread, before payment) holds at
 * most this many values; the HTTP door counts them before parsing (json.maxValues). Larger contracts go
 * as text, which is parsed in the audit worker.
 */
export const MAX_OBJECT_VALUES = 12_000;
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
  readonly deferred = false;
  constructor(
    readonly document: ContractDocument,
    readonly openapiVersion: "3.0" | "3.1" | "3.2",
    readonly openapi: string,
    private readonly sent: ContractDocument | string,
  ) {}

  toJSON(): ContractDocument | string {
    return this.sent;
  }
}

/** A text contract too large to parse on the main thread: the audit worker parses and checks it. */
export class DeferredContract {
  readonly deferred = true;
  constructor(readonly text: string) {}

  toJSON(): string {
    return this.text;
  }
}

export const isPlainObject = (value: unknown): value is Record<string, unknown> =>
  typeof value === "object" && value !== null && !Array.isArray(value);

const OPENAPI_VERSION = /^3\.([012])\.\d+(?:-[0-9A-Za-z.-]+)?$/;

/**
 * Parses and checks a contract (object, or JSON/YAML text) before any payment is asked for. On the
 * main thread a text larger than MAIN_THREAD_TEXT_BYTES only gets checks that take linear time with a
 * small constant (size, a version it names), and comes back deferred; the worker (`inWorker`) parses it.
 */
export function parseContract(
  value: string,
  options: { inWorker: true },
): { ok: true; contract: ParsedContract } | { ok: false; issues: ContractIssue[] };
export function parseContract(
  value: ContractDocument | string,
  options?: { inWorker?: boolean },
): { ok: true; contract: ParsedContract | DeferredContract } | { ok: false; issues: ContractIssue[] };
export function parseContract(
  value: ContractDocument | string,
  options: { inWorker?: boolean } = {},
): { ok: true; contract: ParsedContract | DeferredContract } | { ok: false; issues: ContractIssue[] } {
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
    if (!options.inWorker && (bytes > MAIN_THREAD_TEXT_BYTES || YAML_ALIAS.test(value))) {
      const refused = precheckText(value);
      return refused
        ? fail(`in the contract text: ${refused}`)
        : { ok: true, contract: new DeferredContract(value) };
    }
    const parsed = parseText(value);
    if ("error" in parsed) return fail(parsed.error);
    document = parsed.value;
    if (!isPlainObject(document)) {
      return fail(`the contract text must hold one object (an OpenAPI document), not ${describe(document)}`);
    }
  }
  const shape = checkShape(document, isText ? MAX_CONTRACT_NODES : MAX_OBJECT_VALUES + 1);
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

const YAML_VERSION = /^openapi[ \t]*:[ \t]*["']?([^"'\s#]*)/m;
const JSON_VERSION = /"openapi"\s*:\s*"([^"]*)"/;
const YAML_SWAGGER = /^swagger[ \t]*:[ \t]*["']?([^"'\s#]*)/m;
const JSON_SWAGGER = /"swagger"\s*:\s*"([^"]*)"/;

/**
 * What can be refused about a large text without parsing it (a few regular-expression scans, linear):
 * a version the audit does not take, where the text names one. Everything else is checked in the worker.
 */
function precheckText(text: string): string | undefined {
  if (text.trim() === "") return "the contract text is empty";
  const json = /^\s*[{[]/.test(text.startsWith("\uFEFF") ? text.slice(1) : text);
  const version = (json ? JSON_VERSION : YAML_VERSION).exec(text)?.[1];
  if (version !== undefined) {
    return OPENAPI_VERSION.test(version)
      ? undefined
      : `OpenAPI ${JSON.stringify(version)} is not supported: only 3.0.x, 3.1.x and 3.2.x are audited`;
  }
  const swagger = (json ? JSON_SWAGGER : YAML_SWAGGER).exec(text)?.[1];
  if (swagger !== undefined) {
    return (
      `Swagger ${JSON.stringify(swagger)} (OpenAPI 2.0) is not supported: send an OpenAPI 3.0, 3.1 or 3.2 ` +
      "contract (convert it first, e.g. with swagger2openapi)"
    );
  }
  return undefined;
}

/**
 * YAML with duplicate keys refused in linear time. The yaml package's own `uniqueKeys` check compares
 * each key with every earlier key of its mapping: 85,000 keys took 68 s. Here each mapping's keys go
 * into a Set instead.
 */
function parseYaml(source: string): unknown {
  const lineCounter = new YAML.LineCounter();
  const document = YAML.parseDocument(source, { merge: true, uniqueKeys: false, lineCounter });
  const first = document.errors[0];
  if (first) throw first;
  let duplicate: Error | undefined;
  YAML.visit(document, {
    Map(_, map) {
      const keys = new Set<string>();
      for (const pair of map.items) {
        const key = pair.key;
        const name = YAML.isScalar(key) ? String(key.value) : String(key);
        if (name === "<<" && YAML.isScalar(key)) continue;
        if (keys.has(name)) {
          const at = lineCounter.linePos((YAML.isNode(key) ? key.range?.[0] : undefined) ?? 0);
          duplicate = new Error(`Map keys must be unique at line ${at.line}, column ${at.col}`);
          return YAML.visit.BREAK;
        }
        keys.add(name);
      }
      return undefined;
    },
  });
  if (duplicate) throw duplicate;
  return document.toJS({ maxAliasCount: MAX_YAML_ALIASES });
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
    return { value: parseYaml(source) };
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
function checkShape(root: unknown, maxNodes: number): ContractIssue | undefined {
  const stack: Visit[] = [{ value: root, depth: 0 }];
  let nodes = 0;
  while (stack.length > 0) {
    const visit = stack.pop() as Visit;
    if (++nodes > maxNodes) {
      return {
        path: [],
        message:
          maxNodes === MAX_CONTRACT_NODES
            ? `the contract has more than ${MAX_CONTRACT_NODES} values`
            : `the contract object has more than ${MAX_OBJECT_VALUES} values: send a larger contract as JSON or YAML text`,
      };
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
): { major: "3.0" | "3.1" | "3.2"; openapi: string } | { message: string; path: string[] } {
  if (Object.hasOwn(doc, "swagger")) {
    return {
      path: ["swagger"],
      message:
        `Swagger ${JSON.stringify(doc.swagger)} (OpenAPI 2.0) is not supported: send an OpenAPI 3.0, 3.1 or 3.2 ` +
        "contract (convert it first, e.g. with swagger2openapi)",
    };
  }
  if (Object.hasOwn(doc, "asyncapi")) {
    return {
      path: ["asyncapi"],
      message: "AsyncAPI documents are not supported: send an OpenAPI 3.0, 3.1 or 3.2 contract",
    };
  }
  const openapi = doc.openapi;
  if (openapi === undefined) {
    return {
      path: ["openapi"],
      message: 'not an OpenAPI document: the "openapi" field (3.0.x, 3.1.x or 3.2.x) is missing',
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
      message: `OpenAPI ${JSON.stringify(openapi)} is not supported: only 3.0.x, 3.1.x and 3.2.x are audited`,
    };
  }
  return { major: `3.${match[1]}` as "3.0" | "3.1" | "3.2", openapi };
}
