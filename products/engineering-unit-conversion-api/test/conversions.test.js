// Conversions against exact reference values (NIST SP 811 App. B, SI Brochure) and a round trip
// through SI for every unit of the table.
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { convertRequest, unitList } from "../src/operations/unit-convert/index.js";

const convert = (value, from, to) => convertRequest({ value, from, to });
const { units } = unitList();

describe("exact reference values", () => {
  const cases = [
    [1, "in", "mm", "25.4"],
    [1, "ft", "m", "0.3048"],
    [1, "yd", "m", "0.9144"],
    [1, "mi", "m", "1609.344"],
    [1, "nmi", "m", "1852"],
    [1, "lb", "kg", "0.45359237"],
    [1, "oz", "g", "28.349523125"],
    [1, "lbf", "N", "4.4482216152605"],
    [1, "kgf", "N", "9.80665"],
    [1, "atm", "Pa", "101325"],
    [1, "bar", "kPa", "100"],
    [760, "torr", "atm", "1"],
    [1, "kWh", "MJ", "3.6"],
    [1, "BTU_IT", "J", "1055.05585262"],
    [1, "cal_th", "J", "4.184"],
    [1, "hp_electric", "W", "746"],
    [1, "gal_US", "L", "3.785411784"],
    [1, "gal_imp", "L", "4.54609"],
    [1, "ft3", "L", "28.316846592"],
    [0, "degC", "K", "273.15"],
    [100, "degC", "degF", "212"],
    [-40, "degF", "degC", "-40"],
    [0, "K", "degR", "0"],
    [10, "delta_degC", "delta_degF", "18"],
    [1, "TR", "W", "3516.8528420(6)"],
    [1, "ton_short", "lb", "2000"],
    [1, "ton_long", "lb", "2240"],
    [1, "ksi", "psi", "1000"],
  ];
  for (const [value, from, to, exact] of cases) {
    test(`${value} ${from} = ${exact} ${to}`, () => {
      const answer = convert(value, from, to);
      assert.equal(answer.resultExact, exact);
      assert.equal(answer.from, from);
      assert.equal(answer.to, to);
    });
  }
});

describe("a round trip through SI gives the value back exactly, for every unit", () => {
  for (const unit of units) {
    test(`${unit.id} (${unit.name})`, () => {
      const si = units.find((other) => other.domain === unit.domain && other.quantity === unit.quantity && other.factor === "1" && other.offset === "0");
      assert.ok(si, `no SI unit of quantity ${unit.quantity}`);
      const there = convert(7.25, unit.id, si.id);
      const back = convertRequest({ value: 7.25, from: unit.id, to: unit.id });
      assert.equal(back.resultExact, "7.25");
      // SI value = factor × value + offset, in exact rationals.
      const [p, q = "1"] = unit.factor.split("/");
      const [op, oq = "1"] = unit.offset.split("/");
      const numerator = BigInt(p) * 725n * BigInt(oq) + BigInt(op) * 100n * BigInt(q);
      const denominator = 100n * BigInt(q) * BigInt(oq);
      const expected = Number(numerator) / Number(denominator);
      assert.ok(Math.abs(there.result - expected) <= Math.abs(expected) * 1e-14, `${there.result} vs ${expected}`);
    });
  }
});

describe("spellings", () => {
  const same = [
    ["°C", "degC"],
    ["℃", "degC"],
    ["µm", "um"],
    ["μm", "um"],
    ["kilowatt hour", "kWh"],
    ["Kilowatt-Hour", "kWh"],
    ["m³", "m3"],
    ["m^3", "m3"],
    ["lbf/in^2", "psi"],
  ];
  for (const [spelling, id] of same) {
    test(`"${spelling}" is ${id}`, () => assert.equal(convert(1, spelling, id).from, id));
  }
  test("case is meaning for symbols: mW is not MW", () => {
    assert.equal(convert(1, "MW", "mW").resultExact, "1000000000");
  });
});

describe("numbers", () => {
  test("0.1 is exactly one tenth", () => assert.equal(convert(0.1, "m", "mm").resultExact, "100"));
  test("a repeating decimal carries its period", () => assert.equal(convert(10, "degF", "degC").resultExact, "-12.(2)"));
  test("a long period becomes a fraction", () => assert.equal(convert(1, "kg", "lb").resultExact, "100000000/45359237"));
  test("result is rounded to 15 significant digits", () => assert.equal(convert(1, "kg", "lb").result, 2.20462262184878));
  test("a batch answers in order", () => {
    const { results } = convertRequest({
      conversions: [
        { value: 1, from: "in", to: "mm" },
        { value: 2, from: "ft", to: "in" },
      ],
    });
    assert.deepEqual(results.map((r) => r.resultExact), ["25.4", "24"]);
  });
  test("negative lengths convert (a displacement)", () => assert.equal(convert(-1, "ft", "in").resultExact, "-12"));
});
