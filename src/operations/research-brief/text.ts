/** Plain-text helpers shared by the planner, the citation checker, the grounding check and the extractive writer. */
import { createHash } from "node:crypto";

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

/** Is this lower-case word a stop word (no content of its own)? */
export const isStopWord = (word: string) => STOP_WORDS.has(word);

/** Words as a reader counts them: citation markers, Markdown bullets and lone punctuation are not words. */
export function countWords(markdown: string): number {
  return markdown
    .replace(/\[\d+(?:\s*,\s*\d+)*\]/g, " ")
    .split(/\s+/)
    .filter((token) => /[\p{L}\p{N}]/u.test(token)).length;
}

/**
 * A number as written, kept whole: thousands separators (comma, no-break or thin space), a decimal
 * part, and a percent sign after an optional space ("10,000", "3.5 %"). Not a number: digits glued
 * to letters before them ("COVID-19", "H2O") or part of a longer token ("v1.2.3" keeps "1.2" only once).
 */
const NUMBER_SOURCE = String.raw`(?<![\p{L}\p{N}_.,]|\p{L}-)(?:\d{1,3}(?:[,\u00a0\u202f\u2009]\d{3})+|\d+)(?:\.\d+)?(?!\.?\d)(?:\s?%)?`;
const TOKEN = new RegExp(`(${NUMBER_SOURCE})|([\\p{L}\\p{N}][\\p{L}\\p{N}'’-]*)`, "gu");

/** "10,000" → "10000", "3.5 %" → "3.5%", "07" → "7": one spelling per value. */
export function normalizeNumber(raw: string): string {
  const percent = raw.endsWith("%");
  const digits = raw.replace(/[,\u00a0\u202f\u2009\s%]/g, "");
  const value = Number(digits);
  return `${Number.isFinite(value) ? String(value) : digits}${percent ? "%" : ""}`;
}

/**
 * Lower-cased content words as written: stop words and words under 3 characters dropped, numbers
 * kept whole whatever their length ("10,000", "3.5 %" → "3.5%"). What the search queries are made of.
 */
