import { z } from "zod";

const Conversion = z.strictObject({
  value: z.number().refine(Number.isFinite, "must be a finite number"),
  from: z.string().min(1).max(64),
  to: z.string().min(1).max(64),
});

export const UnitConvertRequest = z
  .union([Conversion, z.strictObject({ conversions: z.array(Conversion).min(1).max(100) })])
  .meta({
    id: "UnitConvertRequest",
    description: "One conversion, or a batch of up to 100 under `conversions`.",
  });

const ConversionResult = z.strictObject({
  value: z.number(),
  from: z.string(),
  to: z.string(),
  result: z.number(),
  resultExact: z.string(),
  domain: z.string(),
  dimension: z.string(),
});

export const UnitConvertResponse = z
  .union([ConversionResult, z.strictObject({ results: z.array(ConversionResult) })])
  .meta({ id: "UnitConvertResponse" });
