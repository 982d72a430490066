import { countWords, keywords, sentences } from "./text.ts";

export interface ExtractiveSource {
  n: number;
  text: string;
}

interface Candidate {
  n: number;
  sentence: string;
  words: number;
  terms: Set<string>;
  score: number;
}

const MIN_SENTENCE_WORDS = 6;
const MAX_SENTENCE_WORDS = 60;
const INTRO = "Key passages from the sources, most relevant to the question first:";

const overlap = (a: Set<string>, b: Set<string>) => {
  let shared = 0;
  for (const term of a) if (b.has(term)) shared++;
  return shared / Math.max(1, Math.min(a.size, b.size));
};

/**
 * A brief without a model: sentences from the sources ranked by the question's (and context's)
 * terms, weighted by how rare each term is across the sources, each cited with its source. Every
 * source with a relevant sentence contributes at least one; near-duplicates are skipped.
 */
export function extractiveAnswer(
  question: string,
  context: string | undefined,
  sources: readonly ExtractiveSource[],
  maxWords: number,
): string {
  const weights = new Map<string, number>();
  for (const term of keywords(question)) weights.set(term, 2);
  for (const term of keywords(context ?? "")) if (!weights.has(term)) weights.set(term, 1);
  const documentFrequency = new Map<string, number>();
  const candidates: Candidate[] = [];
  for (const source of sources) {
    const seen = new Set(keywords(source.text));
    for (const term of seen) documentFrequency.set(term, (documentFrequency.get(term) ?? 0) + 1);
    source.text.split(/\n{2,}/).forEach((paragraph, position) => {
      for (const sentence of sentences(paragraph)) {
        const words = countWords(sentence);
        if (words < MIN_SENTENCE_WORDS || words > MAX_SENTENCE_WORDS || !/[.!?]$/.test(sentence)) continue;
        candidates.push({
          n: source.n,
          sentence,
          words,
          terms: new Set(keywords(sentence)),
          score: position,
        });
      }
    });
  }
  const idf = (term: string) => Math.log(1 + sources.length / (documentFrequency.get(term) ?? 1));
  for (const candidate of candidates) {
    let matched = 0;
    for (const term of candidate.terms) matched += (weights.get(term) ?? 0) * idf(term);
    // Prefer matches, then shorter sentences, then earlier paragraphs (candidate.score held the position).
    candidate.score = matched / (1 + Math.log(candidate.words)) - candidate.score * 0.01;
  }
  const relevant = candidates.filter((candidate) => candidate.score > 0).sort((a, b) => b.score - a.score);

  const chosen: Candidate[] = [];
  let total = countWords(INTRO);
  const take = (candidate: Candidate) => {
    if (chosen.includes(candidate) || total + candidate.words > maxWords) return;
    if (chosen.some((other) => overlap(other.terms, candidate.terms) > 0.7)) return;
    chosen.push(candidate);
    total += candidate.words;
  };
  for (const source of sources) {
    const best = relevant.find((candidate) => candidate.n === source.n);
    if (best) take(best);
  }
  for (const candidate of relevant) take(candidate);
  chosen.sort((a, b) => b.score - a.score);
  if (chosen.length === 0) {
    return "The sources that were read contain no sentence that matches the question's terms.";
  }
  return [INTRO, "", ...chosen.map((candidate) => `- ${candidate.sentence} [${candidate.n}]`)].join("\n");
}
