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
import { type ContractDocument, isPlainObject } from "./contract.ts";
import { childPointer, fragmentTokens, pointerTokens } from "./pointer.ts";
import type { Finding, OpenApiAuditOutput, Ruleset, Severity } from "./schema.ts";

/** What one audit needs; plain data, so it crosses into a worker thread by structured clone. */
export interface AuditJob {
  document: ContractDocument;
  /** The contract's `openapi` field as sent, e.g. "3.1.0". */
  openapi: string;
  ruleset: Ruleset;
  maxFindings: number;
}

/** Rules of this service beyond Redocly's and the agent rules: an error in both rulesets. */
export const CONTRACT_RULES = {
  "no-external-refs":
    "an external $ref (URL or file) was not fetched: the audit reads only the contract it is sent",
  "no-ref-cycles": "a $ref chain leads back to itself and never reaches a value",
  "lint-aborted": "the linter could not finish on this contract; only the agent rules were applied",
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

function fromRedocly(problem: NormalizedProblem): Finding {
  const pointer = toJsonPointer(problem.location[0]?.pointer);
  const refused = problem.ruleId === "no-unresolved-refs" ? REFUSED.exec(problem.message) : null;
  if (refused) {
    return {
      ruleId: "no-external-refs",
      severity: "error",
      message:
        `external $ref "${refused[1]}" was not fetched: this audit reads only the contract it is sent ` +
        "(never a URL or a file); bundle the contract into one document (e.g. redocly bundle) to audit what it references",
      pointer,
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

/** Sorts, de-duplicates, counts and truncates: the response body. */
export function summarize(findings: Finding[], openapi: string, maxFindings: number): OpenApiAuditOutput {
  const unique = new Map<string, Finding>();
  for (const { ruleId, severity, message, pointer, docsUrl } of findings) {
    const key = JSON.stringify([ruleId, severity, pointer, message]);
    // One key order in every finding, whichever rule produced it.
    if (!unique.has(key))
      unique.set(key, { ruleId, severity, message, pointer, ...(docsUrl ? { docsUrl } : {}) });
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
    valid: summary.errors === 0,
    summary,
    findings: sorted.slice(0, maxFindings),
    truncated: sorted.length > maxFindings,
  };
}

/** One audit, in the calling thread: Redocly's rules with every external reference refused, then the agent rules. */
export async function auditDocument(job: AuditJob): Promise<OpenApiAuditOutput> {
  const config = await redoclyConfig(job.ruleset);
  const cycles = findRefCycles(job.document);
  const document = cycles.length > 0 ? withoutCycles(job.document, cycles) : job.document;
  // Redocly aborts the whole lint on some contracts (a self-referencing pointer the cycle scan
  // cannot see): report that as a finding rather than failing the audit.
  let aborted: string | undefined;
  const problems = await lintDocument({
    document: { source: new Source(contractRef(), ""), parsed: document },
    config,
    externalRefResolver: new RefusingResolver(),
  }).catch((error: Error) => {
    aborted = error.message.split("\n")[0];
    return [];
  });
  const findings: Finding[] = problems.filter((problem) => !problem.ignored).map(fromRedocly);
  if (aborted !== undefined) {
    findings.push({
      ruleId: "lint-aborted",
      severity: "error",
      message: `the linter stopped on this contract (${aborted}); only the agent rules ran`,
      pointer: "",
    });
  }
  for (const cycle of cycles) {
    const chain = [...cycle.refs, cycle.refs[0]].join(" → ");
    for (const pointer of cycle.pointers) {
      findings.push({
        ruleId: "no-ref-cycles",
        severity: "error",
        message: `circular $ref: ${chain} never reaches a value`,
        pointer,
      });
    }
  }
  for (const finding of agentFindings(job.document)) {
    findings.push({
      ...finding,
      severity: job.ruleset === "strict" ? "error" : AGENT_RULES[finding.ruleId].recommended,
    });
  }
  return summarize(findings, job.openapi, job.maxFindings);
}
