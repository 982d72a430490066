import { CanonicalCaches, CanonicalWriter, type Json } from "./canonical.ts";
import { ArrayKeyIndex, isArrayKeyValue, LCS_MAX_ITEMS } from "./schema.ts";

export type ArrayMode = "index" | "lcs" | "key";
export type EditOp = "add" | "remove" | "replace" | "move" | "copy" | "test";

/** One RFC 6902 operation with the value it removes or replaces (`previous`). */
export class Edit {
  constructor(
    readonly op: EditOp,
    readonly path: string,
    /** add, replace, test: the value (a subtree of a document, shared, never copied); copy: the value copied. */
    readonly value: Json | undefined,
    /** remove, replace: the old value (a subtree of `before`). */
    readonly previous: Json | undefined,
    /** move, copy: where the value comes from. */
    readonly from?: string,
  ) {}
}

export interface DiffOptions {
  arrayMode: ArrayMode;
  arrayKey?: string;
  /** Emit move (an item that changed place) and copy (a value the document already holds) where shorter. */
  moves: boolean;
  /** Precede every remove, replace and move with a test of the old value. */
  testOldValues: boolean;
}

/** A copy is worth it only for values at least this long (canonical bytes); shorter ones are added. */
const COPY_MIN_BYTES = 48;
/** Copy sources remembered per byte length: bounds the comparisons an add can cost. */
const COPY_SOURCES_PER_LENGTH = 4;

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
export function diffJson(before: Json, after: Json, options: DiffOptions): DiffResult {
  const differ = new Differ(options, new CanonicalCaches(), 1 << 14);
  differ.value(before, after);
  differ.syncAfter();
  return { edits: differ.edits, before: differ.a.bytes(), after: differ.b.bytes() };
}

/** A value already in the patched document at `pointer`, whose path no later operation changes. */
interface CopySource {
  writer: CanonicalWriter;
  start: number;
  pointer: string;
}

/**
 * How the items of an array that has moves are matched. matchOfY[j]: the index in before of after's
 * item j, or -1 (added). anchorOfY[j]: the item stays in place (a chain increasing in both arrays);
 * a matched item off the chain moves. equalOfY[j]: known equal (nothing to compare inside).
 */
interface MovePlan {
  matchOfY: Int32Array;
  anchorOfY: Uint8Array;
  equalOfY: Uint8Array;
  /** key mode: a move is guarded by a test of the item's key member; lcs: of the whole item. */
  guardKey: string | undefined;
}

class Differ {
  edits: Edit[] = [];
  /** Canonical bytes of before; content common to both documents is written here first... */
  readonly a: CanonicalWriter;
  /** ... and copied to after's bytes in blocks, up to `synced` (a position in `a`). */
  readonly b: CanonicalWriter;
  private synced = 0;
  /** The path of the value being compared, as unescaped tokens; a pointer is built only for an edit. */
  private tokens: (string | number)[] = [];
  /** > 0 inside an array whose items move: paths there change later, so nothing there is a copy source. */
  private unstable = 0;
  private readonly sources = new Map<number, CopySource[]>();
  /** Diffs one moved or paired item at a time, apart from the documents' canonical bytes. */
  private inner?: Differ;
  /** Tries the alternatives for one array (its edits are measured, then dropped). */
  private trial?: Differ;
  private scratch?: CanonicalWriter;

  constructor(
    private readonly options: DiffOptions,
    private readonly caches: CanonicalCaches,
    initialSize: number,
  ) {
    this.a = new CanonicalWriter(caches, initialSize);
    this.b = new CanonicalWriter(caches, initialSize);
  }

  /** The edits between two items, with paths relative to them (this differ's writers are scratch). */
  editsBetween(x: Json, y: Json): Edit[] {
    return this.editsOf(() => this.value(x, y));
  }

  /** Whether the array's edits with the moves of `plan` are shorter than those aligned without moves. */
  private shorter(x: Json[], y: Json[], plan: MovePlan, anchors: Anchors): boolean {
    this.trial ??= new Differ(this.options, this.caches, 256);
    const trial = this.trial;
    const withMoves = this.bytesOf(
      trial.editsOf(() => trial.moving(x, y, { ...plan, matchOfY: plan.matchOfY.slice() })),
    );
    const without = this.bytesOf(trial.editsOf(() => trial.aligned(x, y, anchors, true)));
    return withMoves < without;
  }

