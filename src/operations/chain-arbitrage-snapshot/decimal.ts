/**
 * Integer arithmetic for on-chain amounts: every amount stays a bigint of atomic units and is
 * written as an exact decimal string; only ratios (bps) are rounded, and say how.
 */

/** An exact decimal string of `value` atomic units with `decimals` places, trailing zeros dropped. */
export function formatUnitsExact(value: bigint, decimals: number): string {
  const negative = value < 0n;
  const digits = (negative ? -value : value).toString().padStart(decimals + 1, "0");
  const whole = digits.slice(0, digits.length - decimals);
  const fraction = digits.slice(digits.length - decimals).replace(/0+$/, "");
  return `${negative ? "-" : ""}${whole}${fraction ? `.${fraction}` : ""}`;
}

/** A decimal string with at most `decimals` places → atomic units (throws on more places). */
export function parseUnitsExact(text: string, decimals: number): bigint {
  const match = /^(-?)(\d+)(?:\.(\d+))?$/.exec(text);
  if (!match || (match[3]?.length ?? 0) > decimals)
    throw new Error(`"${text}" is not a decimal with ≤ ${decimals} places`);
  const atomic =
    BigInt(match[2] as string) * 10n ** BigInt(decimals) + BigInt((match[3] ?? "").padEnd(decimals, "0"));
  return match[1] ? -atomic : atomic;
}

/** numerator / denominator rounded to the nearest integer, ties away from zero. */
export function divRound(numerator: bigint, denominator: bigint): bigint {
  if (denominator === 0n) throw new Error("division by zero");
  const negative = numerator < 0n !== denominator < 0n;
  const n = numerator < 0n ? -numerator : numerator;
  const d = denominator < 0n ? -denominator : denominator;
  const rounded = (2n * n + d) / (2n * d);
  return negative ? -rounded : rounded;
}

/** numerator / denominator rounded up (towards +∞), for costs. */
export function divCeil(numerator: bigint, denominator: bigint): bigint {
  const quotient = numerator / denominator;
  return quotient * denominator === numerator || numerator < 0n !== denominator < 0n
    ? quotient
    : quotient + 1n;
}

/** part / whole in basis points, rounded half away from zero to 2 decimals. */
export function ratioBps(part: bigint, whole: bigint): number {
  return Number(divRound(part * 1_000_000n, whole)) / 100;
}
