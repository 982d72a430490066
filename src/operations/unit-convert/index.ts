import { defineFreeRoute, defineOperation } from "../../catalog/operation.ts";
import { convert } from "./convert.ts";
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

export function convertRequest(input: UnitConvertInput): UnitConvertOutput {
  if ("value" in input) return convert(input);
  return { results: (input.conversions ?? []).map((conversion) => convert(conversion)) };
}

const exampleInput = { value: 100, from: "psi", to: "kPa" };

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
    "`p/q` when the repetend exceeds 100 digits. Unknown, ambiguous (BTU, ton, therm, gallon, …) and " +
    "incompatible units are 400s that list the choices, never charged. GET /v1/units (free) lists the units.",
  tags: ["engineering"],
  inputFrom: "body",
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