  private editsOf(run: () => void): Edit[] {
    this.a.reset();
    this.b.reset();
    this.synced = 0;
    this.edits = [];
    this.tokens = [];
    this.unstable = 1;
    run();
    return this.edits;
  }

  private bytesOf(edits: readonly Edit[]): number {
    const prefix = this.pointer().length;
    let bytes = 0;
    for (const edit of edits) {
      bytes += OP_BYTES[edit.op] + prefix + edit.path.length + this.sizeOf(edit.value);
      if (edit.from !== undefined) bytes += prefix + edit.from.length;
    }
    return bytes;
  }

  /** Canonical length of a value (for choosing the shorter patch). */
  private sizeOf(value: Json | undefined): number {
    if (value === undefined) return 0;
    this.scratch ??= new CanonicalWriter(this.caches, 256);
    this.scratch.reset();
    this.scratch.value(value);
    return this.scratch.length;
  }

  private push(edit: Edit): void {
    this.edits.push(edit);
  }

  private remove(path: string, previous: Json): void {
    if (this.options.testOldValues) this.push(new Edit("test", path, previous, undefined));
    this.push(new Edit("remove", path, undefined, previous));
  }

  private replace(path: string, value: Json, previous: Json): void {
    if (this.options.testOldValues) this.push(new Edit("test", path, previous, undefined));
    this.push(new Edit("replace", path, value, previous));
  }

  /** An add of a value whose canonical bytes are b[start, b.length): a copy when the document holds it. */
  private add(path: string, value: Json, start: number): void {
    const end = this.b.length;
    const source = this.copySource(start, end);
    if (source && end - start > source.pointer.length + 16) {
      this.push(new Edit("copy", path, value, undefined, source.pointer));
    } else this.push(new Edit("add", path, value, undefined));
    this.remember(this.b, start, path);
  }

  private copyable(): boolean {
    return this.unstable === 0 && this.options.moves && !this.options.testOldValues;
  }

  /** Remembers writer[start, length) as a copy source at `path` (default: the current path, plus `last`). */
  private remember(writer: CanonicalWriter, start: number, path?: string, last?: number): void {
    const length = writer.length - start;
    if (length < COPY_MIN_BYTES || !this.copyable()) return;
    let list = this.sources.get(length);
    if (list === undefined) {
      list = [];
      this.sources.set(length, list);
    }
    if (list.length < COPY_SOURCES_PER_LENGTH)
      list.push({ writer, start, pointer: path ?? this.pointer(last) });
  }

