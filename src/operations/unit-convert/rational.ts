/**
 * Exact rational numbers over BigInt, and the two ways the unit converter prints them:
 * the exact decimal (terminating, marked repeating, or a fraction) and a rounding to
 * significant digits. No floating point is involved until `toNumber`.
 */

const abs = (n: bigint) => (n < 0n ? -n : n);

function gcd(a: bigint, b: bigint): bigint {
  let [x, y] = [abs(a), abs(b)];
  while (y !== 0n) [x, y] = [y, x % y];
  return x;
}

/** "-12.5e-3", "1E-9", "0.0254", "+7", ".5": a plain decimal with an optional exponent. */
const DECIMAL = /^([+-]?)(\d*)(?:\.(\d*))?(?:[eE]([+-]?\d+))?$/;
const FRACTION = /^([+-]?\d+)\/(\d+)$/;

export class Rational {
  static readonly ZERO = new Rational(0n, 1n);
  static readonly ONE = new Rational(1n, 1n);

  /** Always reduced, with a positive denominator: equal values have equal fields. */
  private constructor(
    readonly num: bigint,
    readonly den: bigint,
  ) {}

  static of(num: bigint, den: bigint = 1n): Rational {
    if (den === 0n) throw new RangeError("division by zero");
    if (den < 0n) [num, den] = [-num, -den];
    const divisor = gcd(num, den);
    return divisor > 1n ? new Rational(num / divisor, den / divisor) : new Rational(num, den);
  }

  /** Parses "p/q", an integer, or a decimal with an optional exponent, exactly. */
  static parse(text: string): Rational {
    const fraction = FRACTION.exec(text);
    if (fraction) return Rational.of(BigInt(fraction[1] as string), BigInt(fraction[2] as string));
    const decimal = DECIMAL.exec(text);
    if (!decimal || (decimal[2] === "" && (decimal[3] ?? "") === "")) {
      throw new SyntaxError(`not an exact number: "${text}"`);
    }
    const [, sign, whole = "", fractionDigits = "", exponentText = "0"] = decimal;
    const exponent = Number(exponentText) - fractionDigits.length;
    if (!Number.isSafeInteger(exponent) || Math.abs(exponent) > 100_000) {
      throw new RangeError(`exponent out of range: "${text}"`);
    }
    let num = BigInt(`${whole}${fractionDigits}` || "0");
    if (sign === "-") num = -num;
    return exponent >= 0
      ? Rational.of(num * 10n ** BigInt(exponent))
      : Rational.of(num, 10n ** BigInt(-exponent));
  }

  /**
   * A JSON number as the decimal an agent wrote: the shortest decimal string that round-trips to
   * the same double (ECMAScript Number::toString), read exactly. So 0.1 is 1/10, not the double's
   * binary value 0.1000000000000000055511151231257827…
   */
  static fromNumber(value: number): Rational {
    if (!Number.isFinite(value)) throw new RangeError(`not a finite number: ${value}`);
    return Rational.parse(String(value));
  }

  add(other: Rational): Rational {
    return Rational.of(this.num * other.den + other.num * this.den, this.den * other.den);
  }

  sub(other: Rational): Rational {
    return this.add(other.neg());
  }

  mul(other: Rational): Rational {
    return Rational.of(this.num * other.num, this.den * other.den);
  }

  div(other: Rational): Rational {
    if (other.num === 0n) throw new RangeError("division by zero");
    return Rational.of(this.num * other.den, this.den * other.num);
  }

  neg(): Rational {
    return new Rational(-this.num, this.den);
  }

  abs(): Rational {
    return this.num < 0n ? this.neg() : this;
  }

  sign(): -1 | 0 | 1 {
    return this.num === 0n ? 0 : this.num < 0n ? -1 : 1;
  }

  isZero(): boolean {
    return this.num === 0n;
  }

  equals(other: Rational): boolean {
    return this.num === other.num && this.den === other.den;
  }

  compare(other: Rational): -1 | 0 | 1 {
    const left = this.num * other.den;
    const right = other.num * this.den;
    return left === right ? 0 : left < right ? -1 : 1;
  }

  /** True when the decimal expansion ends (the reduced denominator has no prime but 2 and 5). */
  isTerminating(): boolean {
    return stripTwosAndFives(this.den).rest === 1n;
  }

  /** "p/q" in lowest terms, or "p" for an integer: the form the unit table uses. */
  toFractionString(): string {
    return this.den === 1n ? this.num.toString() : `${this.num}/${this.den}`;
  }

  toString(): string {
    return this.toFractionString();
  }
}

function stripTwosAndFives(n: bigint): { twos: number; fives: number; rest: bigint } {
  let rest = n;
  let twos = 0;
  let fives = 0;
  while (rest % 2n === 0n) {
    rest /= 2n;
    twos++;
  }
  while (rest % 5n === 0n) {
    rest /= 5n;
    fives++;
  }
  return { twos, fives, rest };
}

/** Longest repetend written out in parentheses; longer periods fall back to the exact fraction. */
export const MAX_REPETEND_DIGITS = 100;

