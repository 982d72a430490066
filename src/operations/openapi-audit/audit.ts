import { randomUUID } from "node:crypto";
import {
  BaseResolver,
  type Config,
  createConfig,
  lintDocument,
  type NormalizedProblem,
  Source,
} from "@redocly/openapi-core";
import { AGENT_RULES, agentFindings } from "./agent-rules.ts";
import { type ContractDocument, isPlainObject, parseContract } from "./contract.ts";
import { isEvaluated, useLinearPatternsInEngines } from "./linear-regexp.ts";
import { childPointer, fragmentTokens, pointerTokens } from "./pointer.ts";
import type { Finding, OpenApiAuditOutput, Ruleset, Severity } from "./schema.ts";
import { type EngineFinding, externalRefMessage, spectralFindings } from "./spectral.ts";

/**
 * What one audit needs; plain data, so it crosses into a worker thread by structured clone. A contract
 * parsed before payment comes as `document` and `openapi`; a large text contract comes as `text` and
 * is parsed (and checked) in the worker, where it cannot hold up the service's event loop.
 */
export type AuditJob = (
  | { document: ContractDocument; openapi: string; text?: undefined }
  | { text: string; document?: undefined; openapi?: undefined }
) & { ruleset: Ruleset; maxFindings: number };

// The engines test examples against the contract's patterns in linear time (RE2JS), never by backtracking.
useLinearPatternsInEngines();

/** A text contract parsed in the worker was refused: the message of a 400 at /contract (nothing charged). */
export class ContractRefused extends Error {}

/** Rules of this service beyond Redocly's and the agent rules: an error in both rulesets. */
export const CONTRACT_RULES = {
  "no-external-refs":
    "an external $ref (URL or file) was not fetched: the audit reads only the contract it is sent",
  "no-ref-cycles": "a $ref chain leads back to itself and never reaches a value",
  "lint-aborted": "the linter could not finish on this contract; only the agent rules were applied",
  "spectral-aborted": "Spectral could not finish on this contract; the other engines' findings stand",
  "openapi-3.2-audited-as-3.1":
    "an OpenAPI 3.2 document is audited with the 3.1 rule set (a note, never an error)",
  "pattern-not-evaluated":
    "a schema pattern uses what cannot be run in linear time (a lookahead, a backreference): examples are not checked against it (a note, never an error)",
} as const;

/** Redocly rules replaced by agent rules (same check, one finding). */
const REPLACED_BY_AGENT_RULES = { "operation-operationId": "off", "operation-4xx-response": "off" } as const;

/**
 * Where the contract "lives" for Redocly: any reference to another location is external and
 * refused. The name is new for every audit, so no `$ref` can name the contract's own document
 * (Redocly would follow it past the cycle check and abort the lint).
 */
const contractRef = () => `/contract-${randomUUID()}.json`;

const REFUSED = /^Can't resolve \$ref: external reference "(.*)" is not fetched$/s;

/**
 * The only resolver the audit gives Redocly: it never reads a file and never opens a connection.
 * Every document other than the contract itself is refused, which Redocly reports as an
 * unresolved reference (turned into a no-external-refs finding).
 */
export class RefusingResolver extends BaseResolver {
  readonly refused: string[] = [];

  override async resolveDocument(_base: string | null, ref: string): Promise<never> {
    throw this.refuse(ref);
  }

  override async loadExternalRef(ref: string): Promise<never> {
    throw this.refuse(ref);
  }

  private refuse(ref: string): Error {
    this.refused.push(ref);
    return new Error(`external reference "${ref}" is not fetched`);
  }
}

const configs = new Map<Ruleset, Promise<Config>>();

/** Redocly's configuration per ruleset, built once per thread (it is immutable during a lint). */
export function redoclyConfig(ruleset: Ruleset): Promise<Config> {
  let config = configs.get(ruleset);
  if (!config) {
    config = createConfig({
      extends: [ruleset === "strict" ? "recommended-strict" : "recommended"],
      rules: { ...REPLACED_BY_AGENT_RULES },
    });
    configs.set(ruleset, config);
  }
  return config;
}

