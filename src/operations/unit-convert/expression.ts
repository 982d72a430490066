import { Rational } from "./rational.ts";
import { type Domain, type Unit, type UnitTable, unitKey } from "./units.ts";

/**
 * Compound unit expressions (`kg/m^3`, `W/(m·K)`, `L/min`, `N·m`, `ft²`): products and quotients of the
 * table's units, the time units below and SI-prefixed SI units, with integer exponents, evaluated on the
 * same exact rationals as the table with a dimension vector (L, M, T, Θ) to check that both sides measure
 * the same thing.
 *
 * Grammar (ISO 80000-1 and the SI Brochure: at most one solidus, and what follows it is one factor or a
 * parenthesised group, so `W/m·K` is refused rather than guessed):
 *   expression := product [ "/" factor ]
 *   product    := factor { separator factor }      separator: · * × ⋅ • ∙ space, or - between names
 *   factor     := ( name | "(" expression ")" ) [ exponent ]
 *   exponent   := "^" or "**" with an optional sign and digits; digits right after a name (m2, m−1); ² ³ ⁻¹ …
 * Bounded work: the text is at most 64 characters (the request schema), at most 8 units, exponents within
 * ±9, parentheses nested at most 2 deep; the scanner reads each character once (no backtracking regex).
 */

export const MAX_EXPRESSION_UNITS = 8;
export const MAX_EXPONENT = 9;
export const MAX_PAREN_DEPTH = 2;

/** Exponents of length, mass, time and temperature (ISO 80000 order). */
export type Dimension = readonly [number, number, number, number];
const SYMBOLS = ["L", "M", "T", "Θ"] as const;

export function formatDimension(dimension: Dimension): string {
  const parts = dimension
    .map((power, index) => (power === 0 ? "" : power === 1 ? SYMBOLS[index] : `${SYMBOLS[index]}^${power}`))
    .filter((part) => part !== "");
  return parts.length > 0 ? parts.join("·") : "1";
}

export function parseDimension(text: string): Dimension {
  const dimension = [0, 0, 0, 0];
  for (const part of text.split("·")) {
    const [symbol, power = "1"] = part.split("^");
    const index = SYMBOLS.indexOf(symbol as (typeof SYMBOLS)[number]);
    if (index < 0) throw new Error(`unknown dimension symbol in ${text}`);
    dimension[index] = Number(power);
  }
  return dimension as unknown as Dimension;
}

export const sameDimension = (a: Dimension, b: Dimension) => a.every((power, index) => power === b[index]);

/** A unit expression evaluated: SI value = scale × value (no offset: temperatures in it are differences). */
export interface Expression {
  /** The expression written with canonical ids: `kg/m^3`, `W/(m·K)`, `BTU_IT/(h·ft·delta_degF)`. */
  text: string;
  scale: Rational;
  dimension: Dimension;
}

/** Units that only occur in expressions (the table's 92 units have no time unit), and `Nm` for N·m. */
const TIME_UNITS: Record<string, { id: string; seconds: bigint }> = {
  s: { id: "s", seconds: 1n },
  min: { id: "min", seconds: 60n },
  h: { id: "h", seconds: 3600n },
  hr: { id: "h", seconds: 3600n },
  d: { id: "d", seconds: 86400n },
};

/** SI prefixes (SI Brochure, 9th ed. and 2022), longest first where one begins another (da before d). */
const PREFIXES: readonly [string, Rational][] = (
  [
    ["Q", 30],
    ["R", 27],
    ["Y", 24],
    ["Z", 21],
    ["E", 18],
    ["P", 15],
    ["T", 12],
    ["G", 9],
    ["M", 6],
    ["k", 3],
    ["h", 2],
    ["da", 1],
    ["d", -1],
    ["c", -2],
    ["m", -3],
    ["µ", -6],
    ["u", -6],
    ["n", -9],
    ["p", -12],
    ["f", -15],
    ["a", -18],
    ["z", -21],
    ["y", -24],
    ["r", -27],
    ["q", -30],
  ] as const
).map(([symbol, power]) => [
  symbol,
  power >= 0 ? Rational.of(10n ** BigInt(power)) : Rational.of(1n, 10n ** BigInt(-power)),
]);

/** Units that take an SI prefix in an expression: the SI units of the table, the litre, the electronvolt, the second. */
const PREFIXABLE = ["m", "g", "s", "N", "Pa", "J", "W", "L", "eV", "K"];

const TIME_DIMENSION: Dimension = [0, 0, 1, 0];

export type ExpressionResult =
  | { kind: "expression"; expression: Expression }
  | { kind: "error"; message: string };

class ExpressionError extends Error {}

interface Term {
  text: string;
  scale: Rational;
  dimension: Dimension;
}

/** `m2` → ["m2", "m", "2"]; undefined without trailing digits or without a name before them. */
function trailingDigits(name: string): [string, string, string] | undefined {
  let cut = name.length;
  while (cut > 0 && isDigit(name[cut - 1])) cut--;
  if (cut === name.length || cut === 0) return undefined;
  return [name, name.slice(0, cut), name.slice(cut)];
}

