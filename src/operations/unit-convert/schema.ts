import { z } from "zod";
import { conversionIssues } from "./convert.ts";
import { DOMAIN_IDS } from "./units.ts";

export const MAX_CONVERSIONS = 100;
const MAX_UNIT_LENGTH = 64;

const UnitText = z
  .string()
  .min(1)
  .max(MAX_UNIT_LENGTH)
  .meta({
    description:
      "A unit id (`psi`, `degF`, `BTU_IT`), symbol (`°C`, `kWh`, `µm`) or alias (`lbf/in^2`, `cc`); " +
      "spelled-out names (`kilowatt hour`) match regardless of case. GET /v1/units lists them all. Or a " +
      "compound expression of them, SI-prefixed SI units and s, min, h: `kg/m^3`, `m/s`, `ft²`, `N·m`, " +
      "`W/(m·K)`, `L/min` (at most one `/`, 8 units, exponents ±9; a temperature in it is a difference).",
  });

const ConversionFields = {
  value: z.number().meta({
    description:
      "A finite number, read as the shortest decimal that round-trips to the same double " +
      "(what JSON.stringify prints): 0.1 means exactly 1/10.",
  }),
  from: UnitText,
  to: UnitText,
};

/** The issues of one well-formed conversion, with their paths under `prefix`. */
function addConversionIssues(conversion: unknown, ctx: z.RefinementCtx, prefix: (string | number)[]): number {
  // Refinements can run after a non-fatal issue (an unknown key); only whole fields are checked.
  const { value, from, to } = conversion as { value: unknown; from: unknown; to: unknown };
  if (typeof value !== "number" || typeof from !== "string" || typeof to !== "string") return 0;
  // An empty or over-long unit already has its issue (the length check does not stop refinements).
  const fits = (text: string) => text.length >= 1 && text.length <= MAX_UNIT_LENGTH;
  let count = 0;
  for (const issue of conversionIssues({ value, from, to })) {
    if (issue.field !== "value" && !fits(issue.field === "from" ? from : to)) continue;
    ctx.addIssue({ code: "custom", path: [...prefix, issue.field], message: issue.message });
    count++;
  }
  return count;
}

/** A batch item: its shape is checked by the schema, its units per item by the handler. */
const BatchItem = z.strictObject(ConversionFields).meta({ id: "UnitConversionItem" });

/**
 * One conversion. The units are resolved here, inside validation, so an unknown, ambiguous or
 * incompatible unit is a 400 with a pointer to the field (/from) before any payment is asked for.
 */
export const Conversion = z
  .strictObject({
    value: z.number().meta({
      description:
        "A finite number, read as the shortest decimal that round-trips to the same double " +
        "(what JSON.stringify prints): 0.1 means exactly 1/10.",
    }),
    from: UnitText,
    to: UnitText,
  })
  .superRefine((conversion, ctx) => {
    addConversionIssues(conversion, ctx, []);
  })
  .meta({
    id: "UnitConversion",
    description: "Convert `value` from one unit to another of the same quantity.",
    example: { value: 100, from: "psi", to: "kPa" },
  });

/**
 * A batch, listed first in the union below. Its `conversions` is declared optional and required by
 * a refinement whose issue sits at the root: a body without `conversions` then fails this branch
 * less deeply than the single-conversion branch, so the 400 explains the single conversion, while
 * a body with `conversions` (of any shape) is explained as a batch.
 */
const Batch = z
  .strictObject({
    conversions: z
      .array(BatchItem)
      .min(1)
      .max(MAX_CONVERSIONS)
      .optional()
      .meta({
        description:
          `1 to ${MAX_CONVERSIONS} conversions, answered in order under \`results\`. An item that cannot be ` +
          "converted gets its errors in its place; when no item can be converted the request is a 400.",
      }),
  })
  .superRefine((batch, ctx) => {
    if (batch.conversions === undefined) {
      ctx.addIssue({ code: "custom", path: [], message: "`conversions` is required", continue: false });
      return;
    }
    // Per-item errors are answered (and the batch charged) when at least one item converts; a batch with
    // no convertible item is a 400 listing every item's errors, before any payment.
    const failing = batch.conversions.map((item) => conversionIssues(item).length > 0);
    if (failing.length === 0 || !failing.every(Boolean)) return;
    batch.conversions.forEach((item, index) => {
      addConversionIssues(item, ctx, ["conversions", index]);
    });
  })
  .meta({ id: "UnitConversionBatch", required: ["conversions"] });

export const UnitConvertRequest = z.union([Batch, Conversion]).meta({
  id: "UnitConvertRequest",
  description: `One conversion, or a batch of up to ${MAX_CONVERSIONS} under \`conversions\`.`,
});

export type UnitConvertInput = z.output<typeof UnitConvertRequest>;

