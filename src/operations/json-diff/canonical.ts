import { createHash } from "node:crypto";

/** A value JSON.parse can produce. */
export type Json = null | boolean | number | string | Json[] | { [key: string]: Json };

/** Member names of one object shape: in the object's order, sorted (RFC 8785), and the sorted names' bytes. */
export interface Shape {
  keys: string[];
  sorted: string[];
  /** `"name":` as UTF-8, for each name of `sorted`. */
  names: Uint8Array[];
  /** order[i]: the position in `keys` (and in Object.values) of sorted[i]. */
  order: number[];
}

/**
 * What serializing one request's documents can reuse: the sorted member names of each object shape
 * (documents repeat a few shapes many times) and the UTF-8 bytes of each name. One per request,
 * so nothing grows across requests.
 */
export class CanonicalCaches {
  private readonly names = new Map<string, Uint8Array>();
  private readonly shapes = new Map<string, Shape[]>();

  /** The object's member names in RFC 8785 order (sorted by UTF-16 code units), with their bytes. */
  shape(object: object): Shape {
    const keys = Object.keys(object);
    if (keys.length === 0) return EMPTY_SHAPE;
    const first = keys[0] as string;
    let shapes = this.shapes.get(first);
    if (shapes === undefined) {
      shapes = [];
      this.shapes.set(first, shapes);
    } else {
      for (const shape of shapes) if (sameStrings(shape.keys, keys)) return shape;
    }
    const order = keys.map((_, index) => index);
    if (keys.length > 1) order.sort((a, b) => ((keys[a] as string) < (keys[b] as string) ? -1 : 1));
    const sorted = order.map((index) => keys[index] as string);
    const shape = { keys, sorted, names: sorted.map((name) => this.nameBytes(name)), order };
    // Bounded: a document of unique shapes (a dictionary of records) pays a few comparisons per object.
    if (shapes.length < 8) shapes.push(shape);
    return shape;
  }

  /** `"name":` as UTF-8. */
  nameBytes(name: string): Uint8Array {
    let bytes = this.names.get(name);
    if (bytes === undefined) {
      const writer = new CanonicalWriter(this, name.length * 6 + 3);
      writer.string(name);
      writer.byte(0x3a);
      bytes = writer.bytes().slice();
      this.names.set(name, bytes);
    }
    return bytes;
  }
}

const EMPTY_SHAPE: Shape = { keys: [], sorted: [], names: [], order: [] };

function sameStrings(a: readonly string[], b: readonly string[]): boolean {
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false;
  return true;
}

const HEX = "0123456789abcdef";

/** The ASCII digits of 0..9999, four bytes per number, and how many of them each uses. */
const SMALL_INTEGERS = 10000;
const SMALL_INTEGER_DIGITS = new Uint8Array(SMALL_INTEGERS * 4);
const SMALL_INTEGER_LENGTHS = new Uint8Array(SMALL_INTEGERS);
for (let n = 0; n < SMALL_INTEGERS; n++) {
  const digits = String(n);
  SMALL_INTEGER_LENGTHS[n] = digits.length;
  for (let i = 0; i < digits.length; i++) SMALL_INTEGER_DIGITS[n * 4 + i] = digits.charCodeAt(i);
}

/**
 * Writes RFC 8785 (JCS) canonical JSON as UTF-8 bytes: members sorted by UTF-16 code units,
 * numbers in ECMAScript shortest form (`1.0`, `1e0` and `1` are one number; -0 is 0), strings
 * escaped exactly as JSON.stringify escapes them. Byte for byte the output of the `canonicalize`
 * package (src/canonical-json.ts), about five times faster on large documents because it writes
 * bytes instead of concatenating millions of small strings.
 *
 * Preconditions (the request schema checks them): no lone surrogates, finite numbers, and
 * nesting bounded by the request limit, which bounds the recursion.
 */
export class CanonicalWriter {
  private buffer: Uint8Array;
  private position = 0;

  constructor(
    readonly caches: CanonicalCaches = new CanonicalCaches(),
    initialSize = 1 << 16,
  ) {
    this.buffer = new Uint8Array(Math.max(16, initialSize));
  }

  get length(): number {
    return this.position;
  }

  /** Forgets what was written; the buffer is kept for the next use. */
  reset(): void {
    this.position = 0;
  }

  /** A view of the bytes written so far (valid until the next write). */
  bytes(): Uint8Array {
    return this.buffer.subarray(0, this.position);
  }

  private reserve(count: number): void {
    if (this.position + count <= this.buffer.length) return;
    let size = this.buffer.length * 2;
    while (size < this.position + count) size *= 2;
    const grown = new Uint8Array(size);
    grown.set(this.buffer.subarray(0, this.position));
    this.buffer = grown;
  }

  byte(code: number): void {
    if (this.position === this.buffer.length) this.reserve(1);
    this.buffer[this.position++] = code;
  }

  /** Text known to be ASCII without escapes (numbers, literals). */
  ascii(text: string): void {
    const length = text.length;
    this.reserve(length);
    const buffer = this.buffer;
    let p = this.position;
    for (let i = 0; i < length; i++) buffer[p++] = text.charCodeAt(i);
    this.position = p;
  }

