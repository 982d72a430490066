import { describe, expect, it } from "vitest";
import { formatExact, parseExact, Rational, roundSignificant, toRoundedNumber } from "./rational.ts";

const r = (text: string) => Rational.parse(text);

describe("Rational", () => {
  it("keeps every value reduced with a positive denominator", () => {
    expect(Rational.of(6n, -4n)).toEqual(Rational.of(-3n, 2n));
    expect(Rational.of(0n, -7n).toFractionString()).toBe("0");
    expect(r("10/4").toFractionString()).toBe("5/2");
    expect(() => Rational.of(1n, 0n)).toThrow(RangeError);
  });

  it("parses fractions and decimals with exponents exactly", () => {
    expect(r("127/5000").equals(r("0.0254"))).toBe(true);
    expect(r("1E-9").toFractionString()).toBe("1/1000000000");
    expect(r("-1.5e+3").toFractionString()).toBe("-1500");
    expect(r(".5").toFractionString()).toBe("1/2");
    expect(r("+7").toFractionString()).toBe("7");
    for (const bad of ["", ".", "1/-2", "1e", "0x10", "1.2.3", "NaN", "Infinity"]) {
      expect(() => r(bad), bad).toThrow();
    }
  });

  it("reads a double as its shortest round-trip decimal (what the agent wrote)", () => {
    expect(Rational.fromNumber(0.1).toFractionString()).toBe("1/10");
    expect(Rational.fromNumber(1e21).toFractionString()).toBe(`1${"0".repeat(21)}`);
    expect(Rational.fromNumber(-2.5e-7).toFractionString()).toBe("-1/4000000");
    expect(Rational.fromNumber(5e-324).equals(r("5e-324"))).toBe(true);
    expect(Rational.fromNumber(-0).isZero()).toBe(true);
    expect(() => Rational.fromNumber(Number.NaN)).toThrow(RangeError);
    expect(() => Rational.fromNumber(Number.POSITIVE_INFINITY)).toThrow(RangeError);
  });

  it("adds, subtracts, multiplies, divides and compares exactly", () => {
    expect(r("1/3").add(r("1/6")).toFractionString()).toBe("1/2");
    expect(r("0.1").add(r("0.2")).equals(r("0.3"))).toBe(true);
    expect(r("1/3").sub(r("1/2")).toFractionString()).toBe("-1/6");
    expect(r("5/9").mul(r("9/5")).equals(Rational.ONE)).toBe(true);
    expect(r("1").div(r("-3/4")).toFractionString()).toBe("-4/3");
    expect(() => Rational.ONE.div(Rational.ZERO)).toThrow(RangeError);
    expect(r("1/3").compare(r("0.3333333333333333"))).toBe(1);
    expect(r("-2").compare(r("-1"))).toBe(-1);
    expect(r("2/4").compare(r("1/2"))).toBe(0);
    expect(r("3/8").isTerminating()).toBe(true);
    expect(r("1/6").isTerminating()).toBe(false);
  });
});