export function keywords(text: string): string[] {
  const found: string[] = [];
  for (const match of text.toLowerCase().matchAll(TOKEN)) {
    if (match[1]) {
      found.push(match[1].replace(/\s+%$/, "%"));
      continue;
    }
    const word = (match[2] as string).replace(/['’]s$/, "");
    if (word.length >= 3 && !STOP_WORDS.has(word)) found.push(word);
  }
  return found;
}

const VOWEL = /[aeiouy]/;

/**
 * A light suffix stripper in the manner of Porter's step 1: plurals (-s, -es after s/x/z/ch/sh,
 * -ies → -y), -ing and -ed (a doubled final consonant undone), then a final -e, so that "charge",
 * "charges", "charged" and "charging" meet at "charg", "batteries" and "battery" at "battery".
 * Words of three letters or fewer, and words with digits, are left alone.
 */
export function stem(word: string): string {
  if (word.length <= 3 || /\d/.test(word)) return word;
  let w = word;
  if (w.endsWith("sses")) w = w.slice(0, -2);
  else if (w.endsWith("ies") && w.length > 4) w = `${w.slice(0, -3)}y`;
  else if (/(?:ss|us|is|ys|'s)$/.test(w)) {
    // glass, status, analysis: not plurals
  } else if (/(?:x|z|ch|sh)es$/.test(w)) w = w.slice(0, -2);
  else if (w.endsWith("s")) w = w.slice(0, -1);
  const strip = (suffix: string) => {
    const rest = w.slice(0, -suffix.length);
    if (!w.endsWith(suffix) || rest.length < 3 || !VOWEL.test(rest)) return false;
    w = /([^aeiouylsz])\1$/.test(rest) ? rest.slice(0, -1) : rest;
    return true;
  };
  if (!strip("ing")) strip("ed");
  if (w.length > 4 && w.endsWith("e") && !w.endsWith("ee")) w = w.slice(0, -1);
  return w;
}

/**
 * What the ranking and the figure comparison match on: keywords with numbers in one spelling
 * ("10,000" and "10000" are the same term) and words stemmed ("pumps" and "pump" are too).
 */
export function terms(text: string): string[] {
  return keywords(text).map((term) => (/^\d/.test(term) ? normalizeNumber(term) : stem(term)));
}

/** Every number in a text, as written and normalized, with where it is. */
export function numbersIn(text: string): { raw: string; value: string; index: number; end: number }[] {
  const found = [];
  for (const match of text.matchAll(new RegExp(NUMBER_SOURCE, "gu"))) {
    const index = match.index as number;
    found.push({ raw: match[0], value: normalizeNumber(match[0]), index, end: index + match[0].length });
  }
  return found;
}

/** Abbreviations after which a full stop does not end a sentence. */
const ABBREVIATIONS = new Set(
  "dr mr mrs ms mx prof sr jr st mt rev gen col capt lt sgt hon vs approx cf ca al esp dept univ".split(" "),
);
/** Abbreviations that do not end a sentence when a number follows ("No. 5", "Fig. 3", "p. 12"). */
const BEFORE_NUMBER = new Set("no nos fig figs vol vols p pp eq eqs ch sec art ref refs".split(" "));
/** A sentence end: . ! ? or … (any closing quotes or brackets stay with it), space, then what can start a sentence. */
const SENTENCE_END = /[.!?…]+["'”’»)\]]*(?:\s*\[\d+(?:\s*[-–,;]\s*\d+)*\])*\s+(?=["'“‘«(]?[\p{Lu}\p{N}])/gu;

/**
 * Splits a paragraph into sentences at ., !, ? or … followed by a space and a capital, digit or
 * opening quote. Citation markers after the stop stay with their sentence ("… fewer. [1] Then"
 * splits after "[1]"), and so does a closing quote (`…works." The` splits after the quote).
 * A stop does not end a sentence after an abbreviation (Dr., Mr., et al.), after dotted
 * initials (e.g., i.e., U.S., J.), or before a number after No., Fig., p. and the like.
 */
export function sentences(paragraph: string): string[] {
  const found: string[] = [];
  let start = 0;
  for (const match of paragraph.matchAll(SENTENCE_END)) {
    const stop = match.index as number;
    if (match[0].startsWith(".")) {
      const word = /(\S*)$/.exec(paragraph.slice(start, stop))?.[1]?.replace(/^["'“‘«([]+/, "") ?? "";
      const lower = word.toLowerCase();
      const next = paragraph[stop + match[0].length] ?? "";
      if (ABBREVIATIONS.has(lower)) continue;
      if (/^(?:\p{L}\.)*\p{L}$/u.test(word) && (word.length > 1 || /\p{Lu}/u.test(word))) continue;
      if (BEFORE_NUMBER.has(lower) && /\d/.test(next)) continue;
    }
    const end = stop + match[0].trimEnd().length;
    const sentence = paragraph.slice(start, end).trim();
    if (sentence) found.push(sentence);
    start = stop + match[0].length;
  }
  const rest = paragraph.slice(start).trim();
  if (rest) found.push(rest);
  return found;
}

/**
 * Advertising and site chrome that Readability can leave in a page's text: calls to subscribe,
 * sign up or buy, discount and promo codes, cookie notices, "Advertisement" and sponsored-content
 * labels, newsletter prompts. Such a sentence is never quoted and never counts as evidence.
 */
const PROMOTIONAL =
  /\b(?:subscrib(?:e|ed|ing|ers?)|sign(?:ing)?[ -]up|buy now|shop now|order now|discounts?|promo(?:tional)? codes?|coupons?|cookies? (?:policy|settings|preferences|consent|notice)|(?:we|this site|this website) uses? cookies|accept (?:all )?cookies|advert(?:s|isement|isements|orial)?\b|sponsored|paid (?:content|partnership)|newsletters?)\b/i;

export const isPromotional = (sentence: string) => PROMOTIONAL.test(sentence);

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

/** Query parameters that say who sent the reader, not what the page is. */
const TRACKING_PARAMETER =
  /^(?:utm_\w+|fbclid|gclid|gclsrc|dclid|gbraid|wbraid|msclkid|yclid|twclid|igshid|mc_cid|mc_eid|_ga|_gl|_hsenc|_hsmi|mkt_tok|oly_anon_id|oly_enc_id|vero_id|ref_src|ref_url|amp|outputtype)$/i;

/**
 * The address of a page regardless of how it was reached, for recognising one article under two
 * URLs: scheme and host case, `www.`, `m.` and `amp.` host prefixes, AMP paths (`/amp`, `/amp/…`,
 * `.amp`), tracking parameters (utm_*, fbclid, gclid, …, `amp=1`), parameter order, the fragment
 * and a trailing slash do not count. Only for comparing: a source keeps the URL it was read at.
 */
export function canonicalUrl(url: string): string {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    return url.trim();
  }
  const host = parsed.hostname
    .toLowerCase()
    .replace(/^(?:(?:www\d?|m|amp|mobile)\.)+/, "")
    .replace(/\.m\.(?=[^.]+\.[^.]+$)/, ".");
  let path = parsed.pathname
    .replace(/\/amp(?=\/|$)/g, "")
    .replace(/\.amp(?=\.html?$|$)/, "")
    .replace(/\/+$/, "");
  if (path === "") path = "/";
  const parameters = [...parsed.searchParams]
    .filter(([name]) => !TRACKING_PARAMETER.test(name))
    .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
  const query = new URLSearchParams(parameters).toString();
  const port = parsed.port ? `:${parsed.port}` : "";
  return `${parsed.protocol === "http:" ? "https:" : parsed.protocol}//${host}${port}${path}${query ? `?${query}` : ""}`;
}

const SHINGLE_WORDS = 5;
const SKETCH_SIZE = 32;

/**
 * A fingerprint of a page's text that survives the differences between two copies of one article
 * (an AMP copy, a print view, a copy with "Advertisement" lines): the text is lower-cased, stripped
 * of promotional sentences and punctuation, cut into overlapping 5-word shingles, and the 32
 * smallest shingle hashes are kept (a bottom-k MinHash sketch). Compare two with sameContent().
 */
export function contentFingerprint(text: string): string {
  const words =
    text
      .split(/\n+/)
      .flatMap((paragraph) => sentences(paragraph))
      .filter((sentence) => !isPromotional(sentence))
      .join(" ")
      .toLowerCase()
      .match(/[\p{L}\p{N}]+/gu) ?? [];
  const hashes = new Set<string>();
  const count = Math.max(1, words.length - SHINGLE_WORDS + 1);
  for (let i = 0; i < count; i++) {
    const shingle = words.slice(i, i + SHINGLE_WORDS).join(" ");
    hashes.add(createHash("sha1").update(shingle).digest("hex").slice(0, 12));
  }
  return [...hashes].sort().slice(0, SKETCH_SIZE).join(".");
}

/**
 * Estimated share of shingles two fingerprints have in common (their Jaccard similarity), from
 * the smallest hashes of both together; 1 for texts that differ only in case, spacing,
 * punctuation or promotional lines.
 */
export function contentSimilarity(a: string, b: string): number {
  const first = new Set(a.split("."));
  const second = new Set(b.split("."));
  const union = [...new Set([...first, ...second])].sort().slice(0, SKETCH_SIZE);
  if (union.length === 0) return 1;
  return union.filter((hash) => first.has(hash) && second.has(hash)).length / union.length;
}

/** Two fingerprints of one text in two copies (at least 80 % of their shingles shared). */
export const sameContent = (a: string, b: string) => contentSimilarity(a, b) >= 0.8;
