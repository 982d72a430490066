/**
 * A small BM25 ranker (Robertson/Spärck Jones, with per-field weights as in BM25F's simplest form)
 * over an in-memory list of documents. Deterministic: equal scores keep the documents' own order.
 */

// "hfm" starts every catalogue id: it would make any id query match every entry.
const STOP_WORDS = new Set(
  "a an and are as at be by for from has have hfm in into is it its of on or the their then there these this to was were when where which while with".split(
    " ",
  ),
);

/** Light English stemming: enough that "falls", "falling" and "fall" meet, not a full Porter stemmer. */
export function stem(word: string): string {
  if (/^\d/.test(word) || word.length <= 3) return word;
  let w = word;
  if (w.endsWith("ies") && w.length > 4) w = `${w.slice(0, -3)}y`;
  else if (w.endsWith("sses")) w = w.slice(0, -2);
  else if (w.endsWith("s") && !/(ss|us|is)$/.test(w)) w = w.slice(0, -1);
  if (w.endsWith("ing") && w.length > 5) w = w.slice(0, -3);
  else if (w.endsWith("ed") && w.length > 4) w = w.slice(0, -2);
  // "stopped" → "stopp" → "stop"; "fall" keeps its double l.
  if (/([^aeiouslz])\1$/.test(w)) w = w.slice(0, -1);
  if (w.endsWith("e") && w.length > 4) w = w.slice(0, -1);
  return w;
}

/**
 * Terms engineers write in several ways, folded to one canonical token. Documents keep their own
 * words and gain the canonical token; a query's phrase becomes the canonical token alone, so
 * `e-stop`, `E-Stop`, `estop` and `emergency stop` are one term (and `e-stop` no longer meets "e.g.").
 */
export const SYNONYMS: readonly { term: string; patterns: readonly RegExp[] }[] = [
  { term: "estop", patterns: [/\be[ -]?stop(s|ped|ping)?\b/g, /\bemergency[ -]+stop(s|ped|ping)?\b/g] },
  { term: "strainwave", patterns: [/\bstrain[ -]+wave\b/g, /\bharmonic[ -]+drives?\b/g] },
  // "pinch point" is one phrase: its "point" must not become a word every answer has to contain.
  {
    term: "pinch",
    patterns: [/\bpinch(es|ed|ing)?([ -]+points?)?\b/g, /\bfinger[ -]+traps?\b/g, /\bcrush(es|ed|ing)?\b/g],
  },
  {
    term: "foundationmodel",
    patterns: [
      /\bllms?\b/g,
      /\bvlas?\b/g,
      /\bfoundation[ -]+models?\b/g,
      /\blarge[ -]+language[ -]+models?\b/g,
      /\bvision[ -]+language[ -]+action( +models?)?\b/g,
    ],
  },
  { term: "tipover", patterns: [/\btip(s|ping|ped)?[ -]+over\b/g, /\btopple(s|d)?\b/g, /\btoppling\b/g] },
  // British and American spellings.
  { term: "localisation", patterns: [/\blocali[sz](ation|ations|e|es|ed|ing)\b/g] },
  // Irregular forms the stemmer cannot join: "localisation loss" = "localisation lost".
  { term: "lose", patterns: [/\b(loss|losses|lost|lose|loses|losing)\b/g] },
  {
    term: "teleop",
    patterns: [
      /\btele[ -]?op(s|erat(e|es|ed|ing|ion|ions|or|ors))?\b/g,
      /\bremote(ly)?[ -]+operat(e|ed|ing|ion|or|ors)\b/g,
    ],
  },
  { term: "latency", patterns: [/\b(lag(s|ged|ging)?|latenc(y|ies)|delay(s|ed|ing)?)\b/g] },
  // One alternation per group where phrases overlap, so a document counts "cyber attack" once.
  {
    term: "intrusion",
    patterns: [
      /\b(cyber[ -]?(security|attacks?)|hack(s|ed|ing|ers?)?|compromis(e|es|ed|ing)|intru(sions?|ders?)|attack(s|ed|ing|ers?)?|malicious|unauthori[sz]ed)\b/g,
    ],
  },
  {
    term: "vulnerable",
    patterns: [/\b(elderly|old(er)?[ -]+(adults?|people|persons?|workers?)|seniors?|frail|vulnerable)\b/g],
  },
];

const fold = (text: string) =>
  text
    .normalize("NFKD")
    .replace(/\p{M}/gu, "")
    .toLowerCase()
    // Abbreviations whose letters would otherwise become words ("e.g." → "e", "g").
    .replace(/\b(e\.g|i\.e|cf|etc)\.?(?![a-z0-9])/g, " ");

const words = (text: string) =>
  text
    .split(/[^a-z0-9]+/)
    .filter((token) => token.length > 0 && !STOP_WORDS.has(token) && !/^[a-z]$/.test(token))
    .map(stem);

/**
 * Lower-cased words and numbers, diacritics removed, stop words and single letters dropped, each
 * stemmed, with the canonical synonym tokens. `query` mode replaces a synonym phrase by its
 * canonical token; document mode keeps the phrase's own words as well.
 */
