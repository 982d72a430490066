import { CanonicalCaches, CanonicalWriter, type Json } from "./canonical.ts";
import { ArrayKeyIndex, isArrayKeyValue, LCS_MAX_ITEMS } from "./schema.ts";

export type ArrayMode = "index" | "lcs" | "key";

/** One RFC 6902 operation with the value it removes or replaces (`previous`). */
export class Edit {
  constructor(
    readonly op: "add" | "remove" | "replace",
    readonly path: string,
    /** add, replace: the new value (a subtree of `after`, shared, never copied). */
    readonly value: Json | undefined,
    /** remove, replace: the old value (a subtree of `before`). */
    readonly previous: Json | undefined,
  ) {}
}

export interface DiffResult {
  edits: Edit[];
  /** RFC 8785 canonical form of before, as UTF-8. */
  before: Uint8Array;
  /** RFC 8785 canonical form of after, as UTF-8. */
  after: Uint8Array;
}

type JsonObject = { [key: string]: Json };

/** RFC 6901: `~` → `~0`, `/` → `~1`. */
export const escapeToken = (key: string): string =>
  key.indexOf("~") === -1 && key.indexOf("/") === -1 ? key : key.replaceAll("~", "~0").replaceAll("/", "~1");

const isObject = (value: Json): value is JsonObject =>
  typeof value === "object" && value !== null && !Array.isArray(value);

/**
 * The edits that turn `before` into `after`, in the documented order:
 * - a depth-first walk; the members of an object in RFC 8785 key order (UTF-16 code units) over
 *   the union of both key sets: a member only in before is removed, only in after added, in both
 *   compared;
 * - an array is walked from index 0 upward. Where items of before are dropped (a gap), they are
 *   removed from the last one backward, then the new items of after are added in order. Every path
 *   is the position at the moment its operation applies, so operations apply in sequence;
 * - values of different types, or different scalars, are one replace of the whole value.
 *
 * The same walk writes the RFC 8785 canonical bytes of both documents (it visits members in
 * canonical order anyway): what the two share is written once and block-copied into the other,
 * instead of serializing each document in a walk of its own. The caller checks the edits
 * independently (applies them to before and compares the result with after).
 *
 * Input must have passed JsonDiffRequest (depth, key rules, lcs bounds): recursion follows the
 * documents' depth, which the request limits.
 */
export function diffJson(before: Json, after: Json, arrayMode: ArrayMode, arrayKey?: string): DiffResult {
  const differ = new Differ(arrayMode, arrayKey);
  differ.value(before, after);
  differ.syncAfter();
  return { edits: differ.edits, before: differ.a.bytes(), after: differ.b.bytes() };
}

class Differ {
  readonly edits: Edit[] = [];
  private readonly caches = new CanonicalCaches();
  /** Canonical bytes of before; content common to both documents is written here first... */
  readonly a = new CanonicalWriter(this.caches, 1 << 14);
  /** ... and copied to after's bytes in blocks, up to `synced` (a position in `a`). */
  readonly b = new CanonicalWriter(this.caches, 1 << 14);
  private synced = 0;
  /** The path of the value being compared, as unescaped tokens; a pointer is built only for an edit. */
  private readonly tokens: (string | number)[] = [];

  constructor(
    private readonly arrayMode: ArrayMode,
    private readonly arrayKey: string | undefined,
  ) {}

  /** Copies the common content written to `a` since the last copy into `b`. */
  syncAfter(): void {
    const end = this.a.length;
    if (end > this.synced) {
      this.b.copyFrom(this.a, this.synced, end);
      this.synced = end;
    }
  }

  private onlyBefore(write: (a: CanonicalWriter) => void): void {
    this.syncAfter();
    write(this.a);
    this.synced = this.a.length;
  }

  private onlyAfter(write: (b: CanonicalWriter) => void): void {
    this.syncAfter();
    write(this.b);
  }

  /** The separator before the next member/item, given how many each document has written so far. */
  private separator(beforeCount: number, afterCount: number): void {
    if (beforeCount > 0 && afterCount > 0) this.a.byte(0x2c);
    else if (beforeCount > 0) this.onlyBefore((a) => a.byte(0x2c));
    else if (afterCount > 0) this.onlyAfter((b) => b.byte(0x2c));
  }

