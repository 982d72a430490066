import { formatExact, Rational, roundSignificant, toRoundedNumber } from "./rational.ts";
import { type AmbiguousName, type DomainId, UNITS, type Unit, type UnitTable } from "./units.ts";

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
  domain: DomainId;
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

/** Why two resolved units do not convert into each other, or undefined when they do. */
export function incompatibility(from: Unit, to: Unit): string | undefined {
  if (from.quantity === to.quantity) return undefined;
  const quantities = new Set([from.quantity, to.quantity]);
  if (quantities.has("absolute temperature") && quantities.has("temperature interval")) {
    return (
      `cannot convert ${describe(from)} to ${describe(to)}: one is a temperature, the other a temperature ` +
      "difference (dimension Θ for both). A temperature converts with an offset (degC → degF), a difference " +
      "without (delta_degC → delta_degF); convert absolute scales among K, degC, degF, degR and differences " +
      "between delta_degC and delta_degF"
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

/**
 * Everything that makes a conversion impossible, by field: unknown and ambiguous units,
 * incompatible quantities, and a result beyond the largest JSON number. The request schema
 * reports these as 400s before any payment is asked for.
 */
export function conversionIssues(conversion: Conversion, table: UnitTable = UNITS): ConversionIssue[] {
  const from = table.resolve(conversion.from);
  const to = table.resolve(conversion.to);
  const fromUnit = from.kind === "unit" ? from.unit : undefined;
  const toUnit = to.kind === "unit" ? to.unit : undefined;
  const issues: ConversionIssue[] = [];
  for (const [field, resolution, other] of [
    ["from", from, toUnit],
    ["to", to, fromUnit],
  ] as const) {
    if (resolution.kind === "ambiguous") {
      issues.push({ field, message: ambiguousMessage(resolution.text, resolution.entry, other) });
    } else if (resolution.kind === "unknown") {
      issues.push({ field, message: unknownMessage(resolution.text, resolution.suggestions) });
    }
  }
  if (!fromUnit || !toUnit) return issues;
  const mismatch = incompatibility(fromUnit, toUnit);
  if (mismatch) return [{ field: "to", message: mismatch }];
  const value = Rational.fromNumber(conversion.value);
  // An absolute temperature below 0 K does not exist; differences (delta_*) may be negative.
  if (
    fromUnit.quantity === "absolute temperature" &&
    fromUnit.scale.mul(value).add(fromUnit.offset).sign() < 0
  ) {
    return [{ field: "value", message: `${conversion.value} ${fromUnit.id} is below absolute zero` }];
  }
  const exact = convertExact(value, fromUnit, toUnit);
  if (exact.abs().compare(MAX_DOUBLE) > 0) {
    const { mantissa, exponent } = roundSignificant(exact.abs(), 3);
    const digits = mantissa.toString();
    return [
      {
        field: "value",
        message:
          `the result, about ${exact.sign() < 0 ? "-" : ""}${digits[0]}.${digits.slice(1)}e+${exponent + 2} ` +
          `${toUnit.id}, is beyond the largest JSON number (1.7976931348623157e+308)`,
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

/** Converts one validated conversion; `from` and `to` are answered with the canonical unit ids. */
export function convert(conversion: Conversion, table: UnitTable = UNITS): ConversionResult {
  const from = table.resolve(conversion.from);
  const to = table.resolve(conversion.to);
  if (from.kind !== "unit" || to.kind !== "unit" || incompatibility(from.unit, to.unit)) {
    throw new Error(`conversion ${JSON.stringify(conversion)} was not validated`);
  }
  const exact = convertExact(Rational.fromNumber(conversion.value), from.unit, to.unit);
  return {
    value: conversion.value,
    from: from.unit.id,
    to: to.unit.id,
    result: resultNumber(exact),
    resultExact: formatExact(exact),
    domain: from.unit.domain.id,
    dimension: from.unit.domain.dimension,
  };
}