export function tokenize(text: string, mode: "document" | "query" = "document"): string[] {
  let folded = fold(text);
  const canonical: string[] = [];
  for (const { term, patterns } of SYNONYMS) {
    for (const pattern of patterns) {
      folded = folded.replace(pattern, (phrase) => {
        canonical.push(term);
        return mode === "query" ? ` ${term} ` : ` ${phrase} `;
      });
    }
  }
  const tokens = words(folded);
  return mode === "query" ? tokens : [...tokens, ...canonical.map(stem)];
}

/** An all-words answer with fewer documents than this gives way to the best-match answer. */
export const FALLBACK_BELOW = 3;

export interface WeightedField {
  text: string;
  weight: number;
}

export interface Bm25Options {
  k1?: number;
  b?: number;
}

export interface Ranked<T> {
  doc: T;
  score: number;
}

export class Bm25Index<T> {
  readonly #docs: readonly T[];
  /** Per document: weighted term frequency. */
  readonly #termFrequencies: Map<string, number>[];
  readonly #lengths: number[];
  readonly #documentFrequency = new Map<string, number>();
  readonly #averageLength: number;
  readonly #k1: number;
  readonly #b: number;

  constructor(docs: readonly T[], fields: (doc: T) => WeightedField[], options: Bm25Options = {}) {
    this.#docs = docs;
    this.#k1 = options.k1 ?? 1.2;
    this.#b = options.b ?? 0.75;
    this.#termFrequencies = docs.map((doc) => {
      const frequencies = new Map<string, number>();
      for (const field of fields(doc)) {
        for (const term of tokenize(field.text)) {
          frequencies.set(term, (frequencies.get(term) ?? 0) + field.weight);
        }
      }
      return frequencies;
    });
    this.#lengths = this.#termFrequencies.map((tf) => [...tf.values()].reduce((sum, n) => sum + n, 0));
    for (const frequencies of this.#termFrequencies) {
      for (const term of frequencies.keys()) {
        this.#documentFrequency.set(term, (this.#documentFrequency.get(term) ?? 0) + 1);
      }
    }
    this.#averageLength = this.#lengths.reduce((sum, n) => sum + n, 0) / Math.max(1, docs.length);
  }

  /** Inverse document frequency, the non-negative BM25 form: ln(1 + (N − n + 0.5)/(n + 0.5)). */
  idf(term: string): number {
    const n = this.#documentFrequency.get(term) ?? 0;
    return Math.log(1 + (this.#docs.length - n + 0.5) / (n + 0.5));
  }

  /** Score of every document for the query (0 where no query term occurs), in document order. */
  scores(query: string): number[] {
    return this.#rank(query).map((r) => r.score);
  }

  /**
   * Per document: its score over every query term, and how many of the deciding terms it contains.
   * Deciding terms are those found in at most half the documents: a word nearly every document holds
   * ("robot" here) still adds to the score but neither admits a document nor keeps one out. When every
   * query term is that common, all of them decide.
   */
  #rank(query: string): { score: number; matched: number; deciding: number }[] {
    const terms = [...new Set(tokenize(query, "query"))];
    const informative = terms.filter(
      (term) => (this.#documentFrequency.get(term) ?? 0) <= this.#docs.length / 2,
    );
    const deciding = new Set(informative.length > 0 ? informative : terms);
    return this.#termFrequencies.map((frequencies, index) => {
      const norm = this.#k1 * (1 - this.#b + (this.#b * (this.#lengths[index] ?? 0)) / this.#averageLength);
      let score = 0;
      let matched = 0;
      for (const term of terms) {
        const tf = frequencies.get(term);
        if (tf) {
          score += (this.idf(term) * tf * (this.#k1 + 1)) / (tf + norm);
          if (deciding.has(term)) matched++;
        }
      }
      return { score, matched, deciding: deciding.size };
    });
  }

  /**
   * All words first, then best match. With n deciding terms and `best` the most any (included)
   * document contains, the documents holding at least best − ⌊n/4⌋ of them answer: a query of up to 3
   * terms needs every term when any document has them all, and a long sentence tolerates a few missing
   * words. When that finds fewer than `FALLBACK_BELOW` documents, every document holding any deciding
   * term answers instead (best match). Either way more deciding terms rank first, then the BM25 score.
   * Scores are rounded to `decimals` before ranking, so documents whose shown scores are equal keep
   * document order.
   */
  search(query: string, include: (doc: T) => boolean = () => true, decimals = 3): Ranked<T>[] {
    const scale = 10 ** decimals;
    const ranked = this.#rank(query);
    const terms = ranked[0]?.deciding ?? 0;
    const hits = ranked
      .map(({ score, matched }, index) => ({
        doc: this.#docs[index] as T,
        score: Math.round(score * scale) / scale,
        matched,
        index,
      }))
      .filter((hit) => hit.matched > 0 && hit.score > 0 && include(hit.doc));
    const best = Math.max(0, ...hits.map((hit) => hit.matched));
    const least = Math.max(1, best - Math.floor(terms / 4));
    const allWords = hits.filter((hit) => hit.matched >= least);
    return (allWords.length >= FALLBACK_BELOW ? allWords : hits)
      .sort((a, b) => b.matched - a.matched || b.score - a.score || a.index - b.index)
      .map(({ doc, score }) => ({ doc, score }));
  }
}
