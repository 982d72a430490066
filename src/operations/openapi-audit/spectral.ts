import {
  Document,
  type ISpectralDiagnostic,
  type RulesetDefinition,
  Spectral,
} from "@stoplight/spectral-core";
import SpectralParsers from "@stoplight/spectral-parsers";
import { Resolver } from "@stoplight/spectral-ref-resolver";
import { oas } from "@stoplight/spectral-rulesets";
import type { ContractDocument } from "./contract.ts";
import { childPointer } from "./pointer.ts";
import type { Severity } from "./schema.ts";

/** The package is CommonJS: its parsers are properties of the default export under ESM. */
const Parsers = SpectralParsers as unknown as typeof import("@stoplight/spectral-parsers");

/** A finding as one engine reported it, before the engines' findings are merged. */
export interface EngineFinding {
  ruleId: string;
  severity: Severity;
  message: string;
  pointer: string;
  docsUrl?: string;
  /** "<engine>:<the engine's own rule id>", e.g. "spectral:typed-enum". */
  engine: string;
}

const refuse = {
  resolve: async (uri: { toString(): string }): Promise<never> => {
    throw new Error(`external reference "${String(uri)}" is not fetched`);
  },
};

/**
 * Spectral's resolver reads files and fetches http(s) by default (createHttpAndFileResolver). The
 * audit gives it one whose every reader refuses; a scheme with no reader (ftp:, urn:, data:) is refused
 * by the resolver itself. Local references (#/...) are resolved in memory.
 */
export const refusingSpectralResolver = () =>
  new Resolver({ resolvers: { http: refuse, https: refuse, file: refuse } });

/**
 * A new Spectral (with the OpenAPI ruleset, "spectral:oas") for every audit: one instance reused across
 * audits kept about 8 MB per audit of a 100 KB contract reachable, until the worker hit its memory limit.
 */
function freshSpectral(): Spectral {
  const instance = new Spectral({ resolver: refusingSpectralResolver() });
  instance.setRuleset(oas as RulesetDefinition);
  return instance;
}

/** Loads the engine and its ruleset now (a worker does this before it says it is ready). */
export const warmSpectral = () => void freshSpectral();

const SEVERITIES: Record<number, Severity> = { 0: "error", 1: "warning", 2: "info", 3: "info" };

const docsUrl = (code: string) =>
  `https://docs.stoplight.io/docs/spectral/4dec24461f3af-open-api-rules#${encodeURIComponent(code)}`;

const pointerOf = (path: readonly (string | number)[]) => path.reduce<string>(childPointer, "");

/** The value at a Spectral path in the contract (the path is of the JSON text we gave it). */
function valueAt(document: ContractDocument, path: readonly (string | number)[]): unknown {
  let node: unknown = document;
  for (const key of path) {
    if (typeof node !== "object" || node === null) return undefined;
    node = (node as Record<string | number, unknown>)[key];
  }
  return node;
}

/**
 * Runs Spectral's OpenAPI ruleset over the contract (as JSON text of the parsed document, so paths
 * are those of the document the other engines see). `source` names the contract's location for
 * relative references; it is new per audit and never read.
 */
export async function spectralFindings(document: ContractDocument, source: string): Promise<EngineFinding[]> {
  const results = await freshSpectral().run(new Document(JSON.stringify(document), Parsers.Json, source));
  return fromSpectral(document, results);
}

export function fromSpectral(document: ContractDocument, results: ISpectralDiagnostic[]): EngineFinding[] {
  const findings: EngineFinding[] = [];
  for (const result of results) {
    const code = String(result.code);
    const severity = SEVERITIES[result.severity] ?? "info";
    const path = [...result.path];
    if (code === "invalid-ref") {
      if (path[path.length - 1] === "$ref") path.pop();
      const ref = valueAt(document, [...path, "$ref"]);
      if (typeof ref === "string" && !ref.startsWith("#")) {
        findings.push({
          ruleId: "no-external-refs",
          severity: "error",
          message: externalRefMessage(ref),
          pointer: pointerOf(path),
          engine: "spectral:invalid-ref",
        });
        continue;
      }
    }
    findings.push({
      ruleId: code,
      severity,
      message: result.message,
      pointer: pointerOf(path),
      docsUrl: docsUrl(code),
      engine: `spectral:${code}`,
    });
  }
  return findings;
}

export const externalRefMessage = (ref: string) =>
  `external $ref "${ref}" was not fetched: this audit reads only the contract it is sent ` +
  "(never a URL or a file); bundle the contract into one document (e.g. redocly bundle) to audit what it references";
