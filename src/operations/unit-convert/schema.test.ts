import { describe, expect, it } from "vitest";
import { zodIssuesToFieldErrors } from "../../problem.ts";
import { convertRequest, unitConvert, unitList, unitListRoute } from "./index.ts";
import { MAX_CONVERSIONS, UnitConvertRequest, UnitConvertResponse, UnitListResponse } from "./schema.ts";

/** What the service answers for an invalid body: the field errors of the 400 problem. */
function errors(body: unknown) {
  const parsed = UnitConvertRequest.safeParse(body);
  if (parsed.success) throw new Error(`expected ${JSON.stringify(body)} to be invalid`);
  return zodIssuesToFieldErrors(parsed.error.issues);
}
const pointers = (body: unknown) => errors(body).map((error) => error.pointer);
const ok = (value: number, from = "m", to = "ft") => ({ value, from, to });

describe("request validation (400 with JSON Pointers, before any payment)", () => {
  it("accepts one conversion or a batch", () => {
    expect(UnitConvertRequest.safeParse(ok(1)).success).toBe(true);
    expect(UnitConvertRequest.safeParse({ conversions: [ok(1), ok(2, "°C", "°F")] }).success).toBe(true);
    expect(
      UnitConvertRequest.safeParse({ conversions: Array.from({ length: MAX_CONVERSIONS }, () => ok(1)) })
        .success,
    ).toBe(true);
  });

  it("points at an unknown, ambiguous or mismatched unit", () => {
    expect(errors({ value: 1, from: "kpaa", to: "psi" })).toEqual([
      { pointer: "/from", message: expect.stringContaining('unknown unit "kpaa"; close matches: kPa') },
    ]);
    expect(errors({ value: 1, from: "kJ", to: "BTU" })).toEqual([
      { pointer: "/to", message: expect.stringContaining('"BTU" is ambiguous') },
    ]);
    expect(errors({ value: 1, from: "kg", to: "N" })).toEqual([
      { pointer: "/to", message: expect.stringContaining("dimension M") },
    ]);
    expect(errors({ value: 1e308, from: "km", to: "nm" })).toEqual([
      { pointer: "/value", message: expect.stringContaining("beyond the largest JSON number") },
    ]);
  });

  it("points into a batch whose every item fails: /conversions/0/to", () => {
    // A batch with at least one convertible item answers per item (issue-18.test.ts).
    const body = { conversions: [ok(4, "m", "kg"), ok(5, "ton", "lb")] };
    expect(errors(body)).toEqual([
      {
        pointer: "/conversions/0/to",
        message: expect.stringContaining("cannot convert m (metre) to kg (kilogram)"),
      },
      { pointer: "/conversions/1/from", message: expect.stringContaining('"ton" is ambiguous') },
    ]);
  });

  it("refuses a malformed body with a pointer per field", () => {
    expect(pointers({ value: "1", from: "m", to: "ft" })).toEqual(["/value"]);
    expect(pointers({ value: 1, to: "ft" })).toEqual(["/from"]);
    expect(pointers({ value: 1, from: "", to: "ft" })).toEqual(["/from"]);
    expect(pointers({ value: 1, from: "", to: "xyzzy" })).toEqual(["/from", "/to"]);
    expect(pointers({ value: 1, from: "m", to: "f".repeat(65) })).toEqual(["/to"]);
    expect(pointers({ value: 1, from: "m", to: "ft", precision: 3 })).toEqual(["/precision"]);
    expect(pointers({ value: Number.POSITIVE_INFINITY, from: "m", to: "ft" })).toEqual(["/value"]);
    expect(pointers({ value: Number.NaN, from: "m", to: "ft" })).toEqual(["/value"]);
    expect(pointers({ conversions: [] })).toEqual(["/conversions"]);
    expect(pointers({ conversions: Array.from({ length: MAX_CONVERSIONS + 1 }, () => ok(1)) })).toEqual([
      "/conversions",
    ]);
    expect(pointers({ conversions: [ok(1), { value: 1, from: "m" }] })).toEqual(["/conversions/1/to"]);
    expect(pointers({ conversions: [ok(1)], value: 1 })).toEqual(["/value"]);
    expect(pointers({ conversions: "m to ft" })).toEqual(["/conversions"]);
    expect(pointers({ conversions: [ok(1), { value: "2", from: "m", to: "ft" }] })).toEqual([
      "/conversions/1/value",
    ]);
    expect(pointers({})).toEqual(["/value", "/from", "/to"]);
    expect(pointers({ ...ok(1), conversions: [] })).toEqual(["/conversions", "/value", "/from", "/to"]);
  });

  it("reports an unknown key and an unknown unit together", () => {
    expect(pointers({ value: 1, from: "xyzzy", to: "ft", extra: true })).toEqual(["/extra", "/from"]);
  });
});

