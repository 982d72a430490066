import {
  type Dimension,
  dimensionOf,
  type Expression,
  formatDimension,
  parseExpression,
  sameDimension,
} from "./expression.ts";
import { formatExact, Rational, roundSignificant, toRoundedNumber } from "./rational.ts";
import {
  type AmbiguousName,
  type DomainId,
  nameKey,
  UNITS,
  type Unit,
  type UnitTable,
  unitKey,
} from "./units.ts";

/** `result` carries this many significant digits (every 15-digit decimal survives a double round trip). */
export const RESULT_DIGITS = 15;

export interface Conversion {
  value: number;
  from: string;
  to: string;
}

export interface ConversionResult {
  value: number;
  from: string;
  to: string;
  result: number;
  resultExact: string;
  /** The domain of that dimension, or null for a compound of none of the eight (kg/m^3). */
  domain: DomainId | null;
  dimension: string;
}

export interface ConversionIssue {
  field: "value" | "from" | "to";
  message: string;
}

/** to-value = (from.scale × value + from.offset − to.offset) / to.scale, exactly. */
export function convertExact(value: Rational, from: Unit, to: Unit): Rational {
  return from.scale.mul(value).add(from.offset).sub(to.offset).div(to.scale);
}

const describe = (unit: Unit) => `${unit.id} (${unit.name})`;

function describeChoice(unit: Unit): string {
  if (unit.quantity !== unit.domain.id) return `${unit.id} (${unit.name})`;
  return `${unit.id} (${unit.name}, 1 ${unit.id} = ${formatExact(unit.scale)} ${unit.domain.si})`;
}

function ambiguousMessage(text: string, entry: AmbiguousName, other: Unit | undefined): string {
  const compatible = other ? entry.choices.filter((unit) => unit.quantity === other.quantity) : [];
  const choices = compatible.length > 0 ? compatible : entry.choices;
  const list = choices.map(describeChoice).join("; ");
  const notOffered = entry.notOffered ? `. Not offered here: ${entry.notOffered}` : "";
  return choices.length === 1
    ? `"${text}" is ambiguous; the one this service offers is ${list}: name it by its id${notOffered}`
    : `"${text}" is ambiguous; name one of: ${list}${notOffered}`;
}

function unknownMessage(text: string, suggestions: readonly Unit[]): string {
  const matches =
    suggestions.length > 0 ? `close matches: ${suggestions.map(describe).join(", ")}` : "no close match";
  return `unknown unit "${text}"; ${matches}. GET /v1/units lists every unit with its aliases`;
}

/**
 * An absolute scale whose zero is absolute zero (K, degR) measures a value from absolute zero, which is a
 * temperature difference too: 5 K is a difference of 5 K = 5 delta_degC. Celsius and Fahrenheit readings are not.
 */
const zeroBased = (unit: Unit) => unit.quantity === "absolute temperature" && unit.offset.isZero();

/** Why two resolved units do not convert into each other, or undefined when they do. */
export function incompatibility(from: Unit, to: Unit): string | undefined {
  if (from.quantity === to.quantity) return undefined;
  const quantities = new Set([from.quantity, to.quantity]);
  if (quantities.has("absolute temperature") && quantities.has("temperature interval")) {
    if (zeroBased(from) || zeroBased(to)) return undefined;
    return (
      `cannot convert ${describe(from)} to ${describe(to)}: one is a temperature, the other a temperature ` +
      "difference (dimension Θ for both). A temperature converts with an offset (degC → degF), a difference " +
      "without (delta_degC → delta_degF); convert absolute scales among K, degC, degF, degR and differences " +
      "among delta_degC, delta_degF, K and degR (a kelvin or Rankine value is also a difference from absolute zero)"
    );
  }
  const hint = HINTS.find(([a, b]) => quantities.has(a) && quantities.has(b))?.[2];
  return (
    `cannot convert ${describe(from)} to ${describe(to)}: ${from.id} measures ${from.quantity} ` +
    `(dimension ${from.domain.dimension}), ${to.id} measures ${to.quantity} (dimension ${to.domain.dimension})` +
    (hint ? `; ${hint}` : "")
  );
}

