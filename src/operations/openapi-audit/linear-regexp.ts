import { createRequire } from "node:module";
import { RE2JS } from "re2js";

/**
 * The contract's own regular expressions (a schema's `pattern`, `patternProperties`' names), as the
 * audit's engines test examples against them: in linear time, with RE2JS (the JavaScript port of
 * RE2), never with the backtracking engine of `RegExp`, where `^(a+)+$` against thirty "a"s and a
 * "!" takes minutes. A pattern RE2 cannot run (a lookahead, a backreference) is not evaluated: every
 * value passes it, and the audit says so (`unevaluablePatterns`).
 */
export interface LinearPattern {
  test(input: string): boolean;
  toString(): string;
  /** False when the pattern uses what RE2 cannot run in linear time: it is not checked. */
  readonly evaluated: boolean;
}

/** Compiled patterns of this thread (Redocly compiles a contract's schemas again for every audit). */
const compiledCache = new Map<string, RE2JS | undefined>();
const CACHE_LIMIT = 2_000;

/** RE2JS's translation of JavaScript syntax (\u escapes, (?<name>), [^]) and its compilation; undefined if it cannot. */
function compileLinear(source: string): RE2JS | undefined {
  if (compiledCache.has(source)) return compiledCache.get(source);
  let compiled: RE2JS | undefined;
  try {
    compiled = RE2JS.compile(RE2JS.translateRegExp(source), RE2JS.LOOKBEHINDS);
  } catch {
    compiled = undefined;
  }
  if (compiledCache.size >= CACHE_LIMIT) compiledCache.clear();
  compiledCache.set(source, compiled);
  return compiled;
}

/**
 * The engines' own patterns (Spectral's JSON Schema meta-schemas and rule options: `$id`, `$anchor`,
 * `$ref`, `x-` names), which they test on every value of their kind in the contract. Each is linear for
 * a backtracking engine too (no quantifier, or one after a `^`: one pass to fail), so they keep `RegExp`,
 * which is several times faster than RE2JS on short strings. Every other pattern, whoever wrote it,
 * runs in RE2JS.
 */
export const LINEAR_FOR_REGEXP = new Set([
  "[^#]",
  "^#",
  "^\\$",
  "^x-",
  "^[^#]+#",
  "^[^#]*#?$",
  "^[A-Za-z][A-Za-z0-9_-]*$",
  "^[A-Za-z_][-A-Za-z0-9._]*$",
]);

/** Whether the audit's engines evaluate this pattern (false: they accept every value). */
export const isEvaluated = (source: string) => compileLinear(source) !== undefined;

/**
 * A RegExp-like object for Ajv's `code.regExp` option: `new RegExp` still checks the syntax (a pattern
 * JavaScript refuses is refused as before, compiling a RegExp does not run it), RE2JS matches.
 */
export function linearRegExp(source: string, flags = ""): LinearPattern {
  const native = new RegExp(source, flags);
  if (LINEAR_FOR_REGEXP.has(source)) return Object.assign(native, { evaluated: true });
  const compiled = compileLinear(source);
  const text = `/${source}/${flags}`;
  if (!compiled) return { test: () => true, toString: () => `${text} (not evaluated)`, evaluated: false };
  return { test: (input) => compiled.test(input), toString: () => text, evaluated: true };
}
// Ajv's standalone code names the function it calls by `code`; the audit never generates standalone code.
linearRegExp.code = "linearRegExp";

interface AjvPatternModule {
  usePattern: (cxt: { it: { opts: { code: { regExp: unknown } } } }, pattern: string) => unknown;
}

/** The Ajv copies the engines compile schemas with: Spectral's (ajv) and Redocly's fork (@redocly/ajv). */
const AJV_OF_ENGINES = [
  ["@stoplight/spectral-functions", "ajv/dist/vocabularies/code.js"],
  ["@redocly/openapi-core", "@redocly/ajv/dist/vocabularies/code.js"],
] as const;

let installed = false;

/**
 * Makes every Ajv instance of both engines test `pattern` and `patternProperties` with `linearRegExp`,
 * in this thread. The engines build their Ajv instances themselves, with no way to pass options, so
 * the option is set where Ajv reads it: each instance's `opts.code.regExp`, set (as if it had been
 * given to the constructor) when the instance first compiles a pattern, by Ajv's `usePattern` (the
 * one place its `pattern` and `patternProperties` keywords build a regular expression). Throws if
 * Ajv no longer has that function (an upgrade must not silently bring backtracking back).
 */
export function useLinearPatternsInEngines(): void {
  if (installed) return;
  const require = createRequire(import.meta.url);
  for (const [engine, module] of AJV_OF_ENGINES) {
    const code = createRequire(require.resolve(engine))(module) as AjvPatternModule;
    const usePattern = code.usePattern;
    if (typeof usePattern !== "function") {
      throw new Error(
        `${module} (used by ${engine}) has no usePattern: the linear regular expressions cannot be installed`,
      );
    }
    code.usePattern = (cxt, pattern) => {
      cxt.it.opts.code.regExp = linearRegExp;
      return usePattern(cxt, pattern);
    };
  }
  installed = true;
}