const REDOCLY_COMMON_RULES = new Set([
  "struct",
  "no-unresolved-refs",
  "no-unsafe-markdown",
  "no-duplicated-enum-values",
  "no-required-schema-properties-undefined",
  "security-scopes-defined",
]);

const redoclyDocsUrl = (ruleId: string) =>
  /^[a-z0-9.-]+$/i.test(ruleId)
    ? `https://redocly.com/docs/cli/rules/${REDOCLY_COMMON_RULES.has(ruleId) ? "common" : "oas"}/${ruleId}`
    : undefined;

/** "#/paths/~1pets/get" → "/paths/~1pets/get"; Redocly's pointers are JSON Pointers behind a "#". */
const toJsonPointer = (pointer: string | undefined) =>
  pointer === undefined || pointer === "#" || pointer === "#/" ? "" : pointer.replace(/^#/, "");

function fromRedocly(problem: NormalizedProblem): EngineFinding {
  const pointer = toJsonPointer(problem.location[0]?.pointer);
  const engine = `redocly:${problem.ruleId}`;
  const refused = problem.ruleId === "no-unresolved-refs" ? REFUSED.exec(problem.message) : null;
  if (refused) {
    return {
      ruleId: "no-external-refs",
      severity: "error",
      message: externalRefMessage(refused[1] as string),
      pointer,
      engine,
    };
  }
  const suggest = problem.suggest.length > 0 ? ` Did you mean: ${problem.suggest.join(", ")}?` : "";
  const reference = problem.reference && URL.canParse(problem.reference) ? problem.reference : undefined;
  const docsUrl = reference ?? redoclyDocsUrl(problem.ruleId);
  return {
    ruleId: problem.ruleId,
    severity: problem.severity === "error" ? "error" : "warning",
    message: problem.message + suggest,
    pointer,
    ...(docsUrl ? { docsUrl } : {}),
    engine,
  };
}

interface RefCycle {
  pointers: string[];
  refs: string[];
}

/**
 * $ref chains that come back to themselves. Redocly throws on them (and stops the whole lint), so
 * the audit reports them and lints a copy where the references of each cycle are removed.
 */
export function findRefCycles(document: ContractDocument): RefCycle[] {
  const refs: { $ref: string }[] = [];
  forEachNode(document, (node) => {
    if (isLocalRef(node)) refs.push(node);
  });
  const resolved = new Map<string, unknown>();
  const members: object[][] = [];
  const inCycle = new Set<object>();
  for (const ref of refs) {
    const result = chase(document, ref, [], resolved);
    if (!("cycle" in result) || result.cycle.some((node) => inCycle.has(node))) continue;
    for (const node of result.cycle) inCycle.add(node);
    members.push(result.cycle);
  }
  if (members.length === 0) return [];
  // Pointers are worked out only when there is a cycle to report (rare, and a second walk).
  const pointerOf = new Map<object, string>();
  forEachNode(document, (node, pointer) => {
    if (inCycle.has(node)) pointerOf.set(node, pointer());
  });
  return members.map((cycle) => ({
    pointers: cycle.map((node) => pointerOf.get(node) ?? ""),
    refs: cycle.map((node) => (node as { $ref: string }).$ref),
  }));
}

interface Walked {
  node: object;
  parent?: Walked;
  key?: string | number;
}

/** Visits every object and array once; `pointer()` builds the node's JSON Pointer on demand. */
function forEachNode(root: unknown, visit: (node: object, pointer: () => string) => void): void {
  if (typeof root !== "object" || root === null) return;
  const seen = new Set<object>();
  const stack: Walked[] = [{ node: root }];
  while (stack.length > 0) {
    const walked = stack.pop() as Walked;
    if (seen.has(walked.node)) continue;
    seen.add(walked.node);
    visit(walked.node, () => {
      const tokens: (string | number)[] = [];
      for (let at: Walked | undefined = walked; at?.parent; at = at.parent) tokens.unshift(at.key as string);
      return tokens.reduce<string>(childPointer, "");
    });
    const entries: [string | number, unknown][] = Array.isArray(walked.node)
      ? [...walked.node.entries()]
      : Object.entries(walked.node);
    for (const [key, value] of entries) {
      if (typeof value !== "object" || value === null || isLiteralData(key, walked.key)) continue;
      stack.push({ node: value, parent: walked, key });
    }
  }
}

/**
 * Members whose values are data, not OpenAPI objects: a `$ref` inside them is literal text (an
 * example payload, a default, an extension). `value` is an Example Object's payload, unless it is
 * a property named "value" in a schema's `properties`.
 */
function isLiteralData(key: string | number, parentKey: string | number | undefined): boolean {
  if (typeof key !== "string") return false;
  if (key === "example" || key === "default" || key === "const" || key === "enum" || key.startsWith("x-")) {
    return parentKey !== "properties" && parentKey !== "patternProperties";
  }
  return key === "value" && parentKey !== "properties" && parentKey !== "patternProperties";
}

const acceptedByJavaScript = (source: string) => {
  try {
    new RegExp(source);
    return true;
  } catch {
    return false;
  }
};

/**
 * The schemas' patterns (`pattern`, the names of `patternProperties`) the engines do not evaluate:
 * valid JavaScript, but not runnable in linear time (see linear-regexp.ts). Their pointers.
 */
export function unevaluablePatterns(document: ContractDocument): { pointer: string; pattern: string }[] {
  const found: { pointer: string; pattern: string }[] = [];
  const verdicts = new Map<string, boolean>();
  const unevaluable = (source: string) => {
    let verdict = verdicts.get(source);
    if (verdict === undefined) {
      verdict = !isEvaluated(source) && acceptedByJavaScript(source);
      verdicts.set(source, verdict);
    }
    return verdict;
  };
  forEachNode(document, (node, pointer) => {
    if (Array.isArray(node)) return;
    const { pattern, patternProperties } = node as Record<string, unknown>;
    if (typeof pattern === "string" && unevaluable(pattern)) {
      found.push({ pointer: childPointer(pointer(), "pattern"), pattern });
    }
    if (isPlainObject(patternProperties)) {
      for (const name of Object.keys(patternProperties)) {
        if (unevaluable(name)) {
          found.push({
            pointer: childPointer(childPointer(pointer(), "patternProperties"), name),
            pattern: name,
          });
        }
      }
    }
  });
  return found;
}

const isLocalRef = (node: unknown): node is { $ref: string } =>
  isPlainObject(node) && typeof node.$ref === "string" && node.$ref.startsWith("#");

type Chase = { cycle: object[] } | { node: unknown };

/**
 * Follows a local $ref the way Redocly does, through references met along the pointer; `chain`
 * holds the references being followed, and meeting one of them again is a cycle. `resolved`
 * remembers where a reference leads once it was followed to its end without a cycle.
 */
function chase(
  document: ContractDocument,
  ref: { $ref: string },
  chain: object[],
  resolved: Map<string, unknown>,
): Chase {
  if (resolved.has(ref.$ref)) return { node: resolved.get(ref.$ref) };
  const seen = chain.indexOf(ref);
  if (seen >= 0) return { cycle: chain.slice(seen) };
  if (chain.length >= 64) return { node: undefined };
  chain.push(ref);
  let node: unknown = document;
  for (const token of fragmentTokens(ref.$ref.slice(1)) ?? []) {
    if (isLocalRef(node)) {
      const depth = chain.length;
      const through = chase(document, node, chain, resolved);
      chain.length = depth;
      if ("cycle" in through) return through;
      node = through.node;
    }
    node = isPlainObject(node) || Array.isArray(node) ? (node as Record<string, unknown>)[token] : undefined;
  }
  const result = isLocalRef(node) ? chase(document, node, chain, resolved) : { node };
  if (!("cycle" in result)) resolved.set(ref.$ref, result.node);
  return result;
}

/** Removes the $ref of every cycle member in a copy, so Redocly can lint the rest. */
function withoutCycles(document: ContractDocument, cycles: RefCycle[]): ContractDocument {
  const copy = structuredClone(document);
  for (const pointer of cycles.flatMap((cycle) => cycle.pointers)) {
    let node: unknown = copy;
    for (const token of pointerTokens(pointer)) node = (node as Record<string, unknown>)[token];
    if (isPlainObject(node)) delete node.$ref;
  }
  return copy;
}

const SEVERITY_RANK: Record<Severity, number> = { error: 0, warning: 1, info: 2 };

/** Pointer order: token by token (a parent before its children), tokens by UTF-16 code units. */
export function comparePointers(a: string, b: string): number {
  if (a === b) return 0;
  const left = a.split("/");
  const right = b.split("/");
  for (let i = 0; i < Math.min(left.length, right.length); i++) {
    const x = left[i] as string;
    const y = right[i] as string;
    if (x !== y) return x < y ? -1 : 1;
  }
  return left.length - right.length;
}

const compareText = (a: string, b: string) => (a < b ? -1 : a > b ? 1 : 0);

export const compareFindings = (a: Finding, b: Finding) =>
  SEVERITY_RANK[a.severity] - SEVERITY_RANK[b.severity] ||
  comparePointers(a.pointer, b.pointer) ||
  compareText(a.ruleId, b.ruleId) ||
  compareText(a.message, b.message);

/**
 * Rules of different engines that check the same thing: a finding of each at the same pointer is one
 * problem, reported once. Rules not listed are their own topic.
 */
const SAME_PROBLEM: Record<string, string> = {
  "redocly:no-unresolved-refs": "ref",
  "spectral:invalid-ref": "ref",
  "redocly:struct": "structure",
  "spectral:oas3-schema": "structure",
  "redocly:info-contact": "info-contact",
  "spectral:info-contact": "info-contact",
  "redocly:info-description": "info-description",
  "spectral:info-description": "info-description",
  "redocly:info-license": "info-license",
  "spectral:info-license": "info-license",
  "redocly:info-license-url": "license-url",
  "redocly:info-license-strict": "license-url",
  "spectral:license-url": "license-url",
  "redocly:operation-description": "operation-description",
  "spectral:operation-description": "operation-description",
  "redocly:tag-description": "tag-description",
  "spectral:tag-description": "tag-description",
  "redocly:operation-tag-defined": "operation-tag-defined",
  "spectral:operation-tag-defined": "operation-tag-defined",
  "redocly:operation-operationId-unique": "operation-id-unique",
  "spectral:operation-operationId-unique": "operation-id-unique",
  "redocly:operation-operationId-url-safe": "operation-id-url-safe",
  "spectral:operation-operationId-valid-in-url": "operation-id-url-safe",
  "openapi-audit:agent-operation-id": "operation-id",
  "spectral:operation-operationId": "operation-id",
  "redocly:path-parameters-defined": "path-params",
  "spectral:path-params": "path-params",
  "redocly:operation-parameters-unique": "parameters-unique",
  "spectral:operation-parameters": "parameters-unique",
  "redocly:no-server-trailing-slash": "server-trailing-slash",
  "spectral:oas3-server-trailing-slash": "server-trailing-slash",
  "redocly:no-path-trailing-slash": "path-trailing-slash",
  "spectral:path-keys-no-trailing-slash": "path-trailing-slash",
  "redocly:no-unused-components": "unused-component",
  "spectral:oas3-unused-component": "unused-component",
  "redocly:no-invalid-media-type-examples": "media-example",
  "spectral:oas3-valid-media-example": "media-example",
  "redocly:no-invalid-schema-examples": "schema-example",
  "spectral:oas3-valid-schema-example": "schema-example",
  "redocly:no-example-value-and-externalValue": "example-value-or-external",
  "spectral:oas3-examples-value-or-externalValue": "example-value-or-external",
  "redocly:operation-2xx-response": "success-response",
  "spectral:operation-success-response": "success-response",
  "redocly:security-defined": "security-defined",
  "spectral:oas3-operation-security-defined": "security-defined",
  "redocly:no-enum-type-mismatch": "typed-enum",
  "spectral:typed-enum": "typed-enum",
  "redocly:no-empty-servers": "servers",
  "spectral:oas3-api-servers": "servers",
  "redocly:path-not-include-query": "path-query",
  "spectral:path-not-include-query": "path-query",
  "redocly:tags-alphabetical": "tags-alphabetical",
  "spectral:openapi-tags-alphabetical": "tags-alphabetical",
  "redocly:operation-singular-tag": "singular-tag",
  "spectral:operation-singular-tag": "singular-tag",
};

/** Engine order when two report the same problem at the same severity: whose words are kept. */
const ENGINE_RANK: Record<string, number> = { "openapi-audit": 0, redocly: 1, spectral: 2 };
const engineRank = (engine: string) => ENGINE_RANK[engine.split(":")[0] as string] ?? 3;

const REF_RULES = new Set(["no-external-refs", "no-unresolved-refs", "invalid-ref", "no-ref-cycles"]);

/**
 * Whether a pointer passes through data (an example payload, a default, an enum, a const, an `x-*`
 * extension, a 3.1 schema's `examples` array): a `$ref` there is text, not a reference.
 */
export function insideLiteralData(pointer: string): boolean {
  const tokens = pointerTokens(pointer);
  for (let i = 0; i < tokens.length; i++) {
    const key = tokens[i] as string;
    if (isLiteralData(key, tokens[i - 1])) return true;
    if (key === "examples" && /^\d+$/.test(tokens[i + 1] ?? "")) return true;
  }
  return false;
}

/**
 * Merges the engines' findings: the same problem (same pointer, and the same rule or rules known to
 * check the same thing) is one finding, at the highest severity any engine gave it, in the words of
 * the engine ranked first, with every engine that found it.
 */
export function mergeFindings(findings: EngineFinding[]): Finding[] {
  const merged = new Map<string, { finding: EngineFinding; engines: Set<string> }>();
  for (const finding of findings) {
    const topic =
      SAME_PROBLEM[finding.engine] ?? (finding.ruleId === "no-external-refs" ? "ref" : finding.engine);
    const key = `${finding.pointer}\u0000${topic}\u0000${topic === finding.engine ? finding.message : ""}`;
    const seen = merged.get(key);
    if (!seen) {
      merged.set(key, { finding, engines: new Set([finding.engine]) });
      continue;
    }
    seen.engines.add(finding.engine);
    const better =
      SEVERITY_RANK[finding.severity] - SEVERITY_RANK[seen.finding.severity] ||
      engineRank(finding.engine) - engineRank(seen.finding.engine);
    if (better < 0) seen.finding = finding;
  }
  return [...merged.values()].map(
    ({ finding: { ruleId, severity, message, pointer, docsUrl }, engines }) => ({
      ruleId,
      severity,
      message,
      pointer,
      ...(docsUrl ? { docsUrl } : {}),
      engines: [...engines].sort(),
    }),
  );
}

const ENUM_MEMBER = /^(.*\/enum)\/(\d+)$/;

/**
 * Both engines report an enum value of the wrong type once per value (Redocly without the value):
 * one finding per enum instead, at the enum, naming the values.
 */
export function collapseEnumFindings(findings: EngineFinding[], document: ContractDocument): EngineFinding[] {
  const flagged = new Map<string, Set<number>>();
  for (const finding of findings) {
    const member = SAME_PROBLEM[finding.engine] === "typed-enum" ? ENUM_MEMBER.exec(finding.pointer) : null;
    if (!member) continue;
    const indexes = flagged.get(member[1] as string) ?? new Set<number>();
    indexes.add(Number(member[2]));
    flagged.set(member[1] as string, indexes);
  }
  if (flagged.size === 0) return findings;
  const messages = new Map<string, string>();
  for (const [pointer, indexes] of flagged) {
    let node: unknown = document;
    for (const token of pointerTokens(pointer)) node = (node as Record<string, unknown> | undefined)?.[token];
    const schema = pointerTokens(pointer)
      .slice(0, -1)
      .reduce<unknown>((at, token) => (at as Record<string, unknown> | undefined)?.[token], document);
    const type = isPlainObject(schema) ? JSON.stringify(schema.type) : "its type";
    const values = [...indexes]
      .sort((a, b) => a - b)
      .map((i) => JSON.stringify((node as unknown[] | undefined)?.[i]));
    const shown =
      values.length > 10
        ? `${values.slice(0, 10).join(", ")} and ${values.length - 10} more`
        : values.join(", ");
    messages.set(
      pointer,
      values.length === 1
        ? `enum value ${shown} is not of type ${type}`
        : `enum values ${shown} are not of type ${type}`,
    );
  }
  return findings.map((finding) => {
    const member = SAME_PROBLEM[finding.engine] === "typed-enum" ? ENUM_MEMBER.exec(finding.pointer) : null;
    if (!member) return finding;
    const pointer = member[1] as string;
    return { ...finding, pointer, message: messages.get(pointer) as string };
  });
}

/** Sorts, de-duplicates, counts and truncates: the response body. */
export function summarize(
  findings: Finding[],
  openapi: string,
  maxFindings: number,
  auditedAs?: "3.0" | "3.1",
): OpenApiAuditOutput {
  const unique = new Map<string, Finding>();
  for (const { ruleId, severity, message, pointer, docsUrl, engines } of findings) {
    const key = JSON.stringify([ruleId, severity, pointer, message]);
    // One key order in every finding, whichever rule produced it.
    const seen = unique.get(key);
    if (seen) seen.engines = [...new Set([...seen.engines, ...engines])].sort();
    else unique.set(key, { ruleId, severity, message, pointer, ...(docsUrl ? { docsUrl } : {}), engines });
  }
  const sorted = [...unique.values()].sort(compareFindings);
  const summary = { errors: 0, warnings: 0, info: 0 };
  for (const finding of sorted) {
    if (finding.severity === "error") summary.errors++;
    else if (finding.severity === "warning") summary.warnings++;
    else summary.info++;
  }
  return {
    openapiVersion: openapi,
    auditedAs: auditedAs ?? (openapi.startsWith("3.0") ? "3.0" : "3.1"),
    valid: summary.errors === 0,
    summary,
    findings: sorted.slice(0, maxFindings),
    truncated: sorted.length > maxFindings,
  };
}

/** The contract of a job: parsed before payment, or parsed here (a large text contract). */
function contractOf(job: AuditJob): { document: ContractDocument; openapi: string } {
  if (job.document) return { document: job.document, openapi: job.openapi };
  const parsed = parseContract(job.text, { inWorker: true });
  if (!parsed.ok) throw new ContractRefused(parsed.issues.map((issue) => issue.message).join("; "));
  return { document: parsed.contract.document, openapi: parsed.contract.openapi };
}

export type Engine = "redocly" | "spectral";

/**
 * One audit, in the calling thread: Redocly's and Spectral's OpenAPI rules with every external reference
 * refused, then the agent rules; the engines' findings merged. `engines` chooses engines (benchmarks).
 */
export async function auditDocument(
  job: AuditJob,
  engines: readonly Engine[] = ["redocly", "spectral"],
): Promise<OpenApiAuditOutput> {
  const { document: original, openapi } = contractOf(job);
  const strict = job.ruleset === "strict";
  const cycles = findRefCycles(original);
  const document = cycles.length > 0 ? withoutCycles(original, cycles) : original;
  const source = contractRef();
  const findings: EngineFinding[] = [];
  const contractFinding = (
    ruleId: keyof typeof CONTRACT_RULES,
    severity: Severity,
    message: string,
    pointer = "",
  ) => findings.push({ ruleId, severity, message, pointer, engine: `openapi-audit:${ruleId}` });

  if (engines.includes("redocly")) {
    const config = await redoclyConfig(job.ruleset);
    // Redocly aborts the whole lint on some contracts (a self-referencing pointer the cycle scan
    // cannot see): report that as a finding rather than failing the audit.
    let aborted: string | undefined;
    const problems = await lintDocument({
      document: { source: new Source(source, ""), parsed: document },
      config,
      externalRefResolver: new RefusingResolver(),
    }).catch((error: Error) => {
      aborted = error.message.split("\n")[0];
      return [];
    });
    findings.push(...problems.filter((problem) => !problem.ignored).map(fromRedocly));
    if (aborted !== undefined) {
      contractFinding(
        "lint-aborted",
        "error",
        `the linter stopped on this contract (${aborted}); only the agent rules ran`,
      );
    }
  }
  if (engines.includes("spectral")) {
    try {
      for (const finding of await spectralFindings(document, source)) {
        // recommended-strict makes every Redocly warning an error; strict does the same to Spectral's.
        findings.push(strict && finding.severity === "warning" ? { ...finding, severity: "error" } : finding);
      }
    } catch (error) {
      const reason = ((error as Error).message ?? String(error)).split("\n")[0];
      contractFinding(
        "spectral-aborted",
        "warning",
        `Spectral stopped on this contract (${reason}); Redocly's and the agent rules' findings stand`,
      );
    }
  }
  for (const cycle of cycles) {
    const chain = [...cycle.refs, cycle.refs[0]].join(" → ");
    for (const pointer of cycle.pointers) {
      contractFinding("no-ref-cycles", "error", `circular $ref: ${chain} never reaches a value`, pointer);
    }
  }
  for (const finding of agentFindings(original)) {
    findings.push({
      ruleId: finding.ruleId,
      message: finding.message,
      pointer: finding.pointer,
      severity: finding.severity ?? (strict ? "error" : AGENT_RULES[finding.ruleId].recommended),
      engine: `openapi-audit:${finding.ruleId}`,
    });
  }
  for (const { pointer, pattern } of unevaluablePatterns(original)) {
    contractFinding(
      "pattern-not-evaluated",
      "info",
      `pattern ${JSON.stringify(pattern.length > 80 ? `${pattern.slice(0, 80)}…` : pattern)} uses what cannot be ` +
        "run in linear time (a lookahead or a backreference): examples were not checked against it",
      pointer,
    );
  }
  const v32 = openapi.startsWith("3.2");
  if (v32) {
    contractFinding(
      "openapi-3.2-audited-as-3.1",
      "info",
      `OpenAPI ${openapi} is audited with the 3.1 rule set: Redocly and Spectral read 3.2's structure (the query ` +
        "method, tag parent and kind, itemSchema) and apply the rules they apply to 3.1; the agent rules are 3.1's " +
        "(plus the query method); no rule specific to 3.2 is checked",
      "/openapi",
    );
  }
  // A $ref inside example data, a default or an extension is text: no engine's reference finding there stands.
  const kept = findings.filter((f) => !(REF_RULES.has(f.ruleId) && insideLiteralData(f.pointer)));
  return summarize(
    mergeFindings(collapseEnumFindings(kept, original)),
    openapi,
    job.maxFindings,
    v32 ? "3.1" : undefined,
  );
}
