import { describe, expect, it } from "vitest";
import { conversionIssues, convert, convertExact, incompatibility, resultNumber } from "./convert.ts";
import { parseExact, Rational } from "./rational.ts";
import { UNITS, type Unit } from "./units.ts";

const unit = (id: string) => UNITS.get(id) as Unit;
const q = (text: string) => Rational.parse(text);
const exact = (value: number, from: string, to: string) => convert({ value, from, to }).resultExact;

/** Units grouped by quantity: the sets within which every pair converts. */
const byQuantity = () => {
  const groups = new Map<string, Unit[]>();
  for (const u of UNITS.units) groups.set(u.quantity, [...(groups.get(u.quantity) ?? []), u]);
  return [...groups.values()];
};

const SAMPLES = [0, 1, -1, 0.1, 2.5e-7, 123456.789, -98.6, 1e21, 3e-15, 6.02214076e23, 1 / 3, Math.PI];

describe("round trips", () => {
  it("a → b → a gives back the exact value, for every pair within each quantity", () => {
    let pairs = 0;
    for (const group of byQuantity()) {
      for (const a of group) {
        for (const b of group) {
          for (const sample of SAMPLES) {
            const value = Rational.fromNumber(sample);
            expect(
              convertExact(convertExact(value, a, b), b, a).equals(value),
              `${sample} ${a.id}→${b.id}`,
            ).toBe(true);
          }
          pairs++;
        }
      }
    }
    expect(pairs).toBe(13 ** 2 + 11 ** 2 + 9 ** 2 + 14 ** 2 + 14 ** 2 + 11 ** 2 + 4 ** 2 + 2 ** 2 + 14 ** 2);
  });

  it("a → b → c equals a → c exactly (the factors are consistent)", () => {
    for (const group of byQuantity()) {
      for (const a of group) {
        for (const b of group) {
          for (const c of group) {
            const value = q("37.5");
            expect(convertExact(convertExact(value, a, b), b, c).equals(convertExact(value, a, c))).toBe(
              true,
            );
          }
        }
      }
    }
  });

  it("resultExact parses back to the exact value, and result is it rounded to 15 digits", () => {
    for (const group of byQuantity()) {
      for (const a of group) {
        for (const b of group) {
          const answer = convert({ value: 123.456, from: a.id, to: b.id });
          const precise = convertExact(q("123.456"), a, b);
          expect(parseExact(answer.resultExact).equals(precise), `${a.id}→${b.id}`).toBe(true);
          expect(answer.result, `${a.id}→${b.id}`).toBe(Number(answer.result.toPrecision(15)));
          // The number carries 15 significant digits: within half a unit of the 15th of the exact value.
          const back = Rational.fromNumber(answer.result).sub(precise).abs();
          expect(back.compare(precise.abs().mul(q("5e-15"))), `${a.id}→${b.id}`).toBeLessThanOrEqual(0);
        }
      }
    }
  });
});