/**
 * The exact value as text, in one of three forms (the `resultExact` notation):
 * - a terminating decimal: "689.4757", "-0.001", "42";
 * - a repeating decimal, the repetend in parentheses, written once: "0.1(6)" = 1/6,
 *   "-12.(2)" = -110/9, "0.(142857)" = 1/7; used while the repetend has at most
 *   MAX_REPETEND_DIGITS digits (the pre-period and the period are the shortest possible);
 * - otherwise the reduced fraction "p/q", e.g. "100000000/45359237" (1 kg in lb, whose
 *   decimal period has 24 288 digits).
 * No exponent notation: every digit is written, so the text is exact without further rules.
 */
export function formatExact(value: Rational, maxRepetend = MAX_REPETEND_DIGITS): string {
  const sign = value.num < 0n ? "-" : "";
  const numerator = abs(value.num);
  const { den } = value;
  const whole = numerator / den;
  const remainder = numerator % den;
  if (remainder === 0n) return `${sign}${whole}`;

  const { twos, fives, rest } = stripTwosAndFives(den);
  const prePeriod = Math.max(twos, fives);
  if (rest === 1n) {
    const digits = ((remainder * 10n ** BigInt(prePeriod)) / den).toString().padStart(prePeriod, "0");
    return `${sign}${whole}.${digits.replace(/0+$/, "")}`;
  }

  const period = multiplicativeOrderOfTen(rest, maxRepetend);
  if (period === undefined) return `${sign}${value.abs().toFractionString()}`;
  const digits = ((remainder * 10n ** BigInt(prePeriod + period)) / den)
    .toString()
    .padStart(prePeriod + period, "0");
  return `${sign}${whole}.${digits.slice(0, prePeriod)}(${digits.slice(prePeriod)})`;
}

/** The least p ≥ 1 with 10^p ≡ 1 (mod modulus), if p ≤ limit; modulus is coprime to 10. */
function multiplicativeOrderOfTen(modulus: bigint, limit: number): number | undefined {
  let power = 10n % modulus;
  for (let p = 1; p <= limit; p++) {
    if (power === 1n) return p;
    power = (power * 10n) % modulus;
  }
  return undefined;
}

/** Parses the `resultExact` notation back to the exact value (the inverse of formatExact). */
export function parseExact(text: string): Rational {
  const repeating = /^(-?)(\d+)\.(\d*)\((\d+)\)$/.exec(text);
  if (!repeating) return Rational.parse(text);
  const [, sign, whole, prePeriod = "", repetend = ""] = repeating as unknown as string[];
  // x = whole.prePeriod(repetend) = (whole·prePeriod·repetend − whole·prePeriod) / ((10^p − 1)·10^k)
  const withRepetend = BigInt(`${whole}${prePeriod}${repetend}`);
  const withoutRepetend = BigInt(`${whole}${prePeriod}`);
  const den = (10n ** BigInt(repetend.length) - 1n) * 10n ** BigInt(prePeriod.length);
  const magnitude = Rational.of(withRepetend - withoutRepetend, den);
  return sign === "-" ? magnitude.neg() : magnitude;
}

/**
 * The value rounded to `digits` significant digits, half away from zero (the rule of
 * Number.prototype.toPrecision, applied here to the exact value): value ≈ mantissa × 10^exponent,
 * with |mantissa| a `digits`-digit integer (0 for zero).
 */
export function roundSignificant(value: Rational, digits: number): { mantissa: bigint; exponent: number } {
  if (value.isZero()) return { mantissa: 0n, exponent: 0 };
  const numerator = abs(value.num);
  const { den } = value;
  // 10^e ≤ |value| < 10^(e+1): e is one of two candidates given by the digit counts.
  let e = numerator.toString().length - den.toString().length;
  if (compareWithPowerOfTen(numerator, den, e) < 0) e--;
  let shift = digits - 1 - e;
  const scaledNum = shift >= 0 ? numerator * 10n ** BigInt(shift) : numerator;
  const scaledDen = shift >= 0 ? den : den * 10n ** BigInt(-shift);
  let mantissa = scaledNum / scaledDen;
  if (2n * (scaledNum % scaledDen) >= scaledDen) mantissa++;
  if (mantissa === 10n ** BigInt(digits)) {
    mantissa /= 10n;
    shift--;
  }
  // 0 - 0 is -0 in JavaScript; the exponent is an integer, so normalise it.
  return { mantissa: value.num < 0n ? -mantissa : mantissa, exponent: shift === 0 ? 0 : -shift };
}

/** Sign of numerator/den − 10^e. */
function compareWithPowerOfTen(numerator: bigint, den: bigint, e: number): number {
  const left = e >= 0 ? numerator : numerator * 10n ** BigInt(-e);
  const right = e >= 0 ? den * 10n ** BigInt(e) : den;
  return left === right ? 0 : left < right ? -1 : 1;
}

/** The value rounded to `digits` significant digits, then to the nearest double (±Infinity on overflow). */
export function toRoundedNumber(value: Rational, digits = 15): number {
  const { mantissa, exponent } = roundSignificant(value, digits);
  return Number(`${mantissa}e${exponent}`);
}
