/**
 * The bounds of a decoded payment payload, checked before anything compares, copies or serializes it.
 * The SDK's requirement matching (`findMatchingRequirements`) compares `accepted` with a recursive deep
 * equality, and JSON.stringify recurses too: a value nested 60,000 levels deep threw a RangeError there
 * (a 500). A real payload is at most 21 levels deep and holds at most 700 values (the echoed Bazaar
 * extension is its deepest and largest part, measured with the complete one /.well-known/x402 lists).
 */

/** Levels of objects and arrays a payment payload may have (the payload itself is level 1). */
export const MAX_PAYMENT_DEPTH = 32;
/** Values (objects, arrays, strings, numbers, …) a payment payload may hold in all. */
export const MAX_PAYMENT_VALUES = 5000;
/**
 * Keys that name an object's prototype machinery. JSON.parse makes `__proto__` an own key, but a copy
 * by assignment (as the SDK's deep equality does) sets the copy's prototype instead; no x402 payload has
 * any of them.
 */
const PROTOTYPE_KEYS: ReadonlySet<string> = new Set(["__proto__", "constructor", "prototype"]);

/**
 * Why a decoded payment cannot be looked at further (too deep, too many values, a prototype key), or
 * undefined when it is within bounds. Iterative, and it stops at the first bound crossed: its cost is
 * bounded by MAX_PAYMENT_VALUES whatever it is given.
 */
export function paymentBoundsProblem(value: unknown): string | undefined {
  const pending: { value: unknown; depth: number }[] = [{ value, depth: 1 }];
  let values = 0;
  for (let next = pending.pop(); next !== undefined; next = pending.pop()) {
    if (++values > MAX_PAYMENT_VALUES) return `it holds more than ${MAX_PAYMENT_VALUES} values`;
    const { value: current, depth } = next;
    if (typeof current !== "object" || current === null) continue;
    if (depth > MAX_PAYMENT_DEPTH) return `it is nested more than ${MAX_PAYMENT_DEPTH} levels deep`;
    if (Array.isArray(current)) {
      if (values + pending.length + current.length > MAX_PAYMENT_VALUES) {
        return `it holds more than ${MAX_PAYMENT_VALUES} values`;
      }
      for (const item of current) pending.push({ value: item, depth: depth + 1 });
      continue;
    }
    for (const key of Object.keys(current)) {
      if (PROTOTYPE_KEYS.has(key)) return `it has a key named ${key}`;
      pending.push({ value: (current as Record<string, unknown>)[key], depth: depth + 1 });
      if (values + pending.length > MAX_PAYMENT_VALUES)
        return `it holds more than ${MAX_PAYMENT_VALUES} values`;
    }
  }
  return undefined;
}
