import type { Json } from "./canonical.ts";

/** The operations this service emits; `value` for add, replace and test, `from` for move and copy. */
export interface PatchOp {
  readonly op: "add" | "remove" | "replace" | "move" | "copy" | "test";
  readonly path: string;
  readonly value?: unknown;
  readonly from?: string;
}

export class PatchError extends Error {
  constructor(
    readonly index: number,
    message: string,
  ) {
    super(`operation ${index}: ${message}`);
  }
}

/**
 * An array being patched: the items left of a cursor, and the items right of it in reverse, so
 * an insertion or removal at the cursor is O(1) and moving the cursor costs the distance. Patches
 * walk each array from index 0 upward, so applying one costs O(array length + operations) where
 * a splice per operation would cost O(length × operations).
 */
class CursorArray {
  private readonly left: unknown[];
  private readonly right: unknown[] = [];

  constructor(items: readonly unknown[]) {
    this.left = items.slice();
  }

  get length(): number {
    return this.left.length + this.right.length;
  }

  private seek(index: number): void {
    while (this.left.length > index) this.right.push(this.left.pop());
    while (this.left.length < index) this.left.push(this.right.pop());
  }

  get(index: number): unknown {
    const split = this.left.length;
    return index < split ? this.left[index] : this.right[this.right.length - 1 - (index - split)];
  }

  set(index: number, value: unknown): void {
    const split = this.left.length;
    if (index < split) this.left[index] = value;
    else this.right[this.right.length - 1 - (index - split)] = value;
  }

  insert(index: number, value: unknown): void {
    this.seek(index);
    this.left.push(value);
  }

  remove(index: number): void {
    this.seek(index);
    this.right.pop();
  }

  toArray(): unknown[] {
    return this.left.concat(this.right.reverse());
  }

  /** The items in order, leaving this array as it is. */
  items(): unknown[] {
    return this.left.concat(this.right.slice().reverse());
  }
}

type Owned = CursorArray | Record<string, unknown>;

const isContainer = (value: unknown): value is object => typeof value === "object" && value !== null;

/** Sets an own data property; a plain assignment of "__proto__" would change the prototype instead. */
function setMember(object: Record<string, unknown>, key: string, value: unknown): void {
  if (key === "__proto__") {
    Object.defineProperty(object, key, { value, writable: true, enumerable: true, configurable: true });
  } else object[key] = value;
}

/** RFC 6901: "" is the whole document; otherwise "/"-separated tokens with ~1 → "/" and ~0 → "~". */
function parsePointer(pointer: string, index: number): string[] {
  if (pointer === "") return [];
  if (pointer[0] !== "/") throw new PatchError(index, `path "${pointer}" is not a JSON Pointer`);
  const tokens = pointer.slice(1).split("/");
  if (pointer.indexOf("~") === -1) return tokens;
  return tokens.map((token) => token.replaceAll("~1", "/").replaceAll("~0", "~"));
}

/**
 * Applies an RFC 6902 patch (add, remove, replace, move, copy, test) in order and returns the result.
 * Neither the document nor the patch's values are modified: containers along each path are copied
 * on first write and everything else is shared. Throws PatchError for an operation that does not
 * apply (a missing path, an index out of range, a malformed pointer, a failed test).
 */
