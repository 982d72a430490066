/** Plain-text helpers shared by the planner, the citation checker and the extractive writer. */

const STOP_WORDS = new Set(
  (
    "a about above after again against all also am an and any are as at be because been before being below " +
    "between both but by can could did do does doing down during each few for from further had has have having " +
    "he her here hers herself him himself his how i if in into is it its itself just me more most my myself no " +
    "nor not now of off on once only or other our ours ourselves out over own same she should so some such than " +
    "that the their theirs them themselves then there these they this those through to too under until up very " +
    "was we were what when where which while who whom why will with would you your yours yourself yourselves " +
    "which whose shall may might must can't cannot tell explain describe please give list compare vs versus"
  ).split(" "),
);

/** Words as a reader counts them: citation markers, Markdown bullets and lone punctuation are not words. */
export function countWords(markdown: string): number {
  return markdown
    .replace(/\[\d+(?:\s*,\s*\d+)*\]/g, " ")
    .split(/\s+/)
    .filter((token) => /[\p{L}\p{N}]/u.test(token)).length;
}

/** Lower-cased content words (no stop words, at least 3 characters). */
export function keywords(text: string): string[] {
  return (text.toLowerCase().match(/[\p{L}\p{N}][\p{L}\p{N}'’-]*/gu) ?? [])
    .map((word) => word.replace(/['’]s$/, ""))
    .filter((word) => word.length >= 3 && !STOP_WORDS.has(word));
}

/** Splits a paragraph into sentences at ., ! or ? followed by a space and a capital, digit or quote. */
export function sentences(paragraph: string): string[] {
  return paragraph
    .split(/(?<=[.!?])\s+(?=[\p{Lu}\p{N}"“(])/u)
    .map((sentence) => sentence.trim())
    .filter(Boolean);
}

/** Collapses runs of white space inside a line. */
export const squeeze = (text: string) => text.replace(/\s+/g, " ").trim();

/** The first `chars` characters, cut at a word boundary, with an ellipsis when cut. */
export function clip(text: string, chars: number): string {
  const flat = squeeze(text);
  if (flat.length <= chars) return flat;
  const cut = flat.slice(0, chars);
  return `${cut.slice(0, Math.max(cut.lastIndexOf(" "), chars / 2)).trimEnd()}…`;
}

/** A URL in a comparable form: no fragment, no trailing slash on the path, lower-case host. */
export function normalizeUrl(url: string): string {
  try {
    const parsed = new URL(url);
    parsed.hash = "";
    if (parsed.pathname.length > 1) parsed.pathname = parsed.pathname.replace(/\/+$/, "");
    return parsed.toString();
  } catch {
    return url;
  }
}