describe("exact results", () => {
  it.each([
    [1, "in", "cm", "2.54"],
    [1, "mi", "km", "1.609344"],
    [1, "nmi", "m", "1852"],
    [0.1, "m", "cm", "10"],
    [0.3, "m", "mm", "300"],
    [1, "lbf", "N", "4.4482216152605"],
    [1, "kip", "lbf", "1000"],
    [1, "atm", "torr", "760"],
    [1, "atm", "Pa", "101325"],
    [1, "at", "kPa", "98.0665"],
    [1, "ksi", "psi", "1000"],
    [1, "inHg", "mmHg", "25.4"],
    [1, "kWh", "MJ", "3.6"],
    [1, "therm_EC", "BTU_IT", "100000"],
    [1, "kcal_th", "cal_th", "1000"],
    [1, "eV", "J", "0.0000000000000000001602176634"],
    [1, "hp", "ft_lbf_per_s", "550"],
    [1, "TR", "BTU_IT_per_h", "12000"],
    [1, "hp_metric", "W", "735.49875"],
    [1, "gal_US", "in3", "231"],
    [1, "bbl_oil", "gal_US", "42"],
    [1, "gal_imp", "floz_imp", "160"],
    [1, "gal_US", "floz_US", "128"],
    [1, "yd3", "ft3", "27"],
    [1, "ton_long", "lb", "2240"],
    [1, "lb", "gr", "7000"],
    [1, "slug", "lb", "32.1740(485564304461942257217847769028871391076115)"], // g_n / ft
  ])("%s %s = %s %s", (value, from, to, expected) => {
    expect(exact(value, from, to)).toBe(expected);
  });

  it("writes a repeating result with its repetend, and a long period as a fraction", () => {
    expect(convert({ value: 1, from: "m", to: "ft" })).toEqual({
      value: 1,
      from: "m",
      to: "ft",
      result: 3.28083989501312,
      resultExact: "3.(280839895013123359580052493438320209973753)",
      domain: "length",
      dimension: "L",
    });
    expect(convert({ value: 1, from: "kg", to: "lb" })).toMatchObject({
      result: 2.20462262184878,
      resultExact: "100000000/45359237",
    });
    expect(convert({ value: 100, from: "psi", to: "kPa" })).toMatchObject({
      result: 689.475729316836,
      resultExact: "8896443230521/12903200000",
      domain: "pressure",
      dimension: "L^-1·M·T^-2",
    });
    expect(convert({ value: 1, from: "torr", to: "Pa" }).resultExact).toBe("133.322(368421052631578947)");
  });

  it("answers with canonical ids whatever spelling was sent", () => {
    expect(convert({ value: 14.7, from: "lbf/in^2", to: "kilopascals" })).toMatchObject({
      from: "psi",
      to: "kPa",
    });
    expect(convert({ value: 1, from: "℃", to: "°F" })).toMatchObject({ from: "degC", to: "degF" });
  });

  it("converts between a unit and itself to the value, exactly", () => {
    for (const u of UNITS.units) {
      expect(convert({ value: 0.1, from: u.id, to: u.id })).toMatchObject({
        result: 0.1,
        resultExact: "0.1",
      });
    }
  });
});

describe("temperature", () => {
  it.each([
    [-40, "degC", "degF", "-40"],
    [0, "degC", "degF", "32"],
    [100, "degC", "degF", "212"],
    [37, "degC", "degF", "98.6"],
    [98.6, "degF", "degC", "37"],
    [0, "degC", "K", "273.15"],
    [0, "K", "degC", "-273.15"],
    [0, "K", "degF", "-459.67"],
    [0, "degF", "K", "255.37(2)"],
    [10, "degF", "degC", "-12.(2)"],
    [0, "degC", "degR", "491.67"],
    [491.67, "degR", "degF", "32"],
    [300, "K", "degR", "540"],
    [-500, "degF", "K", "-22.40(5)"], // below absolute zero: converted as written, not refused
    [1, "delta_degC", "delta_degF", "1.8"],
    [9, "delta_degF", "delta_degC", "5"],
    [1, "delta_degF", "delta_degC", "0.(5)"],
    [18, "Δ°F", "ΔK", "10"],
  ])("%s %s = %s %s", (value, from, to, expected) => {
    expect(exact(value, from, to)).toBe(expected);
  });

  it("a Celsius or Fahrenheit reading and a temperature difference do not convert into each other", () => {
    // K and degR do (issue 18): their zero is absolute zero, so a value in them is a difference as well.
    for (const [from, to] of [
      ["degC", "delta_degC"],
      ["delta_degF", "degF"],
      ["degC", "delta_degF"],
      ["delta_degC", "degF"],
    ] as const) {
      const message = incompatibility(unit(from), unit(to));
      expect(message, `${from}→${to}`).toMatch(/one is a temperature, the other a temperature difference/);
      expect(message).toContain("dimension Θ");
    }
  });

  it("the rounded result of an absolute conversion is the exact one rounded", () => {
    expect(convert({ value: 10, from: "degF", to: "degC" }).result).toBe(-12.2222222222222);
    expect(convert({ value: 0, from: "degF", to: "K" }).result).toBe(255.372222222222);
  });
});