const HINTS: readonly [string, string, string][] = [
  ["mass", "force", "kgf, lbf and ozf are the force units named after kg, lb and oz"],
  ["mass", "volume", "that needs a density; fluid ounces are floz_US and floz_imp"],
  ["energy", "power", "energy is power × time (kWh is energy, kW is power)"],
  ["force", "pressure", "pressure is force per area (psi = lbf/in², ksi = kip/in²)"],
];

/** Number.MAX_VALUE exactly (BigInt of a double is exact). */
const MAX_DOUBLE = Rational.of(BigInt(Number.MAX_VALUE));

/** One side of a conversion as written: a unit of the table, or a compound expression. */
export type Side = { kind: "unit"; unit: Unit } | { kind: "expression"; expression: Expression };

type SideResolution =
  | Side
  | { kind: "ambiguous"; text: string; entry: AmbiguousName }
  | { kind: "error"; message: string };

/**
 * Gauge pressure (psig, barg, kPag, bar(g), psi g, bar gauge) is measured from the local atmospheric pressure,
 * which is not in the request: it is refused rather than read as absolute pressure.
 */
function gaugeMessage(text: string, table: UnitTable): string | undefined {
  const key = unitKey(text);
  const match = /^(.+?)(?:\(g\)|\[g\]|·g|·gauge|g)$/.exec(key);
  if (!match) return undefined;
  const base = table.resolve(match[1] as string);
  if (base.kind !== "unit" || base.unit.quantity !== "pressure") return undefined;
  const unit = base.unit;
  return (
    `"${text}" is a gauge pressure: ${unit.id} above the local atmospheric pressure, which the request does not ` +
    `give, so it has no absolute value. For a gauge reading in another unit convert the number as ${unit.id} ` +
    `(a pressure difference: the result is gauge too); for absolute pressure add the atmospheric pressure ` +
    `first (standard atmosphere: 1 atm = 101325 Pa = 14.6959487755134 psi) and convert from ${unit.id}`
  );
}

/** Resolutions are pure functions of the text: the latest ones are kept (agents repeat their units). */
const RESOLUTION_CACHE_SIZE = 512;
const resolutionCache = new WeakMap<UnitTable, Map<string, SideResolution>>();

/** Forgets the cached resolutions (benchmarks measure the uncached path with it). */
export function clearResolutionCache(table: UnitTable = UNITS): void {
  resolutionCache.delete(table);
}

function resolveSide(text: string, table: UnitTable): SideResolution {
  let cache = resolutionCache.get(table);
  if (!cache) {
    cache = new Map();
    resolutionCache.set(table, cache);
  }
  const cached = cache.get(text);
  if (cached) return cached;
  const resolution = resolveSideUncached(text, table);
  if (cache.size >= RESOLUTION_CACHE_SIZE) cache.delete(cache.keys().next().value as string);
  cache.set(text, resolution);
  return resolution;
}

function resolveSideUncached(text: string, table: UnitTable): SideResolution {
  const gauge = gaugeMessage(text, table);
  if (gauge) return { kind: "error", message: gauge };
  const resolution = table.resolve(text);
  if (resolution.kind === "unit") return { kind: "unit", unit: resolution.unit };
  if (resolution.kind === "ambiguous") return resolution;
  const parsed = parseExpression(
    text,
    table,
    (name) => matchesText(table.closeMatches(nameKey(name))),
    (name) => {
      const inner = table.resolve(name);
      return inner.kind === "ambiguous"
        ? ambiguousMessage(name, inner.entry, undefined).replace(/^"[^"]*" is ambiguous; /, "")
        : undefined;
    },
  );
  if (parsed.kind === "expression") return parsed;
  // One name the parser does not know either: the table's own message, with its close matches.
  if (parsed.message.startsWith(`unknown unit "${unitKey(text)}" in `) || parsed.message === "empty unit") {
    return { kind: "error", message: unknownMessage(text, resolution.suggestions) };
  }
  return { kind: "error", message: parsed.message };
}