  private copySource(start: number, end: number): CopySource | undefined {
    const length = end - start;
    if (length < COPY_MIN_BYTES || !this.copyable()) return undefined;
    const list = this.sources.get(length);
    if (list === undefined) return undefined;
    const added = this.b.bytes();
    const wanted = Buffer.from(added.buffer, added.byteOffset + start, length);
    for (const source of list) {
      const bytes = source.writer.bytes();
      if (wanted.equals(Buffer.from(bytes.buffer, bytes.byteOffset + source.start, length))) return source;
    }
    return undefined;
  }

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
    const start = this.a.length;
    if (x === y) {
      this.a.value(x);
      this.remember(this.a, start);
      return;
    }
    if (typeof x === "object" && typeof y === "object" && x !== null && y !== null) {
      const xIsArray = Array.isArray(x);
      const edits = this.edits.length;
      if (xIsArray && Array.isArray(y)) {
        this.array(x, y);
        if (this.edits.length === edits) this.remember(this.a, start);
        return;
      }
      if (!xIsArray && !Array.isArray(y)) {
        this.object(x as JsonObject, y as JsonObject);
        if (this.edits.length === edits) this.remember(this.a, start);
        return;
      }
    }
    this.replace(this.pointer(), y, x);
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
          this.remove(this.pointer(key), x[key] as Json);
          this.onlyBefore((before) => {
            if (i > 0) before.byte(0x2c);
            before.raw(name);
            before.value(x[key] as Json);
          });
          i++;
        } else if (xKey === undefined || yKey < xKey) {
          const name = yShape.names[j] as Uint8Array;
          let start = 0;
          this.onlyAfter((after) => {
            if (j > 0) after.byte(0x2c);
            after.raw(name);
            start = after.length;
            after.value(y[yKey] as Json);
          });
          this.add(this.pointer(yKey), y[yKey] as Json, start);
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
    const { arrayMode, moves } = this.options;
    if (arrayMode === "lcs") {
      const { anchors, xs, ys } = lcsAnchors(x, y, this.caches, this.pointer());
      const plan = moves ? lcsMoves(xs, ys, anchors) : undefined;
      // Moving an equal item changes which items of a gap are compared in place: keep the moves
      // only where the array's patch comes out shorter with them.
      if (plan && this.shorter(x, y, plan, anchors)) this.moving(x, y, plan);
      else this.aligned(x, y, anchors, true);
    } else if (arrayMode === "key" && x.every(isObject) && y.every(isObject)) {
      const key = this.options.arrayKey as string;
      const { anchors, sequence } = keyAnchors(x, y, key, this.pointer());
      const plan = moves ? keyMoves(sequence, anchors, key) : undefined;
      if (plan) this.moving(x, y, plan);
      else this.aligned(x, y, anchors, false);
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
      if (pairGaps) {
        const start = this.a.length;
        this.a.value(x[nextI] as Json);
        this.remember(this.a, start, undefined, position);
      } else this.child(position, x[nextI] as Json, y[nextJ] as Json);
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
      for (let i = toI - 1; i >= fromI; i--) this.remove(this.pointer(position + i - fromI), x[i] as Json);
      this.onlyBefore((a) => {
        for (let i = fromI; i < toI; i++) {
          if (i > 0) a.byte(0x2c);
          a.value(x[i] as Json);
        }
      });
    }
    for (let j = fromJ; j < toJ; j++) {
      let start = 0;
      this.onlyAfter((b) => {
        if (j > 0) b.byte(0x2c);
        start = b.length;
        b.value(y[j] as Json);
      });
      this.add(this.pointer(position++), y[j] as Json, start);
    }
    return position;
  }

  /**
   * An array whose items move (see MovePlan). Its canonical bytes are written whole for each document;
   * the edits, in order: the dropped items of before removed from the last backward; then after's items
   * from index 0 up, each where it is at that moment: an item that stays is compared in place, one that
   * moves is moved to its place (then compared), a new one added. An order-statistics tree over the
   * final layout gives every position in O(log n).
   */
  private moving(x: Json[], y: Json[], plan: MovePlan): void {
    this.onlyBefore((a) => {
      for (let i = 0; i < x.length; i++) {
        if (i > 0) a.byte(0x2c);
        a.value(x[i] as Json);
      }
    });
    this.onlyAfter((b) => {
      for (let j = 0; j < y.length; j++) {
        if (j > 0) b.byte(0x2c);
        b.value(y[j] as Json);
      }
    });
    this.unstable++;
    const base = this.pointer();
    const { matchOfY, anchorOfY, equalOfY } = plan;
    this.inner ??= new Differ(this.options, this.caches, 256);
    const inner: (Edit[] | undefined)[] = new Array(y.length);
    for (let j = 0; j < y.length; j++) {
      const i = matchOfY[j] as number;
      if (i < 0 || equalOfY[j]) continue;
      const edits = this.inner.editsBetween(x[i] as Json, y[j] as Json);
      // A move plus the changes inside must be shorter than removing the item and adding it again.
      if (!anchorOfY[j] && edits.length > 0 && !this.shorterThanAdding(edits, x[i] as Json, y[j] as Json)) {
        matchOfY[j] = -1;
        continue;
      }
      inner[j] = edits;
    }
    const matchOfX = new Int32Array(x.length).fill(-1);
    for (let j = 0; j < y.length; j++) if ((matchOfY[j] as number) >= 0) matchOfX[matchOfY[j] as number] = j;
    for (let i = x.length - 1; i >= 0; i--) if (matchOfX[i] === -1) this.remove(`${base}/${i}`, x[i] as Json);

    // Slots of the final layout: before each anchor and after the last, the items placed there (in
    // after's order) and then the items of before still waiting to move (in before's order).
    const anchorsX: number[] = [];
    for (let j = 0; j < y.length; j++) if (anchorOfY[j]) anchorsX.push(matchOfY[j] as number);
    const placedCount = new Int32Array(anchorsX.length + 1);
    const waitingCount = new Int32Array(anchorsX.length + 1);
    const segmentOfY = new Int32Array(y.length);
    for (let j = 0, segment = 0; j < y.length; j++) {
      if (anchorOfY[j]) segment++;
      else {
        segmentOfY[j] = segment;
        placedCount[segment] = (placedCount[segment] as number) + 1;
      }
    }
    const segmentOfX = new Int32Array(x.length);
    for (let i = 0, segment = 0; i < x.length; i++) {
      const j = matchOfX[i] as number;
      if (j >= 0 && anchorOfY[j]) segment++;
      else if (j >= 0) {
        segmentOfX[i] = segment;
        waitingCount[segment] = (waitingCount[segment] as number) + 1;
      }
    }
    const segmentStart = new Int32Array(anchorsX.length + 2);
    for (let s = 0; s <= anchorsX.length; s++)
      segmentStart[s + 1] =
        (segmentStart[s] as number) + (placedCount[s] as number) + (waitingCount[s] as number) + 1;
    const slots = new OrderTree(segmentStart[anchorsX.length + 1] as number);
    const nextPlaced = segmentStart.slice(0, anchorsX.length + 1);
    const nextWaiting = Int32Array.from(nextPlaced, (start, s) => start + (placedCount[s] as number));
    const slotOfX = new Int32Array(x.length).fill(-1);
    for (let i = 0; i < x.length; i++) {
      const j = matchOfX[i] as number;
      if (j < 0 || anchorOfY[j]) continue;
      const segment = segmentOfX[i] as number;
      slotOfX[i] = nextWaiting[segment] as number;
      nextWaiting[segment] = (nextWaiting[segment] as number) + 1;
      slots.set(slotOfX[i] as number);
    }
    for (let k = 0; k < anchorsX.length; k++) slots.set((segmentStart[k + 1] as number) - 1);

    for (let j = 0, anchor = 0; j < y.length; j++) {
      let at: number;
      const i = matchOfY[j] as number;
      if (anchorOfY[j]) {
        at = slots.before((segmentStart[++anchor] as number) - 1);
      } else {
        const segment = segmentOfY[j] as number;
        const slot = nextPlaced[segment] as number;
        nextPlaced[segment] = slot + 1;
        if (i >= 0) {
          const from = slots.before(slotOfX[i] as number);
          slots.clear(slotOfX[i] as number);
          at = slots.before(slot);
          slots.set(slot);
          if (from !== at) {
            if (this.options.testOldValues) {
              const item = x[i] as JsonObject;
              const key = plan.guardKey;
              this.push(
                key === undefined
                  ? new Edit("test", `${base}/${from}`, item, undefined)
                  : new Edit("test", `${base}/${from}/${escapeToken(key)}`, item[key] as Json, undefined),
              );
            }
            this.push(new Edit("move", `${base}/${at}`, undefined, undefined, `${base}/${from}`));
          }
        } else {
          at = slots.before(slot);
          slots.set(slot);
          this.push(new Edit("add", `${base}/${at}`, y[j] as Json, undefined));
          continue;
        }
      }
      const edits = inner[j];
      if (edits === undefined) continue;
      const prefix = `${base}/${at}`;
      for (const edit of edits) {
        this.push(
          new Edit(
            edit.op,
            prefix + edit.path,
            edit.value,
            edit.previous,
            edit.from === undefined ? undefined : prefix + edit.from,
          ),
        );
      }
    }
    this.unstable--;
  }

  /**
   * Whether moving `before` and changing it by `edits` (paths relative to the item) is shorter in
   * bytes than removing it and adding `after` (guards included when the patch has them).
   */
  private shorterThanAdding(edits: readonly Edit[], before: Json, after: Json): boolean {
    const p = this.pointer().length + 2;
    const guard = this.options.testOldValues;
    const replacing =
      (guard ? OP_BYTES.test + p + this.sizeOf(before) : 0) +
      OP_BYTES.remove +
      p +
      OP_BYTES.add +
      p +
      this.sizeOf(after);
    let moving = (guard ? OP_BYTES.test + p + 8 : 0) + OP_BYTES.move + 2 * p;
    for (const edit of edits) {
      moving += OP_BYTES[edit.op] + p + edit.path.length + this.sizeOf(edit.value);
      if (edit.from !== undefined) moving += p + edit.from.length;
      if (moving >= replacing) return false;
    }
    return true;
  }
}

