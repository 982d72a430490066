import { countWords, normalizeUrl, sentences } from "./text.ts";

export interface CitableSource {
  n: number;
  url: string;
}

export interface VerifiedText {
  text: string;
  /** What was removed, as a reader should be told (e.g. "[7]", "a link to https://…"). */
  removed: string[];
  /** Sentences dropped because every citation they had was removed. */
  droppedSentences: number;
  /** Source numbers the text still cites. */
  cited: number[];
}

export const MARKER = /\[(\d+(?:\s*[-–,;]\s*\d+)*)\](?!\()/g;
/**
 * A URL inside Markdown or prose: parentheses are part of it only in balanced pairs, so
 * `[Python](https://en.wikipedia.org/wiki/Python_(programming_language))` ends at the right `)`.
 */
const URL_BODY = String.raw`https?:\/\/(?:[^\s()<>\[\]]|\([^\s()<>]*\))+`;
export const LINK = new RegExp(String.raw`\[([^\]\n]*)\]\((${URL_BODY})\)`, "g");
export const BARE_URL = new RegExp(String.raw`(?<!\]\()(?<![\w/])${URL_BODY}`, "g");
/** Trailing punctuation that ends the sentence, not the URL (a closing parenthesis without its opening one included). */
export const trimUrl = (url: string) => {
  let trimmed = url.replace(/[.,;:!?'"’”]+$/, "");
  while (trimmed.endsWith(")") && (trimmed.match(/\(/g)?.length ?? 0) < (trimmed.match(/\)/g)?.length ?? 0)) {
    trimmed = trimmed.slice(0, -1).replace(/[.,;:!?'"’”]+$/, "");
  }
  return trimmed;
};

/** "1-3, 5" → [1, 2, 3, 5] (ranges capped so "[1-99999]" cannot blow up). */
export function markerNumbers(inside: string): number[] {
  const numbers: number[] = [];
  for (const part of inside.split(/\s*[,;]\s*/)) {
    const [from, to] = part.split(/\s*[-–]\s*/).map(Number) as [number, number | undefined];
    if (to === undefined) numbers.push(from);
    else for (let n = from; n <= Math.min(to, from + 20); n++) numbers.push(n);
  }
  return numbers;
}

/**
 * Keeps only citations that point at a source that was really fetched and read: `[n]` markers
 * whose n is a numbered source, Markdown links and bare URLs to a fetched page. Anything else is
 * removed (a link keeps its words) and listed; a sentence whose every citation was removed is
 * dropped too (it rests on nothing that was read), so the brief can say what was taken out.
 */
export function verifyCitations(markdown: string, sources: readonly CitableSource[]): VerifiedText {
  const numbers = new Set(sources.map((source) => source.n));
  const urls = new Set(sources.map((source) => normalizeUrl(source.url)));
  const removed: string[] = [];
  const cited = new Set<number>();
  let droppedSentences = 0;

  const verifySentence = (sentence: string): string | undefined => {
    let found = 0;
    let kept = 0;
    let text = sentence.replace(LINK, (whole, label: string, url: string) => {
      found++;
      if (urls.has(normalizeUrl(url))) {
        kept++;
        return whole;
      }
      removed.push(`a link to ${url}`);
      return label;
    });
    text = text.replace(BARE_URL, (url) => {
      const trimmed = trimUrl(url);
      found++;
      if (urls.has(normalizeUrl(trimmed))) {
        kept++;
        return url;
      }
      removed.push(`a link to ${trimmed}`);
      return url.slice(trimmed.length);
    });
    text = text.replace(MARKER, (_whole, inside: string) => {
      const valid: number[] = [];
      for (const n of markerNumbers(inside)) {
        found++;
        if (!numbers.has(n)) removed.push(`[${n}]`);
        else if (!valid.includes(n)) valid.push(n);
      }
      kept += valid.length;
      for (const n of valid) cited.add(n);
      return valid.map((n) => `[${n}]`).join("");
    });
    if (found > 0 && kept === 0) {
      droppedSentences++;
      return undefined;
    }
    // One source cited twice in a row is cited once; a removed marker can leave " ." or "  " behind.
    return text
      .replace(/(\[\d+\])(?:\1)+/g, "$1")
      .replace(/[ \t]+([.,;:!?])/g, "$1")
      .replace(/[ \t]{2,}/g, " ")
      .trim();
  };

  const text = mapSentences(markdown, verifySentence);
  return { text, removed, droppedSentences, cited: [...cited].sort((a, b) => a - b) };
}

/**
 * Rewrites Markdown sentence by sentence, keeping its structure: each line's list bullet, number,
 * heading marks or quote mark stay, the sentences after it go through `rewrite` (undefined drops
 * one), and a line left without sentences is dropped. `prefix` tells a heading ("## ") from prose.
 */
export function mapSentences(
  markdown: string,
  rewrite: (sentence: string, prefix: string) => string | undefined,
): string {
  return markdown
    .split("\n")
    .map((line) => {
      const prefix = /^\s*(?:[-*+]\s+|\d+[.)]\s+|#+\s+|>\s*)?/.exec(line)?.[0] ?? "";
      const body = line.slice(prefix.length);
      if (!body.trim()) return line;
      const kept = sentences(body)
        .map((sentence) => rewrite(sentence, prefix))
        .filter((sentence): sentence is string => Boolean(sentence));
      return kept.length > 0 ? prefix + kept.join(" ") : undefined;
    })
    .filter((line): line is string => line !== undefined)
    .join("\n")
    .replace(/\n{3,}/g, "\n\n")
    .trim();
}

/**
 * Cuts Markdown to at most `maxWords` words at a sentence boundary, keeping paragraphs and lines
 * (list items) as they were. Citation markers are not words.
 */
export function limitWords(markdown: string, maxWords: number): { text: string; shortened: boolean } {
  if (countWords(markdown) <= maxWords) return { text: markdown, shortened: false };
  const paragraphs: string[] = [];
  let total = 0;
  outer: for (const paragraph of markdown.split(/\n{2,}/)) {
    const lines: string[] = [];
    for (const line of paragraph.split("\n")) {
      const kept: string[] = [];
      for (const sentence of sentences(line)) {
        const words = countWords(sentence);
        if (total + words > maxWords) {
          if (kept.length > 0) lines.push(kept.join(" "));
          if (lines.length > 0) paragraphs.push(lines.join("\n"));
          break outer;
        }
        total += words;
        kept.push(sentence);
      }
      if (kept.length > 0) lines.push(kept.join(" "));
    }
    if (lines.length > 0) paragraphs.push(lines.join("\n"));
  }
  return { text: paragraphs.join("\n\n"), shortened: true };
}
