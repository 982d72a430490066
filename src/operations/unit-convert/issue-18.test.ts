import { describe, expect, it } from "vitest";
import { conversionIssues, convert } from "./convert.ts";
import { convertRequest } from "./index.ts";
import { parseExact } from "./rational.ts";
import { UnitConvertRequest } from "./schema.ts";

/**
 * The unit-convert part of issue 18, with the unit strings engineers write: compound expressions over the
 * same exact rational core, torque, gauge pressures, a temperature difference in kelvin, and per-item errors.
 */
const issues = (value: number, from: string, to: string) => conversionIssues({ value, from, to });
const messages = (value: number, from: string, to: string) => issues(value, from, to).map((i) => i.message);

describe("compound expressions (products and quotients of known units with SI prefixes)", () => {
  it.each([
    [1000, "kg/m^3", "lb/ft^3", "kg/m^3", "lb/ft^3", 62.4279605761446, "L^-3·M"],
    [10, "m/s", "km/h", "m/s", "km/h", 36, "L·T^-1"],
    [1, "ft²", "m²", "ft^2", "m^2", 0.09290304, "L^2"],
    [1, "L/min", "m³/h", "L/min", "m^3/h", 0.06, "L^3·T^-1"],
    [1, "kg·m/s²", "N", "kg·m/s^2", "N", 1, "L·M·T^-2"],
    [1, "psi", "lbf/ft^2", "psi", "lbf/ft^2", 144, "L^-1·M·T^-2"],
  ])("%s %s → %s", (value, from, to, fromId, toId, result, dimension) => {
    expect(issues(value, from, to)).toEqual([]);
    expect(convert({ value, from, to })).toMatchObject({ from: fromId, to: toId, result, dimension });
  });

  it("W/(m·K) → BTU_IT/(h·ft·°F): a temperature in a compound is a difference", () => {
    const answer = convert({ value: 1, from: "W/(m·K)", to: "BTU_IT/(h·ft·°F)" });
    expect(answer).toMatchObject({
      from: "W/(m·K)",
      to: "BTU_IT/(h·ft·delta_degF)",
      dimension: "L·M·T^-3·Θ^-1",
      domain: null,
    });
    // 1 W/(m·K) = 3600 s/h × 0.3048 m/ft × 5/9 K/°F / 1055.05585262 J/BTU_IT = 609.6/1055.05585262, exactly.
    expect(parseExact(answer.resultExact).equals(parseExact("609.6").div(parseExact("1055.05585262")))).toBe(
      true,
    );
    expect(answer.result).toBe(0.577789316542998);
  });

  it("N·m and Nm are the newton metre, never the nanometre", () => {
    expect(convert({ value: 1, from: "N·m", to: "ft·lbf" })).toMatchObject({
      from: "N·m",
      to: "ft_lbf",
      result: 0.737562149277265,
      resultExact: "2500000000000000/3389544870828501",
    });
    expect(convert({ value: 1, from: "Nm", to: "N·m" })).toMatchObject({ from: "N·m", result: 1 });
    for (const from of ["N·m", "Nm"]) expect(messages(1, from, "J").join()).not.toContain("nanometre");
  });

  it("refuses what it cannot read unambiguously, naming the fix", () => {
    expect(messages(1, "W/m·K", "W/(m·K)")[0]).toContain("write W/(m·K) or W·K/m");
    expect(messages(1, "m/s/s", "m/s^2")[0]).toContain("more than one /");
    expect(messages(1, "m/s", "kg/m^3")[0]).toContain("L·T^-1");
    expect(messages(1, "m/s", "kg/m^3")[0]).toContain("L^-3·M");
    expect(messages(1, "m^99", "m^2")[0]).toContain("exponent");
    expect(messages(1, "kg/xyz", "kg/m^3")[0]).toContain('unknown unit "xyz" in "kg/xyz"');
    expect(messages(1, "gal/min", "L/s")[0]).toContain('"gal" in "gal/min" is ambiguous');
    expect(messages(1, "m·m·m·m·m·m·m·m·m·m·m·m·m", "m")[0]).toContain("at most 8 units");
    expect(messages(1, "((((m))))", "m")[0]).toContain("parentheses");
  });

  it("keeps bounded work on hostile input (every check is a linear scan, no backtracking regex)", () => {
    for (const text of [
      "(".repeat(64),
      "m^".repeat(32),
      "m/".repeat(32),
      `${"m·".repeat(31)}m`,
      "¹".repeat(64),
    ]) {
      expect(issues(1, text, "m").length).toBeGreaterThan(0);
    }
  });
});

describe("gauge pressure is not absolute pressure", () => {
  it.each(["psig", "barg", "kPag", "bar(g)", "psi g"])("%s is refused, naming the ambiguity", (gauge) => {
    const [message] = messages(1, gauge, "kPa");
    expect(message).toContain("gauge");
    expect(message).toContain("atmospheric");
    expect(message).not.toContain("close matches");
  });
});

describe("a temperature difference in kelvin", () => {
  it("K ↔ delta_degC and degR ↔ delta_degF convert (zero-offset scales measure from absolute zero)", () => {
    expect(issues(5, "K", "delta_degC")).toEqual([]);
    expect(convert({ value: 5, from: "K", to: "delta_degF" })).toMatchObject({ result: 9, resultExact: "9" });
    expect(convert({ value: 9, from: "delta_degF", to: "K" })).toMatchObject({ result: 5 });
  });

  it("a Celsius or Fahrenheit reading is still not a difference, but converts to a prefixed kelvin", () => {
    expect(messages(5, "degC", "delta_degC")[0]).toContain("temperature difference");
    expect(convert({ value: 20, from: "°C", to: "mK" })).toMatchObject({
      resultExact: "293150",
      domain: "temperature",
    });
    expect(convert({ value: 293150, from: "mK", to: "degC" })).toMatchObject({ resultExact: "20" });
    expect(messages(20, "degC", "W/(m·K)")[0]).toContain("is a temperature reading, with an offset");
  });
});

describe("batches: per-item errors", () => {
  it("one bad item no longer rejects the batch: each item's error carries its JSON Pointer", () => {
    const body = {
      conversions: [
        { value: 1, from: "m", to: "ft" },
        { value: 1, from: "psig", to: "kPa" },
        { value: 1, from: "m", to: "kg" },
      ],
    };
    const parsed = UnitConvertRequest.safeParse(body);
    expect(parsed.success).toBe(true);
    const output = convertRequest(parsed.data as never) as { results: Record<string, unknown>[] };
    expect(output).toMatchObject({ converted: 1, failed: 2 });
    expect(output.results[0]).toMatchObject({
      from: "m",
      to: "ft",
      resultExact: "3.(280839895013123359580052493438320209973753)",
    });
    expect(output.results[1]).toEqual({
      value: 1,
      from: "psig",
      to: "kPa",
      errors: [{ pointer: "/conversions/1/from", message: expect.stringContaining("gauge") }],
    });
    expect(output.results[2]).toMatchObject({
      errors: [{ pointer: "/conversions/2/to", message: expect.stringContaining("kg measures mass") }],
    });
  });

  it("a batch where every item fails is a 400 (never charged)", () => {
    const parsed = UnitConvertRequest.safeParse({
      conversions: [
        { value: 1, from: "psig", to: "kPa" },
        { value: 1, from: "m", to: "kg" },
      ],
    });
    expect(parsed.success).toBe(false);
    expect(parsed.error?.issues.map((issue) => issue.path.join("/"))).toEqual([
      "conversions/0/from",
      "conversions/1/to",
    ]);
  });
});