describe("formatExact (the resultExact notation)", () => {
  it("writes terminating decimals in full, without exponent or trailing zeros", () => {
    expect(formatExact(r("42"))).toBe("42");
    expect(formatExact(r("-0.001"))).toBe("-0.001");
    expect(formatExact(r("1E-10"))).toBe("0.0000000001");
    expect(formatExact(r("1.5e21"))).toBe("1500000000000000000000");
    expect(formatExact(r("3/8"))).toBe("0.375");
    expect(formatExact(Rational.ZERO)).toBe("0");
  });

  it("marks the shortest repetend in parentheses after the shortest pre-period", () => {
    expect(formatExact(r("1/3"))).toBe("0.(3)");
    expect(formatExact(r("1/6"))).toBe("0.1(6)");
    expect(formatExact(r("-110/9"))).toBe("-12.(2)");
    expect(formatExact(r("1/7"))).toBe("0.(142857)");
    expect(formatExact(r("10/3"))).toBe("3.(3)");
    expect(formatExact(r("1/12"))).toBe("0.08(3)");
    expect(formatExact(r("20265/152"))).toBe("133.322(368421052631578947)");
    expect(formatExact(r("1/81"))).toBe("0.(012345679)");
  });

  it("falls back to the reduced fraction when the repetend exceeds 100 digits", () => {
    // 1/97 has a 96-digit period: written out; 1/103 has a 34-digit one; 1/109 a 108-digit one.
    expect(formatExact(r("1/97"))).toMatch(/^0\.\(\d{96}\)$/);
    expect(formatExact(r("1/109"))).toBe("1/109");
    expect(formatExact(r("-100000000/45359237"))).toBe("-100000000/45359237");
    expect(formatExact(r("1/109"), 200)).toMatch(/^0\.\(\d{108}\)$/);
  });

  it("parseExact inverts formatExact on every form", () => {
    for (const text of [
      "0",
      "-0.001",
      "42",
      "0.(3)",
      "-12.(2)",
      "0.1(6)",
      "133.322(368421052631578947)",
      "1/109",
      "-1/109",
      "-1.(6)",
    ]) {
      expect(formatExact(parseExact(text)), text).toBe(text);
    }
    // Random fractions with small denominators round-trip through the notation.
    let seed = 7;
    const next = () => {
      seed = (seed * 1103515245 + 12345) % 2 ** 31;
      return seed;
    };
    for (let i = 0; i < 500; i++) {
      const value = Rational.of(BigInt(next() % 200000) - 100000n, BigInt((next() % 5000) + 1));
      expect(parseExact(formatExact(value)).equals(value)).toBe(true);
    }
  });
});

describe("rounding to significant digits", () => {
  it("rounds half away from zero, like Number.prototype.toPrecision", () => {
    expect(roundSignificant(r("2/3"), 3)).toEqual({ mantissa: 667n, exponent: -3 });
    expect(roundSignificant(r("1.25"), 2)).toEqual({ mantissa: 13n, exponent: -1 });
    expect(roundSignificant(r("-1.25"), 2)).toEqual({ mantissa: -13n, exponent: -1 });
    expect(roundSignificant(r("9.995"), 3)).toEqual({ mantissa: 100n, exponent: -1 });
    expect(roundSignificant(r("100"), 3)).toEqual({ mantissa: 100n, exponent: 0 });
    expect(roundSignificant(r("99.99"), 3)).toEqual({ mantissa: 100n, exponent: 0 });
    expect(roundSignificant(Rational.ZERO, 15)).toEqual({ mantissa: 0n, exponent: 0 });
  });

  it("gives the double nearest to the 15-digit rounding", () => {
    expect(toRoundedNumber(r("1/3"))).toBe(0.333333333333333);
    expect(toRoundedNumber(r("-110/9"))).toBe(-12.2222222222222);
    expect(toRoundedNumber(r("8896443230521/1290320000"))).toBe(6894.75729316836);
    expect(toRoundedNumber(r("1e-300"))).toBe(1e-300);
    expect(toRoundedNumber(r("123456789012345678"))).toBe(123456789012346000);
    expect(toRoundedNumber(r("1e400"))).toBe(Number.POSITIVE_INFINITY);
  });

  it("agrees with toPrecision(15) except on ties, where the written decimal decides", () => {
    let seed = 11;
    const next = () => {
      seed = (seed * 1103515245 + 12345) % 2 ** 31;
      return seed / 2 ** 31;
    };
    let ties = 0;
    for (let i = 0; i < 2000; i++) {
      const value = (next() - 0.5) * 10 ** Math.floor(next() * 40 - 20);
      const digits = String(Math.abs(value)).replace(/e.*$/, "").replace(".", "").replace(/^0+/, "");
      if (digits.length > 15 && /^50*$/.test(digits.slice(15))) {
        ties++;
        continue;
      }
      expect(toRoundedNumber(Rational.fromNumber(value))).toBe(Number(value.toPrecision(15)));
    }
    expect(ties).toBeLessThan(400);
    // 2.000000000000005 is a tie as written; the double below it is 2.00000000000000488…
    expect(toRoundedNumber(Rational.fromNumber(2.000000000000005))).toBe(2.00000000000001);
    expect((2.000000000000005).toPrecision(15)).toBe("2.00000000000000");
  });
});
