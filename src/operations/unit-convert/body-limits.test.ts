import { describe, expect, it } from "vitest";
import { parseJsonBody } from "../../input/parse-input.ts";
import { Problem } from "../../problem.ts";
import { MAX_BODY_VALUES, unitConvert } from "./index.ts";
import { MAX_CONVERSIONS } from "./schema.ts";

describe("unit-convert's body is bounded before parsing", () => {
  it("takes a full batch of the longest conversions", () => {
    const conversions = Array.from({ length: MAX_CONVERSIONS }, () => ({
      value: 1.5,
      from: "kg/m^3",
      to: "g/L",
    }));
    const text = JSON.stringify({ conversions });
    expect(unitConvert.input.safeParse(parseJsonBody(text, unitConvert)).success).toBe(true);
  });

  it("refuses 60,000 unknown keys with a 400 at the body, before JSON.parse and the schema", () => {
    const keys = Array.from({ length: 60_000 }, (_, i) => `"k${i}":1`).join(",");
    let thrown: unknown;
    try {
      parseJsonBody(`{"value":1,"from":"m","to":"km",${keys}}`, unitConvert);
    } catch (error) {
      thrown = error;
    }
    expect(thrown).toBeInstanceOf(Problem);
    const { status, body } = (thrown as Problem).toResponse();
    expect(status).toBe(400);
    expect(JSON.parse(body as string).errors).toEqual([
      {
        pointer: "",
        message: `the body holds more than ${MAX_BODY_VALUES} JSON values (objects, arrays, members)`,
      },
    ]);
  });
});
