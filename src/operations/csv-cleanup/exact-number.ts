/**
 * A JSON number kept exactly as the request wrote it: one a double cannot carry (9007199254740993,
 * a 19-digit id, 0.1000000000000000055511151231257827) or whose spelling a double would change
 * (1.50, 1e3, -0). Cells hold one in place of the number, and the answer writes the lexeme back.
 */
export class ExactNumber {
  constructor(readonly lexeme: string) {}

  /** For the request's identity (the payment gate hashes the input): the lexeme itself. */
  toJSON(): string {
    return this.lexeme;
  }
}

/** The number as written: the lexeme of an ExactNumber, or the shortest spelling of a double (which JSON.parse read exactly). */
export const lexemeOf = (value: number | ExactNumber): string =>
  typeof value === "number" ? JSON.stringify(value) : value.lexeme;

const NUMBER = /^(-?)(\d+)(?:\.(\d+))?(?:[eE]([+-]?\d+))?$/;

/**
 * The exact decimal value of a JSON number as a key: digits without leading or trailing zeros and a
 * power of ten, so 1, 1.0, 1e0 and 10e-1 are one value, and 9007199254740993 differs from
 * 9007199254740992. Zero of either sign is "0".
 */
export function decimalKey(value: number | ExactNumber): string {
  const match = NUMBER.exec(lexemeOf(value));
  if (!match) return `?${lexemeOf(value)}`;
  const [, sign, whole, fraction = "", exponent = "0"] = match;
  let digits = (whole as string) + fraction;
  let power = Number(exponent) - fraction.length;
  let start = 0;
  while (start < digits.length - 1 && digits.charCodeAt(start) === 0x30) start++;
  digits = digits.slice(start);
  if (digits === "0") return "0";
  let end = digits.length;
  while (digits.charCodeAt(end - 1) === 0x30) end--;
  power += digits.length - end;
  return `${sign}${digits.slice(0, end)}e${power}`;
}

/**
 * JSON text that may hold a number whose lexeme a double does not reproduce: 16 or more digits
 * (dots between them allowed), an exponent, a fraction ending in 0, six zeros after a dot, or -0.
 * Most bodies hold none and skip the scan.
 */
const MAY_BE_INEXACT = /\d[\d.]{15,}|\d[eE]|\.\d*0(?!\d)|\.0{6}|-0(?![.\d])/;

/**
 * Replaces, in the value JSON.parse made of `text`, every number whose lexeme JSON.stringify would
 * not give back by an ExactNumber of that lexeme. One scan over the text (already known to be valid
 * JSON without duplicate member names), following the parsed containers; strings are skipped with
 * indexOf. Returns how many numbers were kept as written.
 */
export function keepNumberLexemes(text: string, root: unknown): number {
  if (!MAY_BE_INEXACT.test(text)) return 0;
  const containers: Record<string, unknown>[] = [];
  const keys: (string | number)[] = [];
  const isArray: boolean[] = [];
  let expectKey = false;
  let kept = 0;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c === 0x22 /* " */) {
      const end = stringEnd(text, i);
      if (expectKey) {
        const raw = text.slice(i + 1, end);
        keys[keys.length - 1] =
          raw.indexOf("\\") === -1 ? raw : (JSON.parse(text.slice(i, end + 1)) as string);
        expectKey = false;
      }
      i = end;
    } else if (c === 0x7b /* { */ || c === 0x5b /* [ */) {
      const top = containers.length - 1;
      const container = top < 0 ? root : (containers[top] as Record<string, unknown>)[String(keys[top])];
      containers.push(container as Record<string, unknown>);
      isArray.push(c === 0x5b);
      keys.push(c === 0x5b ? 0 : "");
      expectKey = c === 0x7b;
    } else if (c === 0x7d /* } */ || c === 0x5d /* ] */) {
      containers.pop();
      keys.pop();
      isArray.pop();
      expectKey = false;
    } else if (c === 0x2c /* , */) {
      const top = keys.length - 1;
      if (isArray[top]) keys[top] = (keys[top] as number) + 1;
      else expectKey = true;
    } else if (c === 0x2d /* - */ || (c >= 0x30 && c <= 0x39)) {
      let end = i + 1;
      while (end < text.length && isNumberChar(text.charCodeAt(end))) end++;
      const lexeme = text.slice(i, end);
      const top = containers.length - 1;
      if (top >= 0 && JSON.stringify(Number(lexeme)) !== lexeme) {
        const key = String(keys[top]);
        Object.defineProperty(containers[top], key, {
          value: new ExactNumber(lexeme),
          writable: true,
          enumerable: true,
          configurable: true,
        });
        kept++;
      }
      i = end - 1;
    }
  }
  return kept;
}

const isNumberChar = (c: number) =>
  (c >= 0x30 && c <= 0x39) || c === 0x2e || c === 0x65 || c === 0x45 || c === 0x2b || c === 0x2d;

/** Index of the quote that closes the string opening at `start`. */
function stringEnd(text: string, start: number): number {
  let end = start;
  for (;;) {
    end = text.indexOf('"', end + 1);
    let backslashes = 0;
    while (text.charCodeAt(end - 1 - backslashes) === 0x5c) backslashes++;
    if (backslashes % 2 === 0) return end;
  }
}