const matchesText = (suggestions: readonly Unit[]) =>
  `${suggestions.length > 0 ? `close matches: ${suggestions.map(describe).join(", ")}` : "no close match"}. ` +
  "GET /v1/units lists every unit; expressions combine them with SI prefixes and s, min, h";

/** A side as a linear scale with a dimension; a Celsius or Fahrenheit reading has none (it has an offset). */
function linear(side: Side): { id: string; scale: Rational; dimension: Dimension } | string {
  if (side.kind === "expression") return { id: side.expression.text, ...side.expression };
  const unit = side.unit;
  if (unit.quantity === "absolute temperature" && !unit.offset.isZero()) {
    return (
      `${describe(unit)} is a temperature reading, with an offset; in a compound expression a temperature ` +
      `is a difference: use ${unit.id === "degC" ? "delta_degC or K" : "delta_degF or degR"}`
    );
  }
  return { id: unit.id, scale: unit.scale, dimension: dimensionOf(unit.domain) };
}

const sideId = (side: Side) => (side.kind === "unit" ? side.unit.id : side.expression.text);

/** The conversion of two resolved sides: the exact result, or why there is none. */
function plan(
  from: Side,
  to: Side,
  table: UnitTable,
): { convert: (value: Rational) => Rational; domain: DomainId | null; dimension: string } | string {
  if (from.kind === "unit" && to.kind === "unit") {
    const mismatch = incompatibility(from.unit, to.unit);
    if (mismatch) return mismatch;
    return {
      convert: (value) => convertExact(value, from.unit, to.unit),
      domain: from.unit.domain.id,
      dimension: from.unit.domain.dimension,
    };
  }
  // A prefixed kelvin (mK, µK) starts at absolute zero like K: a Celsius or Fahrenheit reading converts to it.
  const theta: Dimension = [0, 0, 0, 1];
  const offsetUnit = (side: Side) =>
    side.kind === "unit" && side.unit.quantity === "absolute temperature" && !side.unit.offset.isZero()
      ? side.unit
      : undefined;
  const kelvinLike = (side: Side) =>
    side.kind === "expression" && sameDimension(side.expression.dimension, theta)
      ? side.expression
      : undefined;
  const [reading, kelvins] = [offsetUnit(from), kelvinLike(to)];
  if (reading && kelvins) {
    return {
      convert: (value) => reading.scale.mul(value).add(reading.offset).div(kelvins.scale),
      domain: "temperature",
      dimension: "Θ",
    };
  }
  const [kelvinsFrom, readingTo] = [kelvinLike(from), offsetUnit(to)];
  if (kelvinsFrom && readingTo) {
    return {
      convert: (value) => kelvinsFrom.scale.mul(value).sub(readingTo.offset).div(readingTo.scale),
      domain: "temperature",
      dimension: "Θ",
    };
  }
  const [a, b] = [linear(from), linear(to)];
  if (typeof a === "string") return `cannot convert ${sideId(from)} to ${sideId(to)}: ${a}`;
  if (typeof b === "string") return `cannot convert ${sideId(from)} to ${sideId(to)}: ${b}`;
  if (!sameDimension(a.dimension, b.dimension)) {
    return (
      `cannot convert ${a.id} to ${b.id}: ${a.id} has dimension ${formatDimension(a.dimension)}, ` +
      `${b.id} has dimension ${formatDimension(b.dimension)}`
    );
  }
  const domain = table.domains.find((d) => sameDimension(dimensionOf(d), a.dimension))?.id ?? null;
  return {
    convert: (value) => value.mul(a.scale).div(b.scale),
    domain,
    dimension: formatDimension(a.dimension),
  };
}