  string(text: string): void {
    const length = text.length;
    this.reserve(length * 6 + 2);
    const buffer = this.buffer;
    let p = this.position;
    buffer[p++] = 0x22;
    for (let i = 0; i < length; i++) {
      const c = text.charCodeAt(i);
      if (c < 0x80) {
        if (c >= 0x20 && c !== 0x22 && c !== 0x5c) buffer[p++] = c;
        else p = writeEscape(buffer, p, c);
      } else if (c < 0x800) {
        buffer[p++] = 0xc0 | (c >> 6);
        buffer[p++] = 0x80 | (c & 0x3f);
      } else if (c >= 0xd800 && c <= 0xdfff) {
        const low = text.charCodeAt(i + 1);
        if (c > 0xdbff || !(low >= 0xdc00 && low <= 0xdfff))
          throw new TypeError("lone surrogate in a string");
        const point = ((c - 0xd800) << 10) + (low - 0xdc00) + 0x10000;
        buffer[p++] = 0xf0 | (point >> 18);
        buffer[p++] = 0x80 | ((point >> 12) & 0x3f);
        buffer[p++] = 0x80 | ((point >> 6) & 0x3f);
        buffer[p++] = 0x80 | (point & 0x3f);
        i++;
      } else {
        buffer[p++] = 0xe0 | (c >> 12);
        buffer[p++] = 0x80 | ((c >> 6) & 0x3f);
        buffer[p++] = 0x80 | (c & 0x3f);
      }
    }
    buffer[p++] = 0x22;
    this.position = p;
  }

  /** Appends bytes as they are: a member's `"name":` (see CanonicalCaches) or other fixed text. */
  raw(bytes: Uint8Array): void {
    const length = bytes.length;
    this.reserve(length);
    const buffer = this.buffer;
    let p = this.position;
    for (let i = 0; i < length; i++) buffer[p++] = bytes[i] as number;
    this.position = p;
  }

  /** ECMAScript Number::toString is the RFC 8785 form of a finite number; -0 is "0". */
  number(value: number): void {
    if (value >= 0 && value < SMALL_INTEGERS && (value | 0) === value) {
      // Small integers are most numbers in documents; String() allocates for each.
      const length = SMALL_INTEGER_LENGTHS[value] as number;
      this.reserve(4);
      const buffer = this.buffer;
      let p = this.position;
      for (let i = value * 4, end = i + length; i < end; i++) buffer[p++] = SMALL_INTEGER_DIGITS[i] as number;
      this.position = p;
    } else this.ascii(String(value));
  }

  /** A scalar or a whole subtree. */
  value(value: Json): void {
    switch (typeof value) {
      case "string":
        this.string(value);
        return;
      case "number":
        this.number(value);
        return;
      case "boolean":
        this.ascii(value ? "true" : "false");
        return;
    }
    if (value === null) this.ascii("null");
    else if (Array.isArray(value)) {
      this.byte(0x5b);
      for (let i = 0; i < value.length; i++) {
        if (i > 0) this.byte(0x2c);
        this.value(value[i] as Json);
      }
      this.byte(0x5d);
    } else {
      const { names, order } = this.caches.shape(value);
      // Object.values is in the order of Object.keys, which `order` maps to sorted positions.
      const values = Object.values(value);
      this.byte(0x7b);
      for (let i = 0; i < order.length; i++) {
        if (i > 0) this.byte(0x2c);
        this.raw(names[i] as Uint8Array);
        this.value(values[order[i] as number] as Json);
      }
      this.byte(0x7d);
    }
  }

  /** Appends bytes [start, end) of another writer. */
  copyFrom(source: CanonicalWriter, start: number, end: number): void {
    const count = end - start;
    if (count <= 0) return;
    this.reserve(count);
    if (count > 64) this.buffer.set(source.buffer.subarray(start, end), this.position);
    else {
      const from = source.buffer;
      const to = this.buffer;
      let p = this.position;
      for (let i = start; i < end; i++) to[p++] = from[i] as number;
    }
    this.position += count;
  }
}

function writeEscape(buffer: Uint8Array, p: number, c: number): number {
  buffer[p++] = 0x5c;
  switch (c) {
    case 0x22:
      buffer[p++] = 0x22;
      return p;
    case 0x5c:
      buffer[p++] = 0x5c;
      return p;
    case 0x08:
      buffer[p++] = 0x62;
      return p;
    case 0x09:
      buffer[p++] = 0x74;
      return p;
    case 0x0a:
      buffer[p++] = 0x6e;
      return p;
    case 0x0c:
      buffer[p++] = 0x66;
      return p;
    case 0x0d:
      buffer[p++] = 0x72;
      return p;
  }
  buffer[p++] = 0x75;
  buffer[p++] = 0x30;
  buffer[p++] = 0x30;
  buffer[p++] = HEX.charCodeAt(c >> 4);
  buffer[p++] = HEX.charCodeAt(c & 0xf);
  return p;
}

/** The RFC 8785 canonical form of a value as UTF-8 bytes. */
export function canonicalBytes(value: Json, caches?: CanonicalCaches): Uint8Array {
  const writer = new CanonicalWriter(caches);
  writer.value(value);
  return writer.bytes();
}

/** The RFC 8785 canonical form as text. */
export const canonicalText = (value: Json): string => Buffer.from(canonicalBytes(value)).toString("utf8");

/** `sha256:<hex>` of bytes. */
export const sha256 = (bytes: Uint8Array): string =>
  `sha256:${createHash("sha256").update(bytes).digest("hex")}`;

/** `sha256:<hex>` over the RFC 8785 canonical form: key order and number spelling never change it. */
export const canonicalHash = (value: Json): string => sha256(canonicalBytes(value));