/** Bytes of each operation in a patch besides its pointers and value (`{"op":"add","path":"","value":}` and a comma). */
const OP_BYTES = { add: 31, remove: 26, replace: 35, test: 32, move: 33, copy: 33 };

/** Counts occupied slots before a slot (a Fenwick tree): positions in an array while its items move. */
class OrderTree {
  private readonly tree: Int32Array;

  constructor(readonly size: number) {
    this.tree = new Int32Array(size + 1);
  }

  private add(slot: number, delta: number): void {
    for (let i = slot + 1; i <= this.size; i += i & -i) this.tree[i] = (this.tree[i] as number) + delta;
  }

  set(slot: number): void {
    this.add(slot, 1);
  }

  clear(slot: number): void {
    this.add(slot, -1);
  }

  /** Occupied slots before `slot`: its index in the array. */
  before(slot: number): number {
    let count = 0;
    for (let i = slot; i > 0; i -= i & -i) count += this.tree[i] as number;
    return count;
  }
}

/** key mode: items matched by key; the longest run in order stays, the other matched items move. */
function keyMoves(sequence: Int32Array, anchors: Anchors, key: string): MovePlan | undefined {
  const anchorOfY = new Uint8Array(sequence.length);
  for (const j of anchors.b) anchorOfY[j] = 1;
  let moved = 0;
  for (let j = 0; j < sequence.length; j++) if ((sequence[j] as number) >= 0 && !anchorOfY[j]) moved++;
  if (moved === 0) return undefined;
  return {
    matchOfY: Int32Array.from(sequence),
    anchorOfY,
    equalOfY: new Uint8Array(sequence.length),
    guardKey: key,
  };
}