/**
 * Everything that makes a conversion impossible, by field: gauge, unknown and ambiguous units, expressions
 * that cannot be read, incompatible quantities or dimensions, a temperature below absolute zero, and a
 * result beyond the largest JSON number. A single conversion's issues are 400s before any payment; a batch
 * answers them per item.
 */
export function conversionIssues(conversion: Conversion, table: UnitTable = UNITS): ConversionIssue[] {
  const from = resolveSide(conversion.from, table);
  const to = resolveSide(conversion.to, table);
  const unitOf = (side: SideResolution) => (side.kind === "unit" ? side.unit : undefined);
  const issues: ConversionIssue[] = [];
  for (const [field, resolution, other] of [
    ["from", from, unitOf(to)],
    ["to", to, unitOf(from)],
  ] as const) {
    if (resolution.kind === "ambiguous") {
      issues.push({ field, message: ambiguousMessage(resolution.text, resolution.entry, other) });
    } else if (resolution.kind === "error") {
      issues.push({ field, message: resolution.message });
    }
  }
  if (issues.length > 0 || (from.kind !== "unit" && from.kind !== "expression")) return issues;
  if (to.kind !== "unit" && to.kind !== "expression") return issues;
  const route = plan(from, to, table);
  if (typeof route === "string") return [{ field: "to", message: route }];
  const value = Rational.fromNumber(conversion.value);
  // An absolute temperature below 0 K does not exist; differences (delta_*, and K or degR read as one) may be negative.
  if (
    from.kind === "unit" &&
    to.kind === "unit" &&
    from.unit.quantity === "absolute temperature" &&
    to.unit.quantity === "absolute temperature" &&
    from.unit.scale.mul(value).add(from.unit.offset).sign() < 0
  ) {
    return [{ field: "value", message: `${conversion.value} ${from.unit.id} is below absolute zero` }];
  }
  const exact = route.convert(value);
  if (exact.abs().compare(MAX_DOUBLE) > 0) {
    const { mantissa, exponent } = roundSignificant(exact.abs(), 3);
    const digits = mantissa.toString();
    return [
      {
        field: "value",
        message:
          `the result, about ${exact.sign() < 0 ? "-" : ""}${digits[0]}.${digits.slice(1)}e+${exponent + 2} ` +
          `${sideId(to)}, is beyond the largest JSON number (1.7976931348623157e+308)`,
      },
    ];
  }
  return [];
}

/**
 * `result`: the exact value rounded to RESULT_DIGITS significant digits, then to the nearest double.
 * Within 5e-15 relative of Number.MAX_VALUE the 15-digit rounding itself overflows; the answer is
 * then ±Number.MAX_VALUE (the exact value is still in range). Below ~2.2e-308 the double is
 * subnormal and carries fewer digits; resultExact stays exact.
 */
export function resultNumber(exact: Rational): number {
  const rounded = toRoundedNumber(exact, RESULT_DIGITS);
  if (Number.isFinite(rounded)) return rounded;
  if (exact.abs().compare(MAX_DOUBLE) > 0) throw new RangeError("the result is beyond the largest double");
  return exact.sign() * Number.MAX_VALUE;
}

/** Converts one validated conversion; `from` and `to` are answered with canonical ids or expressions. */
export function convert(conversion: Conversion, table: UnitTable = UNITS): ConversionResult {
  const from = resolveSide(conversion.from, table);
  const to = resolveSide(conversion.to, table);
  const route =
    (from.kind === "unit" || from.kind === "expression") && (to.kind === "unit" || to.kind === "expression")
      ? plan(from, to, table)
      : undefined;
  if (!route || typeof route === "string") {
    throw new Error(`conversion ${JSON.stringify(conversion)} was not validated`);
  }
  const exact = route.convert(Rational.fromNumber(conversion.value));
  return {
    value: conversion.value,
    from: sideId(from as Side),
    to: sideId(to as Side),
    result: resultNumber(exact),
    resultExact: formatExact(exact),
    domain: route.domain,
    dimension: route.dimension,
  };
}