describe("the operation", () => {
  it("answers a batch in request order with canonical ids", () => {
    const input = UnitConvertRequest.parse({
      conversions: [ok(1, "in", "mm"), ok(212, "°F", "°C"), ok(1, "kWh", "BTU_IT")],
    });
    const output = convertRequest(input);
    expect(output).toEqual({
      results: [
        expect.objectContaining({ from: "in", to: "mm", result: 25.4, resultExact: "25.4" }),
        expect.objectContaining({ from: "degF", to: "degC", result: 100, resultExact: "100" }),
        expect.objectContaining({ from: "kWh", to: "BTU_IT", result: 3412.14163312794 }),
      ],
      converted: 3,
      failed: 0,
    });
    expect(UnitConvertResponse.safeParse(output).success).toBe(true);
  });

  it("runs its handler on a single conversion", async () => {
    const result = await unitConvert.handler?.(UnitConvertRequest.parse(ok(3, "ft", "m")), {} as never);
    expect(result?.body).toEqual({
      value: 3,
      from: "ft",
      to: "m",
      result: 0.9144,
      resultExact: "0.9144",
      domain: "length",
      dimension: "L",
    });
  });

  it("its example is valid input and its example output is what it answers", () => {
    const input = UnitConvertRequest.parse(unitConvert.example.input);
    expect(convertRequest(input)).toEqual(unitConvert.example.output);
    expect(UnitConvertResponse.safeParse(unitConvert.example.output).success).toBe(true);
  });
});

describe("GET /v1/units (free)", () => {
  it("lists the 92 units with domain, symbol, aliases and exact factor, valid against its schema", async () => {
    const list = await unitListRoute.handler();
    expect(UnitListResponse.safeParse(list).success).toBe(true);
    expect(list).toEqual(unitList());
    expect(list.count).toBe(92);
    expect(list.units).toHaveLength(92);
    expect(list.domains.map((d) => [d.id, d.units])).toEqual([
      ["length", 13],
      ["mass", 11],
      ["force", 9],
      ["pressure", 14],
      ["energy", 14],
      ["power", 11],
      ["temperature", 6],
      ["volume", 14],
    ]);
    expect(list.units.find((u) => u.id === "psi")).toEqual({
      id: "psi",
      name: "pound-force per square inch",
      domain: "pressure",
      quantity: "pressure",
      dimension: "L^-1·M·T^-2",
      si: "Pa",
      symbol: "psi",
      aliases: ["lbf/in2", "PSI", "psia"],
      names: [
        "pound-force per square inch",
        "pounds-force per square inch",
        "pound per square inch",
        "pounds per square inch",
      ],
      factor: "8896443230521/1290320000",
      offset: "0",
      factorExact: "8896443230521/1290320000",
      offsetExact: "0",
      factorRounded: 6894.75729316836,
    });
    expect(list.units.find((u) => u.id === "degF")).toMatchObject({
      quantity: "absolute temperature",
      symbol: "°F",
      factor: "5/9",
      offset: "45967/180",
      factorExact: "0.(5)",
      offsetExact: "255.37(2)",
    });
    expect(list.ambiguous.find((a) => a.names.includes("ton"))).toEqual({
      terms: [],
      names: ["ton", "tons"],
      choices: ["t", "ton_short", "ton_long", "TR"],
      notOffered: "the ton of TNT (4.184 GJ)",
    });
  });

  it("every listed spelling converts", () => {
    for (const u of unitList().units) {
      for (const spelling of [u.id, u.symbol, ...u.aliases, ...u.names]) {
        expect(UnitConvertRequest.safeParse({ value: 1, from: spelling, to: u.id }).success, spelling).toBe(
          true,
        );
      }
    }
  });
});

describe("absolute temperatures below absolute zero", () => {
  it("are a 400 at /value; differences may be negative", async () => {
    const { UnitConvertRequest } = await import("./schema.ts");
    const { zodIssuesToFieldErrors } = await import("../../problem.ts");
    for (const [value, from] of [
      [-500, "degC"],
      [-1, "K"],
      [-460, "degF"],
    ] as const) {
      const parsed = UnitConvertRequest.safeParse({ value, from, to: "K" });
      expect(parsed.success, `${value} ${from}`).toBe(false);
      expect(zodIssuesToFieldErrors(parsed.error?.issues ?? [])[0]).toEqual({
        pointer: "/value",
        message: `${value} ${from} is below absolute zero`,
      });
    }
    expect(UnitConvertRequest.safeParse({ value: -273.15, from: "degC", to: "K" }).success).toBe(true);
    expect(UnitConvertRequest.safeParse({ value: -500, from: "delta_degC", to: "delta_degF" }).success).toBe(
      true,
    );
  });
});