  private pointer(last?: string | number): string {
    let pointer = "";
    for (const token of this.tokens) pointer += `/${typeof token === "number" ? token : escapeToken(token)}`;
    if (last !== undefined) pointer += `/${typeof last === "number" ? last : escapeToken(last)}`;
    return pointer;
  }

  private child(token: string | number, x: Json, y: Json): void {
    this.tokens.push(token);
    this.value(x, y);
    this.tokens.pop();
  }

  value(x: Json, y: Json): void {
    if (x === y) {
      this.a.value(x);
      return;
    }
    if (typeof x === "object" && typeof y === "object" && x !== null && y !== null) {
      const xIsArray = Array.isArray(x);
      if (xIsArray && Array.isArray(y)) {
        this.array(x, y);
        return;
      }
      if (!xIsArray && !Array.isArray(y)) {
        this.object(x as JsonObject, y as JsonObject);
        return;
      }
    }
    this.edits.push(new Edit("replace", this.pointer(), y, x));
    this.onlyBefore((a) => a.value(x));
    this.onlyAfter((b) => b.value(y));
  }

  private object(x: JsonObject, y: JsonObject): void {
    const xShape = this.caches.shape(x);
    const yShape = this.caches.shape(y);
    const a = this.a;
    a.byte(0x7b);
    if (xShape === yShape) {
      // Same members in the same order: the values line up by position.
      const { sorted, names, order } = xShape;
      const xValues = Object.values(x);
      const yValues = Object.values(y);
      for (let i = 0; i < sorted.length; i++) {
        if (i > 0) a.byte(0x2c);
        a.raw(names[i] as Uint8Array);
        const xValue = xValues[order[i] as number] as Json;
        const yValue = yValues[order[i] as number] as Json;
        if (xValue === yValue) a.value(xValue);
        else this.child(sorted[i] as string, xValue, yValue);
      }
    } else if (sameStrings(xShape.sorted, yShape.sorted)) {
      const { sorted, names } = xShape;
      for (let i = 0; i < sorted.length; i++) {
        const key = sorted[i] as string;
        if (i > 0) a.byte(0x2c);
        a.raw(names[i] as Uint8Array);
        const xValue = x[key] as Json;
        const yValue = y[key] as Json;
        if (xValue === yValue) a.value(xValue);
        else this.child(key, xValue, yValue);
      }
    } else {
      const xKeys = xShape.sorted;
      const yKeys = yShape.sorted;
      let i = 0;
      let j = 0;
      while (i < xKeys.length || j < yKeys.length) {
        const xKey = xKeys[i];
        const yKey = yKeys[j];
        if (yKey === undefined || (xKey !== undefined && xKey < yKey)) {
          const key = xKey as string;
          const name = xShape.names[i] as Uint8Array;
          this.edits.push(new Edit("remove", this.pointer(key), undefined, x[key]));
          this.onlyBefore((before) => {
            if (i > 0) before.byte(0x2c);
            before.raw(name);
            before.value(x[key] as Json);
          });
          i++;
        } else if (xKey === undefined || yKey < xKey) {
          const name = yShape.names[j] as Uint8Array;
          this.edits.push(new Edit("add", this.pointer(yKey), y[yKey], undefined));
          this.onlyAfter((after) => {
            if (j > 0) after.byte(0x2c);
            after.raw(name);
            after.value(y[yKey] as Json);
          });
          j++;
        } else {
          this.separator(i, j);
          a.raw(xShape.names[i] as Uint8Array);
          this.child(xKey, x[xKey] as Json, y[yKey] as Json);
          i++;
          j++;
        }
      }
    }
    a.byte(0x7d);
  }

