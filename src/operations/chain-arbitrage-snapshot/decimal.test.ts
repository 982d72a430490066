import { describe, expect, it } from "vitest";
import { divCeil, divRound, formatUnitsExact, parseUnitsExact, ratioBps } from "./decimal.ts";

describe("exact decimal arithmetic for on-chain amounts", () => {
  it("writes atomic units as exact decimals and reads them back", () => {
    expect(formatUnitsExact(1_000_000_000n, 6)).toBe("1000");
    expect(formatUnitsExact(1n, 18)).toBe("0.000000000000000001");
    expect(formatUnitsExact(-8_776_644n, 6)).toBe("-8.776644");
    expect(formatUnitsExact(0n, 6)).toBe("0");
    for (const value of [0n, 1n, -1n, 123_456_789_012_345_678_901n, -250_500_000n]) {
      expect(parseUnitsExact(formatUnitsExact(value, 18), 18)).toBe(value);
    }
    expect(parseUnitsExact("250.5", 6)).toBe(250_500_000n);
    expect(() => parseUnitsExact("0.0000001", 6)).toThrow();
  });

  it("rounds ratios half away from zero, and costs up", () => {
    expect(divRound(5n, 2n)).toBe(3n);
    expect(divRound(-5n, 2n)).toBe(-3n);
    expect(divRound(4n, 3n)).toBe(1n);
    expect(divCeil(4n, 3n)).toBe(2n);
    expect(divCeil(6n, 3n)).toBe(2n);
    expect(ratioBps(1_185_054n, 1_000_000_000n)).toBe(11.85);
    expect(ratioBps(-8_800_636n, 1_000_000_000n)).toBe(-88.01);
    expect(ratioBps(500n, 1_000_000n)).toBe(5);
  });
});