const ConversionResult = z
  .strictObject({
    value: z.number().meta({ description: "The value as sent." }),
    from: z.string().meta({ description: "Canonical id of the unit converted from." }),
    to: z.string().meta({ description: "Canonical id of the unit converted to." }),
    result: z.number().meta({
      description: "The exact result rounded to 15 significant digits (half away from zero), as a number.",
    }),
    resultExact: z.string().meta({
      description:
        "The exact result: a terminating decimal (`689.4757`), a repeating decimal with the repetend in " +
        "parentheses (`-12.(2)` = -110/9, `0.1(6)` = 1/6) when the repetend has at most 100 digits, " +
        "otherwise the reduced fraction `p/q` (`100000000/45359237`). Never exponent notation.",
    }),
    domain: z
      .enum(DOMAIN_IDS)
      .nullable()
      .meta({
        description:
          "The domain both sides belong to (a compound's: the domain of its dimension, N·m → energy); null for a " +
          "compound of another dimension (kg/m^3).",
      }),
    dimension: z
      .string()
      .meta({ description: "Dimension in L, M, T, Θ (ISO 80000 order), e.g. `L^-1·M·T^-2`." }),
  })
  .meta({ id: "UnitConversionResult" });

const ConversionFailure = z
  .strictObject({
    value: z.number().meta({ description: "The value as sent." }),
    from: z.string().meta({ description: "The unit as sent." }),
    to: z.string().meta({ description: "The unit as sent." }),
    errors: z
      .array(
        z.strictObject({
          pointer: z.string().meta({ description: "JSON Pointer into the request: /conversions/3/from." }),
          message: z.string(),
        }),
      )
      .min(1),
  })
  .meta({ id: "UnitConversionFailure" });

export const UnitConvertResponse = z
  .union([
    ConversionResult,
    z.strictObject({
      results: z.array(z.union([ConversionResult, ConversionFailure])).meta({
        description:
          "One result per conversion, in request order; an item that failed carries `errors` instead.",
      }),
      converted: z
        .int()
        .min(1)
        .meta({ description: "Items converted (at least one, else the batch is a 400)." }),
      failed: z.int().min(0).meta({ description: "Items answered with `errors`." }),
    }),
  ])
  .meta({ id: "UnitConvertResponse", description: "One result, or `results` for a batch." });

export type UnitConvertOutput = z.output<typeof UnitConvertResponse>;

const QUANTITIES = [
  "length",
  "mass",
  "force",
  "pressure",
  "energy",
  "power",
  "absolute temperature",
  "temperature interval",
  "volume",
] as const;

const UnitInfo = z
  .strictObject({
    id: z.string().meta({ description: "Canonical id: what `from`/`to` answer with." }),
    name: z.string(),
    domain: z.enum(DOMAIN_IDS),
    quantity: z.enum(QUANTITIES).meta({
      description:
        "Units convert only within one quantity. The temperature domain holds two: absolute scales " +
        "(K, degC, degF, degR) and intervals (delta_degC, delta_degF).",
    }),
    dimension: z.string(),
    si: z.string().meta({ description: "The SI unit of `factor`." }),
    symbol: z.string().meta({ description: "Printed symbol; accepted as input." }),
    aliases: z.array(z.string()).meta({ description: "Other accepted spellings, matched case-sensitively." }),
    names: z.array(z.string()).meta({ description: "Spelled-out names, matched regardless of case." }),
    factor: z.string().meta({
      description:
        "Exact factor to SI as an integer or reduced fraction: SI value = factor × value + offset.",
    }),
    offset: z.string().meta({ description: "Exact offset to SI (non-zero only for degC and degF)." }),
    factorExact: z.string().meta({ description: "The factor in the `resultExact` notation." }),
    offsetExact: z.string().meta({ description: "The offset in the `resultExact` notation." }),
    factorRounded: z.number().meta({ description: "The factor rounded to 15 significant digits." }),
  })
  .meta({ id: "UnitInfo" });

export const UnitListResponse = z
  .strictObject({
    count: z.int().min(0).meta({ description: "Number of units (92)." }),
    domains: z.array(
      z.strictObject({
        id: z.enum(DOMAIN_IDS),
        si: z.string(),
        dimension: z.string(),
        units: z.int().min(0),
      }),
    ),
    units: z.array(UnitInfo),
    ambiguous: z
      .array(
        z.strictObject({
          terms: z.array(z.string()).meta({ description: "Refused spellings, matched case-sensitively." }),
          names: z.array(z.string()).meta({ description: "Refused spellings, matched regardless of case." }),
          choices: z.array(z.string()).meta({ description: "Ids of the precise units to name instead." }),
          notOffered: z
            .string()
            .optional()
            .meta({ description: "Meanings of the name this service does not offer." }),
        }),
      )
      .meta({
        description: "Names that are refused with a 400 listing the precise choices (BTU, ton, gallon, …).",
      }),
  })
  .meta({ id: "UnitList" });

export type UnitListOutput = z.output<typeof UnitListResponse>;