  private array(x: Json[], y: Json[]): void {
    this.a.byte(0x5b);
    if (this.arrayMode === "lcs") this.aligned(x, y, lcsAnchors(x, y, this.caches, this.pointer()), true);
    else if (this.arrayMode === "key" && x.every(isObject) && y.every(isObject)) {
      this.aligned(x, y, keyAnchors(x, y, this.arrayKey as string, this.pointer()), false);
    } else {
      const common = Math.min(x.length, y.length);
      for (let i = 0; i < common; i++) {
        if (i > 0) this.a.byte(0x2c);
        const xItem = x[i] as Json;
        const yItem = y[i] as Json;
        if (xItem === yItem) this.a.value(xItem);
        else this.child(i, xItem, yItem);
      }
      this.gap(x, y, common, x.length, common, y.length, common);
    }
    this.a.byte(0x5d);
  }

  /**
   * Walks an alignment: anchors are pairs (i in x, j in y), increasing in both, kept in place and
   * compared. Between anchors lie gaps; with `pairGaps` (lcs) the items of a gap are first compared
   * pairwise in order, the surplus removed or added.
   */
  private aligned(x: Json[], y: Json[], anchors: Anchors, pairGaps: boolean): void {
    let i = 0;
    let j = 0;
    let position = 0;
    for (let k = 0; k <= anchors.a.length; k++) {
      const nextI = k < anchors.a.length ? (anchors.a[k] as number) : x.length;
      const nextJ = k < anchors.b.length ? (anchors.b[k] as number) : y.length;
      if (pairGaps) {
        const paired = Math.min(nextI - i, nextJ - j);
        for (let t = 0; t < paired; t++) {
          this.separator(i, j);
          this.child(position++, x[i++] as Json, y[j++] as Json);
        }
      }
      position = this.gap(x, y, i, nextI, j, nextJ, position);
      if (k === anchors.a.length) return;
      this.separator(nextI, nextJ);
      // lcs anchors have equal canonical bytes (that is how they were matched): nothing to compare inside.
      if (pairGaps) this.a.value(x[nextI] as Json);
      else this.child(position, x[nextI] as Json, y[nextJ] as Json);
      position++;
      i = nextI + 1;
      j = nextJ + 1;
    }
  }

  /**
   * Items x[fromI, toI) are dropped and y[fromJ, toJ) inserted at `position` of the array being
   * patched; returns the position after them. Removals go from the last one backward.
   */
  private gap(
    x: Json[],
    y: Json[],
    fromI: number,
    toI: number,
    fromJ: number,
    toJ: number,
    position: number,
  ) {
    if (toI > fromI) {
      for (let i = toI - 1; i >= fromI; i--) {
        this.edits.push(new Edit("remove", this.pointer(position + i - fromI), undefined, x[i]));
      }
      this.onlyBefore((a) => {
        for (let i = fromI; i < toI; i++) {
          if (i > 0) a.byte(0x2c);
          a.value(x[i] as Json);
        }
      });
    }
    if (toJ > fromJ) {
      for (let j = fromJ; j < toJ; j++)
        this.edits.push(new Edit("add", this.pointer(position++), y[j], undefined));
      this.onlyAfter((b) => {
        for (let j = fromJ; j < toJ; j++) {
          if (j > 0) b.byte(0x2c);
          b.value(y[j] as Json);
        }
      });
    }
    return position;
  }
}

function sameStrings(a: readonly string[], b: readonly string[]): boolean {
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false;
  return true;
}

/** Pairs of positions (a[k] in before, b[k] in after), strictly increasing in both. */
interface Anchors {
  a: number[];
  b: number[];
}

/**
 * arrayMode "key": items with the same key value are the same item. A longest run of them that
 * kept its relative order stays in place (a longest increasing subsequence, found by patience
 * sorting, deterministic); an item that moved relative to it is removed and added again.
 */
function keyAnchors(x: JsonObject[], y: JsonObject[], key: string, pointer: string): Anchors {
  const positionInX = new ArrayKeyIndex();
  x.forEach((item, index) => {
    const id = item[key];
    if (!isArrayKeyValue(id) || positionInX.get(id) !== undefined) throw unvalidated(`${pointer}/${index}`);
    positionInX.set(id, index);
  });
  const sequence = new Int32Array(y.length);
  const seen = new ArrayKeyIndex();
  y.forEach((item, index) => {
    const id = item[key];
    if (!isArrayKeyValue(id) || seen.get(id) !== undefined) throw unvalidated(`${pointer}/${index}`);
    seen.set(id, index);
    sequence[index] = positionInX.get(id) ?? -1;
  });
  return longestIncreasing(sequence);
}

