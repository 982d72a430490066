import { defineOperation } from "../../catalog/operation.ts";
import { UnitConvertRequest, UnitConvertResponse } from "./schema.ts";

export const unitConvert = defineOperation({
  id: "unit-convert",
  method: "POST",
  path: "/v1/unit-convert",
  priceUsd: "0.01",
  kind: "sync",
  summary: "Exact engineering unit conversion (92 units, 8 domains)",
  description:
    "Converts between 92 engineering units in eight domains with exact rational factors and dimensional checks.",
  tags: ["engineering"],
  inputFrom: "body",
  input: UnitConvertRequest,
  output: UnitConvertResponse,
  outputContentType: "application/json",
  example: { input: { value: 100, from: "psi", to: "kPa" } },
  errorResponses: [],
});