export function applyPatch(document: Json, patch: readonly PatchOp[]): Json {
  const ownedObjects = new Set<object>();
  const own = (value: object): Owned => {
    if (value instanceof CursorArray) return value;
    if (Array.isArray(value)) return new CursorArray(value);
    if (ownedObjects.has(value)) return value as Record<string, unknown>;
    const copy = { ...value } as Record<string, unknown>;
    ownedObjects.add(copy);
    return copy;
  };

  /** The value at a pointer, read without copying anything. */
  const read = (pointer: string, index: number): unknown => {
    let node: unknown = root;
    for (const token of parsePointer(pointer, index)) {
      if (node instanceof CursorArray) {
        const position = arrayIndex(token, index, pointer);
        if (position >= node.length)
          throw new PatchError(index, `"${pointer}": no item at index ${position}`);
        node = node.get(position);
      } else if (isContainer(node) && !Array.isArray(node)) {
        if (!Object.hasOwn(node, token)) throw new PatchError(index, `"${pointer}": no member "${token}"`);
        node = (node as Record<string, unknown>)[token];
      } else if (Array.isArray(node)) {
        const position = arrayIndex(token, index, pointer);
        if (position >= node.length)
          throw new PatchError(index, `"${pointer}": no item at index ${position}`);
        node = node[position];
      } else throw new PatchError(index, `"${pointer}": no container on the way`);
    }
    return node;
  };

  /** add, remove or replace `value` at `pointer`. */
  const write = (op: "add" | "remove" | "replace", pointer: string, value: unknown, index: number) => {
    const tokens = parsePointer(pointer, index);
    if (tokens.length === 0) {
      if (op === "remove") throw new PatchError(index, "cannot remove the whole document");
      root = value;
      return;
    }
    if (!isContainer(root)) throw new PatchError(index, `"${pointer}": the document is not a container`);
    root = own(root);
    let node = root as Owned;
    for (let t = 0; t < tokens.length - 1; t++) {
      const token = tokens[t] as string;
      const child = readChild(node, token, index, pointer);
      if (!isContainer(child)) throw new PatchError(index, `"${pointer}": no container at token ${t}`);
      const owned = own(child);
      writeChild(node, token, owned, index, pointer);
      node = owned;
    }
    const last = tokens[tokens.length - 1] as string;
    if (node instanceof CursorArray) {
      const length = node.length;
      const position = last === "-" && op === "add" ? length : arrayIndex(last, index, pointer);
      if (op === "add") {
        if (position > length) throw new PatchError(index, `"${pointer}": index beyond the end`);
        node.insert(position, value);
      } else {
        if (position >= length) throw new PatchError(index, `"${pointer}": no item at that index`);
        if (op === "remove") node.remove(position);
        else node.set(position, value);
      }
      return;
    }
    if (op !== "add" && !Object.hasOwn(node, last)) {
      throw new PatchError(index, `"${pointer}": no member "${last}"`);
    }
    if (op === "remove") delete node[last];
    else setMember(node, last, value);
  };

  /** A plain copy of a value read from the document (the copies made while patching are not shared). */
  const detach = (value: unknown): unknown => {
    if (value instanceof CursorArray) return value.items().map(detach);
    if (isContainer(value) && ownedObjects.has(value)) {
      const copy: Record<string, unknown> = {};
      for (const key of Object.keys(value))
        setMember(copy, key, detach((value as Record<string, unknown>)[key]));
      return copy;
    }
    return value;
  };

  let root: unknown = document;
  patch.forEach((operation, index) => {
    const { op, path } = operation;
    if ((op === "add" || op === "replace" || op === "test") && operation.value === undefined)
      throw new PatchError(index, "value is missing");
    if (op === "move" || op === "copy") {
      const from = operation.from;
      if (typeof from !== "string") throw new PatchError(index, "from is missing");
      if (op === "move" && path.startsWith(`${from}/`))
        throw new PatchError(index, `cannot move "${from}" into itself`);
      const value = read(from, index);
      if (op === "move") {
        if (from === path) return;
        write("remove", from, undefined, index);
        write("add", path, value, index);
      } else write("add", path, detach(value), index);
      return;
    }
    if (op === "test") {
      if (!jsonEqual(detach(read(path, index)), operation.value))
        throw new PatchError(index, `test failed: "${path}" does not hold the value tested`);
      return;
    }
    if (op !== "add" && op !== "remove" && op !== "replace")
      throw new PatchError(index, `unknown operation "${String(op)}"`);
    write(op, path, operation.value, index);
  });
  return materialize(root, ownedObjects) as Json;
}

/** RFC 6901 array index: decimal digits without a leading zero. */
function arrayIndex(token: string, index: number, path: string): number {
  const length = token.length;
  let value = 0;
  for (let i = 0; i < length; i++) {
    const digit = token.charCodeAt(i) - 0x30;
    if (digit < 0 || digit > 9 || (i === 0 && digit === 0 && length > 1) || length > 15) {
      throw new PatchError(index, `"${path}": "${token}" is not an array index`);
    }
    value = value * 10 + digit;
  }
  if (length === 0) throw new PatchError(index, `"${path}": "" is not an array index`);
  return value;
}

function readChild(node: Owned, token: string, index: number, path: string): unknown {
  if (node instanceof CursorArray) {
    const position = arrayIndex(token, index, path);
    if (position >= node.length) throw new PatchError(index, `"${path}": no item at index ${position}`);
    return node.get(position);
  }
  if (!Object.hasOwn(node, token)) throw new PatchError(index, `"${path}": no member "${token}"`);
  return node[token];
}

function writeChild(node: Owned, token: string, value: unknown, index: number, path: string): void {
  if (node instanceof CursorArray) node.set(arrayIndex(token, index, path), value);
  else setMember(node, token, value);
}

/** Turns the copies made while patching back into plain JSON values (shared parts are already plain). */
function materialize(value: unknown, ownedObjects: Set<object>): unknown {
  if (value instanceof CursorArray) {
    const items = value.toArray();
    for (let i = 0; i < items.length; i++) items[i] = materializeChild(items[i], ownedObjects);
    return items;
  }
  if (isContainer(value) && ownedObjects.has(value)) {
    const object = value as Record<string, unknown>;
    for (const key of Object.keys(object)) {
      const child = object[key];
      if (child instanceof CursorArray) setMember(object, key, materialize(child, ownedObjects));
      else if (isContainer(child) && ownedObjects.has(child)) materialize(child, ownedObjects);
    }
  }
  return value;
}

const materializeChild = (value: unknown, ownedObjects: Set<object>) =>
  value instanceof CursorArray || (isContainer(value) && ownedObjects.has(value))
    ? materialize(value, ownedObjects)
    : value;

/** Equality of parsed JSON values as RFC 8785 sees it: member order is irrelevant, 0 equals -0. */
export function jsonEqual(a: unknown, b: unknown): boolean {
  if (a === b) return true;
  if (!isContainer(a) || !isContainer(b)) return false;
  if (Array.isArray(a)) {
    if (!Array.isArray(b) || a.length !== b.length) return false;
    for (let i = 0; i < a.length; i++) if (!jsonEqual(a[i], b[i])) return false;
    return true;
  }
  if (Array.isArray(b)) return false;
  // for-in over parsed JSON lists exactly the own members (plain objects inherit no enumerable
  // ones) without allocating a key array; a polluted Object.prototype could only make this fail.
  let members = 0;
  for (const key in a) {
    if (!Object.hasOwn(b, key)) return false;
    if (!jsonEqual((a as Record<string, unknown>)[key], (b as Record<string, unknown>)[key])) return false;
    members++;
  }
  for (const _ in b) members--;
  return members === 0;
}
