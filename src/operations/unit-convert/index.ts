import { defineFreeRoute, defineOperation } from "../../contract/operation.ts";
import { conversionIssues, convert } from "./convert.ts";
import { formatExact, toRoundedNumber } from "./rational.ts";
import {
  type UnitConvertInput,
  type UnitConvertOutput,
  UnitConvertRequest,
  UnitConvertResponse,
  type UnitListOutput,
  UnitListResponse,
} from "./schema.ts";
import { UNITS, type UnitTable } from "./units.ts";

/** A single conversion, or a batch answered item by item (each failed item with its errors and pointers). */
export function convertRequest(input: UnitConvertInput): UnitConvertOutput {
  if ("value" in input) return convert(input);
  let failed = 0;
  const results = (input.conversions ?? []).map((conversion, index) => {
    const issues = conversionIssues(conversion);
    if (issues.length === 0) return convert(conversion);
    failed++;
    return {
      ...conversion,
      errors: issues.map((issue) => ({
        pointer: `/conversions/${index}/${issue.field}`,
        message: issue.message,
      })),
    };
  });
  return { results, converted: results.length - failed, failed };
}

const exampleInput = { value: 100, from: "psi", to: "kPa" };

/** The JSON values a request may hold (objects, arrays, members): a batch of MAX_CONVERSIONS is ~410. */
export const MAX_BODY_VALUES = 1_000;

export const unitConvert = defineOperation({
  id: "unit-convert",
  method: "POST",
  path: "/v1/unit-convert",
  priceUsd: "0.01",
  kind: "sync",
  summary: "Exact engineering unit conversion (92 units, 8 domains)",
  description:
    "Converts a value, or a batch of up to 100 under `conversions`, between 92 engineering units in eight " +
    "domains (length, mass, force, pressure, energy, power, temperature, volume) with exact rational " +
    "factors (NIST SP 811, SI Brochure). Temperatures are affine (degC, degF, degR, K); differences use " +
    "delta_degC and delta_degF. `result` is rounded to 15 significant digits; `resultExact` is exact: a " +
    "terminating decimal, a repeating one with the repetend in parentheses (`0.1(6)`), or the fraction " +
    "`p/q` when the repetend exceeds 100 digits. Compound expressions of these units, SI prefixes and s, min, h " +
    "convert with dimensional analysis (`kg/m^3`, `m/s`, `ft²`, `N·m`, `W/(m·K)`, `L/min`). Unknown, ambiguous " +
    "(BTU, ton, therm, gallon, …), gauge (psig, barg) and incompatible units are 400s that list the choices, " +
    "never charged; in a batch each failing item gets its errors and the batch is charged once if any item " +
    "converted. GET /v1/units (free) lists the units.",
  tags: ["engineering"],
  inputFrom: "body",
  // Counted before parsing: a full batch is about 410 values, and a 1 MiB body of 60,000 unknown keys cost
  // ~180 ms of the main thread's schema check before its 400.
  json: { maxValues: MAX_BODY_VALUES },
  input: UnitConvertRequest,
  output: UnitConvertResponse,
  outputContentType: "application/json",
  example: { input: exampleInput, output: convert(exampleInput) },
  errorResponses: [],
  handler: async (input) => ({ body: convertRequest(input) }),
});

export function unitList(table: UnitTable = UNITS): UnitListOutput {
  return {
    count: table.units.length,
    domains: table.domains.map((domain) => ({
      ...domain,
      units: table.units.filter((unit) => unit.domain === domain).length,
    })),
    units: table.units.map((unit) => ({
      id: unit.id,
      name: unit.name,
      domain: unit.domain.id,
      quantity: unit.quantity as UnitListOutput["units"][number]["quantity"],
      dimension: unit.domain.dimension,
      si: unit.domain.si,
      symbol: unit.symbol,
      aliases: [...unit.aliases],
      names: [...unit.names],
      factor: unit.scale.toFractionString(),
      offset: unit.offset.toFractionString(),
      factorExact: formatExact(unit.scale),
      offsetExact: formatExact(unit.offset),
      factorRounded: toRoundedNumber(unit.scale),
    })),
    ambiguous: table.ambiguous.map((entry) => ({
      terms: [...entry.terms],
      names: [...entry.names],
      choices: entry.choices.map((unit) => unit.id),
      ...(entry.notOffered ? { notOffered: entry.notOffered } : {}),
    })),
  };
}

/** Built once: the table does not change while the service runs. */
const UNIT_LIST = unitList();

export const unitListRoute = defineFreeRoute({
  id: "list-units",
  path: "/v1/units",
  summary: "List the units unit-convert accepts (free)",
  description:
    "Every unit of POST /v1/unit-convert with its domain, quantity, dimension, symbol, aliases, names and " +
    "exact factor to SI (SI value = factor × value + offset), and the ambiguous names that are refused " +
    "with their precise choices. Read it before paying for a conversion.",
  tags: ["engineering"],
  output: UnitListResponse,
  handler: () => UNIT_LIST,
});
