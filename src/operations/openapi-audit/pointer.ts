import { escapePointerToken } from "../../problem.ts";

/** The JSON Pointer of a child: "/paths" + "/pets" → "/paths/~1pets". */
export const childPointer = (pointer: string, token: string | number) =>
  `${pointer}/${escapePointerToken(token)}`;

/**
 * One token of a `$ref` fragment ("#/components/schemas/Pet%20Type"): a URI fragment, so percent-decoded
 * first (as Redocly does), then unescaped as a JSON Pointer token.
 */
export function decodeFragmentToken(raw: string): string {
  let token = raw;
  try {
    token = decodeURIComponent(raw);
  } catch {
    // Not percent-encoded after all: keep it as written.
  }
  return token.replaceAll("~1", "/").replaceAll("~0", "~");
}

/** The tokens of a fragment pointer ("/a/b" → ["a", "b"], "" → []); undefined when it is not a pointer. */
export function fragmentTokens(fragment: string): string[] | undefined {
  if (fragment === "") return [];
  if (!fragment.startsWith("/")) return undefined;
  return fragment.slice(1).split("/").map(decodeFragmentToken);
}

/** A plain JSON Pointer's tokens (no percent-decoding): "/paths/~1pets" → ["paths", "/pets"]. */
export const pointerTokens = (pointer: string) =>
  pointer === ""
    ? []
    : pointer
        .slice(1)
        .split("/")
        .map((raw) => raw.replaceAll("~1", "/").replaceAll("~0", "~"));