/** Longest strictly increasing subsequence of the non-negative entries (patience sorting), O(n log n). */
function longestIncreasing(sequence: Int32Array): Anchors {
  const tails = new Int32Array(sequence.length);
  const previous = new Int32Array(sequence.length);
  let length = 0;
  for (let j = 0; j < sequence.length; j++) {
    const value = sequence[j] as number;
    if (value < 0) continue;
    let lo = 0;
    let hi = length;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if ((sequence[tails[mid] as number] as number) < value) lo = mid + 1;
      else hi = mid;
    }
    previous[j] = lo > 0 ? (tails[lo - 1] as number) : -1;
    tails[lo] = j;
    if (lo === length) length++;
  }
  const anchors: Anchors = { a: new Array(length), b: new Array(length) };
  for (let k = length - 1, j = length > 0 ? (tails[length - 1] as number) : -1; k >= 0; k--) {
    anchors.a[k] = sequence[j] as number;
    anchors.b[k] = j;
    j = previous[j] as number;
  }
  return anchors;
}

/**
 * arrayMode "lcs": a longest common subsequence of equal items (equal canonical forms) stays in
 * place. Common head and tail are matched first, the rest by dynamic programming over at most
 * LCS_MAX_ITEMS² cells (the request schema bounds the lengths and the total work).
 */
function lcsAnchors(x: Json[], y: Json[], caches: CanonicalCaches, pointer: string): Anchors {
  if (x.length > LCS_MAX_ITEMS || y.length > LCS_MAX_ITEMS) throw unvalidated(pointer);
  const ids = new Map<string, number>();
  const scratch = new CanonicalWriter(caches, 256);
  const idOf = (item: Json) => {
    const start = scratch.length;
    scratch.value(item);
    const bytes = scratch.bytes();
    const text = Buffer.from(bytes.buffer, bytes.byteOffset + start, bytes.length - start).toString("latin1");
    let id = ids.get(text);
    if (id === undefined) {
      id = ids.size;
      ids.set(text, id);
    }
    return id;
  };
  const xs = Int32Array.from(x, idOf);
  const ys = Int32Array.from(y, idOf);
  const anchors: Anchors = { a: [], b: [] };
  let head = 0;
  while (head < xs.length && head < ys.length && xs[head] === ys[head]) {
    anchors.a.push(head);
    anchors.b.push(head);
    head++;
  }
  let tail = 0;
  while (
    tail < xs.length - head &&
    tail < ys.length - head &&
    xs[xs.length - 1 - tail] === ys[ys.length - 1 - tail]
  ) {
    tail++;
  }
  const n = xs.length - head - tail;
  const m = ys.length - head - tail;
  if (n > 0 && m > 0) {
    // table[i * width + j]: LCS length of xs[head + i ..] and ys[head + j ..] (the middle part only).
    const width = m + 1;
    const table = new Uint16Array((n + 1) * width);
    for (let i = n - 1; i >= 0; i--) {
      const xi = xs[head + i];
      for (let j = m - 1; j >= 0; j--) {
        const cell = i * width + j;
        if (xi === ys[head + j]) table[cell] = (table[cell + width + 1] as number) + 1;
        else table[cell] = Math.max(table[cell + width] as number, table[cell + 1] as number);
      }
    }
    let i = 0;
    let j = 0;
    while (i < n && j < m) {
      if (xs[head + i] === ys[head + j]) {
        anchors.a.push(head + i++);
        anchors.b.push(head + j++);
      } else if ((table[(i + 1) * width + j] as number) >= (table[i * width + j + 1] as number)) i++;
      else j++;
    }
  }
  for (let k = tail; k > 0; k--) {
    anchors.a.push(xs.length - k);
    anchors.b.push(ys.length - k);
  }
  return anchors;
}

/** The request schema rejects these inputs before payment; reaching here means it was skipped. */
const unvalidated = (pointer: string) =>
  new Error(`json-diff input at ${pointer || "(root)"} was not validated with JsonDiffRequest`);