/**
 * lcs mode: the common subsequence stays; an item off it that equals one dropped elsewhere moves
 * there (first come, first matched); the rest of each gap is compared pairwise in place as before.
 */
function lcsMoves(xs: Int32Array, ys: Int32Array, anchors: Anchors): MovePlan | undefined {
  const matchOfY = new Int32Array(ys.length).fill(-1);
  const anchorOfY = new Uint8Array(ys.length);
  const equalOfY = new Uint8Array(ys.length);
  const matchedX = new Uint8Array(xs.length);
  for (let k = 0; k < anchors.a.length; k++) {
    const j = anchors.b[k] as number;
    matchOfY[j] = anchors.a[k] as number;
    anchorOfY[j] = 1;
    equalOfY[j] = 1;
    matchedX[anchors.a[k] as number] = 1;
  }
  const waiting = new Map<number, number[]>();
  for (let i = 0; i < xs.length; i++) {
    if (matchedX[i]) continue;
    const list = waiting.get(xs[i] as number);
    if (list) list.push(i);
    else waiting.set(xs[i] as number, [i]);
  }
  let moved = 0;
  for (let j = 0; j < ys.length; j++) {
    if (anchorOfY[j]) continue;
    const list = waiting.get(ys[j] as number);
    const i = list?.shift();
    if (i === undefined) continue;
    matchOfY[j] = i;
    equalOfY[j] = 1;
    matchedX[i] = 1;
    moved++;
  }
  if (moved === 0) return undefined;
  // Pair what is left of each gap in order, in place (they lie between the same two anchors).
  let i = 0;
  let j = 0;
  for (let k = 0; k <= anchors.a.length; k++) {
    const nextI = k < anchors.a.length ? (anchors.a[k] as number) : xs.length;
    const nextJ = k < anchors.b.length ? (anchors.b[k] as number) : ys.length;
    for (;;) {
      while (i < nextI && matchedX[i]) i++;
      while (j < nextJ && (matchOfY[j] as number) >= 0) j++;
      if (i >= nextI || j >= nextJ) break;
      matchOfY[j] = i;
      anchorOfY[j] = 1;
      matchedX[i] = 1;
    }
    i = nextI + 1;
    j = nextJ + 1;
  }
  return { matchOfY, anchorOfY, equalOfY, guardKey: undefined };
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
function keyAnchors(
  x: JsonObject[],
  y: JsonObject[],
  key: string,
  pointer: string,
): { anchors: Anchors; sequence: Int32Array } {
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
  return { anchors: longestIncreasing(sequence), sequence };
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
function lcsAnchors(
  x: Json[],
  y: Json[],
  caches: CanonicalCaches,
  pointer: string,
): { anchors: Anchors; xs: Int32Array; ys: Int32Array } {
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
  return { anchors, xs, ys };
}

/** The request schema rejects these inputs before payment; reaching here means it was skipped. */
const unvalidated = (pointer: string) =>
  new Error(`json-diff input at ${pointer || "(root)"} was not validated with JsonDiffRequest`);
