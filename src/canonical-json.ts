import canonicalize from "canonicalize";

/** RFC 8785 (JCS) canonical JSON: key order and number spelling never change the text. */
export function canonicalJson(value: unknown): string {
  const text = canonicalize(value);
  if (text === undefined) throw new TypeError("value has no JSON representation");
  return text;
}