describe("what makes a conversion impossible (checked before payment)", () => {
  it("an unknown unit, with close matches", () => {
    expect(conversionIssues({ value: 1, from: "kpa", to: "psi" })).toEqual([
      {
        field: "from",
        message: expect.stringMatching(/^unknown unit "kpa"; close matches: kPa \(kilopascal\), /),
      },
    ]);
    expect(conversionIssues({ value: 1, from: "m", to: "furlong" })).toEqual([
      { field: "to", message: expect.stringContaining('unknown unit "furlong"; no close match') },
    ]);
  });

  it("an ambiguous name, listing the precise choices with their factors", () => {
    const [issue] = conversionIssues({ value: 1, from: "m3", to: "gallon" });
    expect(issue?.field).toBe("to");
    expect(issue?.message).toContain('"gallon" is ambiguous; name one of:');
    expect(issue?.message).toContain("gal_US (gallon (US liquid, 231 in³), 1 gal_US = 0.003785411784 m³)");
    expect(issue?.message).toContain("gal_imp (gallon (imperial), 1 gal_imp = 0.00454609 m³)");
    expect(issue?.message).toContain("Not offered here: the US dry gallon");
    const [btu] = conversionIssues({ value: 1, from: "BTU", to: "J" });
    expect(btu?.message).toContain("the one this service offers is BTU_IT");
    expect(btu?.message).toContain("the thermochemical BTU (1054.350 J)");
  });

  it("narrows the choices of an ambiguous name to those that fit the other unit", () => {
    const [toKg] = conversionIssues({ value: 1, from: "ton", to: "kg" });
    expect(toKg?.message).toMatch(/t \(tonne.*ton_short.*ton_long/);
    expect(toKg?.message).not.toContain("TR");
    const [toW] = conversionIssues({ value: 1, from: "tons", to: "W" });
    expect(toW?.message).toContain("TR (ton of refrigeration");
    expect(toW?.message).not.toContain("ton_short");
  });

  it("a dimension mismatch, naming both dimensions", () => {
    expect(conversionIssues({ value: 1, from: "kg", to: "N" })).toEqual([
      {
        field: "to",
        message:
          "cannot convert kg (kilogram) to N (newton): kg measures mass (dimension M), N measures force " +
          "(dimension L·M·T^-2); kgf, lbf and ozf are the force units named after kg, lb and oz",
      },
    ]);
    expect(conversionIssues({ value: 1, from: "kWh", to: "kW" })[0]?.message).toContain(
      "(dimension L^2·M·T^-2), kW measures power (dimension L^2·M·T^-3); energy is power × time",
    );
    expect(conversionIssues({ value: 1, from: "psi", to: "m" })[0]?.message).toContain(
      "psi measures pressure (dimension L^-1·M·T^-2), m measures length (dimension L)",
    );
  });

  it("both units are reported when both are wrong", () => {
    expect(conversionIssues({ value: 1, from: "C", to: "xyzzy" }).map((issue) => issue.field)).toEqual([
      "from",
      "to",
    ]);
  });

  it("a result beyond the largest JSON number", () => {
    expect(conversionIssues({ value: 1e308, from: "km", to: "nm" })).toEqual([
      {
        field: "value",
        message:
          "the result, about 1.00e+320 nm, is beyond the largest JSON number (1.7976931348623157e+308)",
      },
    ]);
    expect(conversionIssues({ value: -1e300, from: "TR", to: "mW" })).toEqual([]);
    expect(conversionIssues({ value: -1e306, from: "TR", to: "mW" })).toEqual([
      {
        field: "value",
        message:
          "the result, about -3.52e+312 mW, is beyond the largest JSON number (1.7976931348623157e+308)",
      },
    ]);
  });

  it("the largest double converts to itself; a subnormal result keeps its exact form", () => {
    expect(convert({ value: Number.MAX_VALUE, from: "m", to: "m" }).result).toBe(Number.MAX_VALUE);
    expect(resultNumber(Rational.of(BigInt(Number.MAX_VALUE)))).toBe(Number.MAX_VALUE);
    const tiny = convert({ value: 5e-324, from: "km", to: "nm" });
    expect(tiny.resultExact).toBe(`0.${"0".repeat(311)}5`);
    expect(tiny.result).toBe(5e-312);
  });
});
