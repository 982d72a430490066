import { countWords, isPromotional, keywords, numbersIn, sentences, squeeze, stem, terms } from "./text.ts";

export interface ExtractiveSource {
  n: number;
  text: string;
  title?: string;
  url?: string;
}

/** A sentence of a source, scored against the question. */
export interface RankedSentence {
  n: number;
  sentence: string;
  /** The section heading the sentence falls under, when the source has headings. */
  heading?: string;
  words: number;
  terms: Set<string>;
  score: number;
  /** It shares at least one term with the question itself (not only with the context). */
  answersQuestion: boolean;
}

const MIN_SENTENCE_WORDS = 6;
const MAX_SENTENCE_WORDS = 60;
const MAX_PASSAGES_PER_SOURCE = 4;
const EVIDENCE_HEADING = "Evidence by source:";
const SENTENCE_STOP = /[.!?]["'”’)\]]*$/;

const overlap = (a: Set<string>, b: Set<string>) => {
  let shared = 0;
  for (const term of a) if (b.has(term)) shared++;
  return shared / Math.max(1, Math.min(a.size, b.size));
};

/**
 * A source's paragraphs with the heading each falls under: MediaWiki plain-text headings
 * (`== History ==`), Markdown headings (`## History`), and in text read from HTML (one block per
 * line) a short line without a final stop that a long paragraph follows.
 */
export function sectionsOf(text: string): { heading?: string; paragraph: string }[] {
  const lines = text
    .split(/\n+/)
    .map((line) => line.trim())
    .filter(Boolean);
  const sections: { heading?: string; paragraph: string }[] = [];
  let heading: string | undefined;
  lines.forEach((line, index) => {
    const marked = /^(={2,6})\s*(.+?)\s*\1$/.exec(line)?.[2] ?? /^#{1,6}\s+(.+?)\s*#*$/.exec(line)?.[1];
    if (marked) {
      heading = squeeze(marked);
      return;
    }
    const next = lines[index + 1] ?? "";
    if (
      countWords(line) <= 10 &&
      !/[.!?:;,]$/.test(line) &&
      /^[\p{Lu}\p{N}]/u.test(line) &&
      countWords(next) >= 20 &&
      SENTENCE_STOP.test(next)
    ) {
      heading = line;
      return;
    }
    sections.push({ ...(heading ? { heading } : {}), paragraph: line });
  });
  return sections;
}

/**
 * The sentences of the sources that match the question, best first: each sentence of 6–60 words
 * (promotional ones dropped) scores its question terms (weight 2) and context terms (weight 1),
 * each weighted by how rare the term is across the sources (IDF), divided by 1 + ln(length), less
 * a little for paragraphs further down the page. Terms are stemmed and numbers kept whole.
 */
export function rankSentences(
  question: string,
  context: string | undefined,
  sources: readonly ExtractiveSource[],
): RankedSentence[] {
  const weights = new Map<string, number>();
  for (const term of terms(question)) weights.set(term, 2);
  for (const term of terms(context ?? "")) if (!weights.has(term)) weights.set(term, 1);
  const documentFrequency = new Map<string, number>();
  const candidates: (RankedSentence & { position: number })[] = [];
  for (const source of sources) {
    for (const term of new Set(terms(source.text))) {
      documentFrequency.set(term, (documentFrequency.get(term) ?? 0) + 1);
    }
    sectionsOf(source.text).forEach(({ heading, paragraph }, position) => {
      for (const sentence of sentences(paragraph)) {
        const words = countWords(sentence);
        if (words < MIN_SENTENCE_WORDS || words > MAX_SENTENCE_WORDS || !SENTENCE_STOP.test(sentence))
          continue;
        if (isPromotional(sentence)) continue;
        candidates.push({
          n: source.n,
          sentence,
          ...(heading && heading !== source.title ? { heading } : {}),
          words,
          terms: new Set(terms(sentence)),
          score: 0,
          answersQuestion: false,
          position,
        });
      }
    });
  }
  const idf = (term: string) => Math.log(1 + sources.length / (documentFrequency.get(term) ?? 1));
  for (const candidate of candidates) {
    let matched = 0;
    for (const term of candidate.terms) {
      const weight = weights.get(term) ?? 0;
      matched += weight * idf(term);
      if (weight === 2) candidate.answersQuestion = true;
    }
    candidate.score = matched > 0 ? matched / (1 + Math.log(candidate.words)) - candidate.position * 0.01 : 0;
  }
  return candidates
    .filter((candidate) => candidate.score > 0)
    .sort((a, b) => b.score - a.score)
    .map(({ position: _position, ...ranked }) => ranked);
}

interface Quantity {
  n: number;
  value: number;
  unit: string;
  /** The figure as the sentence writes it, with its unit ("10,000 steps", "3.5 %"). */
  written: string;
  context: Set<string>;
  sentence: RankedSentence;
}

/** Figures with a unit in a sentence: a number and the word after it (or %), years left out. */
function quantitiesOf(ranked: RankedSentence): Quantity[] {
  const found: Quantity[] = [];
  const text = ranked.sentence;
  for (const number of numbersIn(text)) {
    const after = text.slice(number.end);
    let unit: string | undefined;
    let written = number.raw;
    if (number.raw.endsWith("%")) unit = "%";
    else {
      const word = /^\s?(per\s?cent|percent|°\s?[CF]\b|[\p{L}°]+)/iu.exec(after);
      if (word?.[1]) {
        const lower = word[1].toLowerCase().replace(/\s/g, "");
        unit = /^per\s?cent$|^percent$/.test(lower) ? "%" : /^°[cf]$/.test(lower) ? lower : stem(lower);
        if (keywords(lower).length === 0 && unit !== "%" && !unit.startsWith("°")) unit = undefined;
        written = `${number.raw}${word[0]}`;
      }
    }
    if (!unit) continue;
    const value = Number(number.value.replace(/%$/, ""));
    if (Number.isInteger(value) && value >= 1800 && value <= 2100 && unit !== "%") continue;
    const context = new Set([...ranked.terms].filter((term) => !/^\d/.test(term) && term !== unit));
    found.push({ n: ranked.n, value, unit, written: squeeze(written), context, sentence: ranked });
  }
  return found;
}

/**
 * Pairs of figures from different sources that measure the same thing differently: the same unit,
 * different values, in sentences sharing at least two other terms and half of the smaller set.
 */
export function differingFigures(ranked: readonly RankedSentence[], limit = 2): [Quantity, Quantity][] {
  const quantities = ranked.flatMap(quantitiesOf);
  const pairs: { pair: [Quantity, Quantity]; strength: number }[] = [];
  for (let i = 0; i < quantities.length; i++) {
    for (let j = i + 1; j < quantities.length; j++) {
      const a = quantities[i] as Quantity;
      const b = quantities[j] as Quantity;
      if (a.n === b.n || a.unit !== b.unit || a.value === b.value) continue;
      let shared = 0;
      for (const term of a.context) if (b.context.has(term)) shared++;
      const similarity = overlap(a.context, b.context);
      if (shared < 2 || similarity < 0.5) continue;
      pairs.push({ pair: [a, b], strength: similarity + a.sentence.score + b.sentence.score });
    }
  }
  pairs.sort((x, y) => y.strength - x.strength);
  const chosen: [Quantity, Quantity][] = [];
  for (const { pair } of pairs) {
    if (chosen.some(([a]) => a.unit === pair[0].unit && overlap(a.context, pair[0].context) >= 0.5)) continue;
    chosen.push(pair);
    if (chosen.length >= limit) break;
  }
  return chosen;
}

/** What two sentences are both about, in the first one's words (up to three). */
function sharedWords(a: Quantity, b: Quantity): string {
  const words: string[] = [];
  for (const word of keywords(a.sentence.sentence)) {
    if (/^\d/.test(word) || !b.context.has(stem(word)) || stem(word) === a.unit) continue;
    if (!words.includes(word)) words.push(word);
    if (words.length === 3) break;
  }
  return words.join(", ");
}

const linkLabel = (title: string) => title.replace(/[[\]]/g, (bracket) => (bracket === "[" ? "(" : ")"));

/**
 * A brief without a model, for a person to read: a lead sentence (the best match for the
 * question), then evidence grouped by source (each source's best passage first, with its section
 * heading when it has one; the sources in the order of their best passage), a "figures that
 * differ" line when two sources give different values for the same kind of figure, and the list of
 * sources. Every passage is a sentence quoted from the source it cites. Empty when no sentence of
 * any source shares a term with the question: the sources do not answer it.
 */
export function extractiveAnswer(
  question: string,
  context: string | undefined,
  sources: readonly ExtractiveSource[],
  maxWords: number,
): string {
  const ranked = rankSentences(question, context, sources);
  const lead = ranked.find((candidate) => candidate.answersQuestion);
  if (!lead) return "";
  const leadLine = `${lead.sentence} [${lead.n}]`;
  const sourceLines = sources
    .filter((source) => source.url)
    .map((source) => `${source.n}. [${linkLabel(source.title || (source.url as string))}](${source.url})`);
  const figureLines = differingFigures(ranked).map(
    ([a, b]) =>
      `Figures that differ: “${a.written}” [${a.n}] against “${b.written}” [${b.n}]` +
      `${sharedWords(a, b) ? `, both on ${sharedWords(a, b)}` : ""}.`,
  );
  const headerOf = (n: number) => {
    const title = sources.find((source) => source.n === n)?.title;
    return `**[${n}]${title ? ` ${title}` : ""}**`;
  };

  let budget =
    maxWords -
    countWords(leadLine) -
    (sourceLines.length > 0 ? countWords(`Sources:\n${sourceLines.join("\n")}`) : 0) -
    countWords(figureLines.join("\n")) -
    countWords(EVIDENCE_HEADING);
  const chosen: RankedSentence[] = [];
  const bulletOf = (candidate: RankedSentence) =>
    `- ${candidate.heading ? `*${candidate.heading}:* ` : ""}${candidate.sentence} [${candidate.n}]`;
  const take = (candidate: RankedSentence) => {
    if (candidate === lead || chosen.includes(candidate)) return;
    if (chosen.filter((other) => other.n === candidate.n).length >= MAX_PASSAGES_PER_SOURCE) return;
    if ([lead, ...chosen].some((other) => overlap(other.terms, candidate.terms) > 0.7)) return;
    const cost =
      countWords(bulletOf(candidate)) +
      (chosen.some((other) => other.n === candidate.n) ? 0 : countWords(headerOf(candidate.n)));
    if (cost > budget) return;
    chosen.push(candidate);
    budget -= cost;
  };
  for (const source of sources) {
    const best = ranked.find((candidate) => candidate.n === source.n && candidate !== lead);
    if (best) take(best);
  }
  for (const candidate of ranked) take(candidate);

  const groups = new Map<number, RankedSentence[]>();
  for (const candidate of [...chosen].sort((a, b) => b.score - a.score)) {
    groups.set(candidate.n, [...(groups.get(candidate.n) ?? []), candidate]);
  }
  const lines = [leadLine];
  if (groups.size > 0) {
    lines.push("", EVIDENCE_HEADING);
    for (const [n, passages] of groups) lines.push("", headerOf(n), ...passages.map(bulletOf));
  }
  for (const line of figureLines) lines.push("", line);
  if (sourceLines.length > 0) lines.push("", "Sources:", ...sourceLines);
  return lines.join("\n");
}