const pow = (value: Rational, exponent: number) => {
  let result = Rational.ONE;
  for (let i = 0; i < Math.abs(exponent); i++) result = result.mul(value);
  return exponent < 0 ? Rational.ONE.div(result) : result;
};

const scaleDimension = (dimension: Dimension, exponent: number): Dimension =>
  dimension.map((power) => power * exponent) as unknown as Dimension;
const addDimensions = (a: Dimension, b: Dimension): Dimension =>
  a.map((power, index) => power + (b[index] as number)) as unknown as Dimension;

const SEPARATORS = new Set([" ", "·", "*", "×", "⋅", "•", "∙"]);
const isNameChar = (char: string) => /[\p{L}\p{N}_°µ]/u.test(char);
const isDigit = (char: string | undefined) => char !== undefined && char >= "0" && char <= "9";

/** Whether the text is written as an expression (an operator, a group, an exponent) rather than one name. */
export function looksCompound(text: string): boolean {
  const normal = text.normalize("NFKC").trim();
  return /[/()^·*×⋅•∙ ]/.test(normal) || /[\p{L}_°]-?[−-]?\d+$/u.test(normal);
}

export function parseExpression(
  text: string,
  table: UnitTable,
  describeUnknown: (token: string) => string,
  describeAmbiguous: (token: string) => string | undefined,
): ExpressionResult {
  const source = text.normalize("NFKC").trim();
  let position = 0;
  let units = 0;
  const fail = (message: string): never => {
    throw new ExpressionError(message);
  };
  const peek = () => source[position];
  const skipSpaces = () => {
    while (peek() === " ") position++;
  };

  const readExponent = (): number | undefined => {
    let start = position;
    if (source.startsWith("**", position)) position += 2;
    else if (peek() === "^") position++;
    else if (!(isDigit(peek()) || ((peek() === "-" || peek() === "−") && isDigit(source[position + 1])))) {
      return undefined;
    }
    start = position;
    if (peek() === "-" || peek() === "−" || peek() === "+") position++;
    const digitsFrom = position;
    while (isDigit(peek())) position++;
    if (position === digitsFrom) fail(`"${text}": an exponent must be an integer (m^2, s^-1)`);
    const exponent = Number(source.slice(start, position).replace("−", "-"));
    if (exponent === 0 || Math.abs(exponent) > MAX_EXPONENT) {
      fail(`"${text}": an exponent must be a non-zero integer from -${MAX_EXPONENT} to ${MAX_EXPONENT}`);
    }
    return exponent;
  };

  /** A name as one unit: `Nm`, a time unit, a table unit, or an SI prefix on a prefixable unit. */
  const resolveWhole = (name: string): Term | undefined => {
    if (name === "Nm") return { text: "N·m", scale: Rational.ONE, dimension: [2, 1, -2, 0] };
    const time = TIME_UNITS[name];
    if (time) return { text: time.id, scale: Rational.of(time.seconds), dimension: TIME_DIMENSION };
    const resolution = table.resolve(name);
    if (resolution.kind === "unit") return termOf(resolution.unit);
    if (resolution.kind === "ambiguous") return undefined;
    for (const [prefix, factor] of PREFIXES) {
      const base = name.slice(prefix.length);
      if (!name.startsWith(prefix) || !PREFIXABLE.includes(base)) continue;
      const unit = base === "s" ? undefined : table.resolve(base);
      const term =
        base === "s"
          ? { text: "s", scale: Rational.ONE, dimension: TIME_DIMENSION }
          : unit?.kind === "unit"
            ? termOf(unit.unit)
            : undefined;
      if (term) return { text: name, scale: factor.mul(term.scale), dimension: term.dimension };
    }
    return undefined;
  };

  const unresolved = (name: string): never => {
    const ambiguous = describeAmbiguous(name);
    if (ambiguous) return fail(`"${name}" in "${text}" is ambiguous; ${ambiguous}`);
    return fail(`unknown unit "${name}" in "${text}"; ${describeUnknown(name)}`);
  };

  const readName = (): string => {
    const start = position;
    while (position < source.length && isNameChar(source[position] as string)) position++;
    return source.slice(start, position);
  };

  const withExponent = (term: Term, exponent: number): Term =>
    exponent === 1
      ? term
      : {
          text: `${term.text}^${exponent}`,
          scale: pow(term.scale, exponent),
          dimension: scaleDimension(term.dimension, exponent),
        };

  const factor = (depth: number): Term => {
    skipSpaces();
    let term: Term;
    let implicit: number | undefined;
    if (peek() === "(") {
      if (depth >= MAX_PAREN_DEPTH)
        fail(`"${text}": parentheses may be nested at most ${MAX_PAREN_DEPTH} deep`);
      position++;
      const inner = expression(depth + 1);
      skipSpaces();
      if (peek() !== ")") fail(`"${text}": a "(" is not closed`);
      position++;
      term = {
        ...inner,
        text: inner.text.includes("·") || inner.text.includes("/") ? `(${inner.text})` : inner.text,
      };
    } else {
      const name = readName();
      if (name === "") {
        fail(
          peek() === undefined
            ? `"${text}": a unit is missing at the end`
            : `"${text}": unexpected "${peek()}" at position ${position + 1}`,
        );
      }
      if (/^\d+$/.test(name)) fail(`"${text}": numbers are not units (write the factor into the value)`);
      units++;
      if (units > MAX_EXPRESSION_UNITS) fail(`"${text}": an expression may combine at most 8 units`);
      const whole = resolveWhole(name);
      if (whole) term = whole;
      else {
        // Digits that end a name are its exponent (m2, ft3 when not a unit of its own).
        const split = trailingDigits(name);
        const base = split ? resolveWhole(split[1] as string) : undefined;
        if (!split || !base)
          return unresolved(split && !describeAmbiguous(name) ? (split[1] as string) : name);
        term = base;
        implicit = Number(split[2]);
        if (implicit === 0 || implicit > MAX_EXPONENT) {
          fail(`"${text}": an exponent must be a non-zero integer from -${MAX_EXPONENT} to ${MAX_EXPONENT}`);
        }
      }
    }
    const exponent = readExponent();
    if (implicit !== undefined && exponent !== undefined) fail(`"${text}": two exponents on one unit`);
    return withExponent(term, implicit ?? exponent ?? 1);
  };

  const product = (depth: number): Term => {
    let result = factor(depth);
    const parts = [result.text];
    for (;;) {
      const start = position;
      let separated = false;
      while (SEPARATORS.has(peek() as string) || peek() === "-") {
        separated = true;
        position++;
      }
      const next = peek();
      if (!separated || next === undefined || next === ")" || next === "/") {
        position = separated && (next === undefined || next === ")" || next === "/") ? position : start;
        break;
      }
      const term = factor(depth);
      parts.push(term.text);
      result = {
        text: "",
        scale: result.scale.mul(term.scale),
        dimension: addDimensions(result.dimension, term.dimension),
      };
    }
    return { ...result, text: parts.join("·") };
  };

  const expression = (depth: number): Term => {
    skipSpaces();
    const start = position;
    let numerator: Term;
    if (
      peek() === "1" &&
      !isDigit(source[position + 1]) &&
      source
        .slice(position + 1)
        .trimStart()
        .startsWith("/")
    ) {
      position++;
      numerator = { text: "1", scale: Rational.ONE, dimension: [0, 0, 0, 0] };
    } else {
      numerator = product(depth);
    }
    skipSpaces();
    if (peek() !== "/") return numerator;
    const slash = position;
    position++;
    const denominator = factor(depth);
    const denominatorEnd = position;
    skipSpaces();
    const rest = peek();
    if (rest === "/") fail(`"${text}": more than one / is ambiguous; write m/s^2 or W/(m·K)`);
    if (rest !== undefined && rest !== ")") {
      const before = source.slice(start, slash).trim();
      const under = source.slice(slash + 1, denominatorEnd).trim();
      let tail = position;
      while (SEPARATORS.has(source[tail] as string) || source[tail] === "-") tail++;
      let close = tail;
      let open = 0;
      while (close < source.length && !(source[close] === ")" && open === 0)) {
        if (source[close] === "(") open++;
        if (source[close] === ")") open--;
        close++;
      }
      const after = source.slice(tail, close).trim();
      fail(
        `"${text}" is ambiguous: after a / only one unit or a group in parentheses may follow ` +
          `(ISO 80000-1); write ${before}/(${under}·${after}) or ${before}·${after}/${under}`,
      );
    }
    const under =
      denominator.text.includes("·") && !denominator.text.startsWith("(")
        ? `(${denominator.text})`
        : denominator.text;
    return {
      text: `${numerator.text}/${under}`,
      scale: numerator.scale.div(denominator.scale),
      dimension: addDimensions(numerator.dimension, scaleDimension(denominator.dimension, -1)),
    };
  };

  try {
    if (unitKey(source) === "") throw new ExpressionError("empty unit");
    const result = expression(0);
    skipSpaces();
    if (position < source.length) {
      fail(
        peek() === ")"
          ? `"${text}": a ")" has no "("`
          : `"${text}": unexpected "${peek()}" at position ${position + 1}`,
      );
    }
    return { kind: "expression", expression: { ...result } };
  } catch (error) {
    if (error instanceof ExpressionError) return { kind: "error", message: error.message };
    throw error;
  }
}

const DELTA_OF: Record<string, string> = { degC: "delta_degC", degF: "delta_degF", degR: "delta_degF" };

/**
 * A table unit as a factor of an expression: a temperature there is a difference (its scale, no offset; degR
 * is then written delta_degF, the same size); cubic units are written with their exponent (m^3).
 */
function termOf(unit: Unit): Term {
  const text = DELTA_OF[unit.id] ?? unit.id.replace(/^(m|cm|in|ft|yd)3$/, "$1^3");
  return { text, scale: unit.scale, dimension: parseDimension(unit.domain.dimension) };
}

export const dimensionOf = (domain: Domain) => parseDimension(domain.dimension);
