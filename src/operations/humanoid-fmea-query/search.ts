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
  // Crushing stays out: a crushed battery or a crushing fall is not a pinch point.
  {
    term: "pinch",
    patterns: [
      /\bpinch(es|ed|ing)?([ -]+points?)?\b/g,
      /\bfinger[ -]+traps?\b/g,
      /\b(closing|shear(ing)?)[ -]+gaps?\b/g,
      /\btraps? (fingers|a hand)\b/g,
    ],
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
  // British and American spellings, and the ways a robot is said to be lost.
  {
    term: "localisation",
    patterns: [/\b(mis)?locali[sz](ation|ations|e|es|ed|ing)\b/g, /\b(robot|it) (is |gets |got )?lost\b/g],
  },
  // Before "link loss" and "lose": a power outage is a loss of power, not of the network. The term
  // is two words, so that these meet the entries that say "power loss" in their own words.
  {
    term: "power lose",
    patterns: [
      /\b(black|brown)outs?\b/g,
      /\bpower[ -]+(cuts?|outages?|failures?|interruptions?|interrupted)\b/g,
    ],
  },
  {
    term: "linkloss",
    patterns: [
      /\b(network|link|connection|comms|communications?|wi-?fi|wireless|radio)[ -]+(outages?|dropouts?|drop-outs?|loss|losses|lost|failures?)\b/g,
      /\b(outages?|drop-?outs?|disconnect(s|ed|ion|ions)?)\b/g,
    ],
  },
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
  {
    term: "denialofservice",
    patterns: [/\b(d?dos|denial[ -]+of[ -]+service|flood(ing)?[ -]+attacks?|broadcast[ -]+storms?)\b/g],
  },
  // One alternation per group where phrases overlap, so a document counts "cyber attack" once.
  {
    term: "intrusion",
    patterns: [
      /\b(cyber[ -]?\w*|hack(s|ed|ing|ers?)?|compromis(e|es|ed|ing)|intru(sions?|ders?)|attack(s|ed|ing|ers?)?|malicious|unauthori[sz]ed|ransomware|malware)\b/g,
    ],
  },
  {
    term: "vulnerable",
    patterns: [
      /\b(elderly|old(er)?[ -]+(adults?|people|persons?|workers?)|seniors?|frail|vulnerable|impaired|impairments?|child(ren)?|kids?|minors?|wheelchairs?( users?)?|disabled[ -]+(persons?|people|users?|visitors?|workers?)|disabilit(y|ies))\b/g,
    ],
  },
  {
    term: "collide",
    patterns: [
      /\b(hit(s|ting)?|strik(e|es|ing)|struck|bump(s|ed|ing)?|collid(e|es|ed|ing)|collisions?)\b/g,
      /\b(walk(s|ed|ing)?|run(s|ning)?|driv(e|es|en|ing)|steer(s|ed|ing)?)[ -]+into\b/g,
    ],
  },
  // Pronouns only: folding bystander, worker and person together would make one term of 85 entries.
  { term: "person", patterns: [/\b(someone|somebody|anyone|anybody)\b/g] },
  { term: "handover", patterns: [/\bhand(ing)?[ -]?overs?\b/g] },
  // "Lift" alone is also lifting a load: only the lift a robot rides in is an elevator.
  {
    term: "elevator",
    patterns: [/\belevators?\b/g, /\blifts?(?=[ -]+(or automatic doors?|doors?|cars?|shafts?|landings?))/g],
  },
  { term: "slip", patterns: [/\bslipper(y|iness)\b/g] },
  { term: "push", patterns: [/\bshov(e|es|ed|ing)\b/g] },
  { term: "sto", patterns: [/\bsto\b/g, /\bsafe[ -]+torque[ -]+off\b/g] },
  { term: "performancelevel", patterns: [/\bpl[ -]?[a-e]\b/g, /\bperformance[ -]+levels?\b/g] },
  { term: "autorestart", patterns: [/\bauto(matic(ally)?)?[ -]?(restart|resum)(e|es|ed|ing|s)?\b/g] },
  { term: "hoist", patterns: [/\b(cranes?|hoists?|gantr(y|ies))\b/g] },
  {
    term: "emi",
    patterns: [
      /\b(emi|emc|electromagnetic([ -]+(interference|compatibility|disturbances?))?|rf[ -]+interference)\b/g,
    ],
  },
  {
    term: "softfloor",
    patterns: [/\b(carpets?|rugs?|(soft|compliant)[ -]+(floors?|mats?)|floor[ -]+stiffness)\b/g],
  },
  { term: "water", patterns: [/\b(rain|rainwater|water|splash(es|ed|ing)?|moisture)\b/g] },
  { term: "chemical", patterns: [/\b(acids?|alkalis?|caustic|solvents?|chemicals?|electrolyte)\b/g] },
  { term: "vehicle", patterns: [/\b(agvs?|amrs?|forklifts?|vehicles?|pallet[ -]+trucks?|tuggers?)\b/g] },
  {
    term: "geofence",
    patterns: [
      /\bgeo[ -]?fenc(e|es|ed|ing)\b/g,
      /\b(forbidden|keep[ -]?out|restricted)[ -]+(zones?|areas?)\b/g,
    ],
  },
  { term: "overtrust", patterns: [/\b(complacen(t|cy)|over[ -]?(trust|reliance)|automation[ -]+bias)\b/g] },
  { term: "redundant", patterns: [/\b(redundan(t|cy|cies)|(two|dual)[ -]+channels?)\b/g] },
  { term: "charge", patterns: [/\bcharg(er|ers|e|es|ed|ing)\b/g] },
  { term: "cold", patterns: [/\b(freez(e|es|ing)|frost|sub[ -]?zero|cold)\b/g] },
  { term: "heat", patterns: [/\b(overheat(s|ed|ing)?|hot|heat)\b/g] },
  {
    term: "instruction",
    patterns: [
      /\b(prompt([ -]+injections?)?|speech|voice|spoken|natural[ -]+language)([ -]+(commands?|instructions?))?\b/g,
    ],
  },
  {
    term: "soc",
    patterns: [
      /\blow[ -]+(battery|charge|soc|state[ -]+of[ -]+charge)\b/g,
      /\b(state[ -]+of[ -]+charge|soc)\b/g,
    ],
  },
  { term: "payload", patterns: [/\b(box(es)?|cartons?|crates?|parcels?|totes?|payloads?)\b/g] },
  {
    term: "overload",
    patterns: [/\b(too[ -]+heavy|heavier[ -]+than[ -]+rated|overload(s|ed|ing)?|overweight)\b/g],
  },
  { term: "throw", patterns: [/\b(throw(s|n|ing)?|threw|flung|fling(s|ing)?)\b/g] },
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
  return mode === "query" ? tokens : [...tokens, ...words(canonical.join(" "))];
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
  #rank(
    query: string,
  ): { score: number; matched: number; matchedAny: number; deciding: number; terms: number }[] {
    const terms = [...new Set(tokenize(query, "query"))];
    const informative = terms.filter(
      (term) => (this.#documentFrequency.get(term) ?? 0) <= this.#docs.length / 2,
    );
    const deciding = new Set(informative.length > 0 ? informative : terms);
    return this.#termFrequencies.map((frequencies, index) => {
      const norm = this.#k1 * (1 - this.#b + (this.#b * (this.#lengths[index] ?? 0)) / this.#averageLength);
      let score = 0;
      let matched = 0;
      let matchedAny = 0;
      for (const term of terms) {
        const tf = frequencies.get(term);
        if (tf) {
          score += (this.idf(term) * tf * (this.#k1 + 1)) / (tf + norm);
          matchedAny++;
          if (deciding.has(term)) matched++;
        }
      }
      return { score, matched, matchedAny, deciding: deciding.size, terms: terms.length };
    });
  }

  /**
   * All words first, then best match, then every word. With n deciding terms and `best` the most any
   * (included) document contains, the documents holding at least best − ⌊n/4⌋ of them answer: a query
   * of up to 3 terms needs every term when any document has them all, and a long sentence tolerates a
   * few missing words. When that finds fewer than `FALLBACK_BELOW` documents, every document holding
   * any deciding term answers instead (best match). When that too finds fewer, the common words decide
   * as well: a rare word that happens to be irrelevant ("hit" in one entry) must not keep out the
   * entries that hold the rest of the query. Each answer ranks more deciding terms first, then more
   * query terms, then the BM25 score. Scores are rounded to `decimals` before ranking, so documents
   * whose shown scores are equal keep document order.
   */
  search(query: string, include: (doc: T) => boolean = () => true, decimals = 3): Ranked<T>[] {
    const scale = 10 ** decimals;
    const ranked = this.#rank(query);
    const terms = ranked[0]?.deciding ?? 0;
    const everyWord = ranked
      .map(({ score, matched, matchedAny }, index) => ({
        doc: this.#docs[index] as T,
        score: Math.round(score * scale) / scale,
        matched,
        matchedAny,
        index,
      }))
      .filter((hit) => hit.matchedAny > 0 && hit.score > 0 && include(hit.doc));
    const hits = everyWord.filter((hit) => hit.matched > 0);
    const allOf = <H extends { matched: number }>(list: H[], count: (hit: H) => number, n: number) => {
      const best = Math.max(0, ...list.map(count));
      const least = Math.max(1, best - Math.floor(n / 4));
      return list.filter((hit) => count(hit) >= least);
    };
    const allWords = allOf(hits, (hit) => hit.matched, terms);
    const allWordsOfEvery = allOf(everyWord, (hit) => hit.matchedAny, ranked[0]?.terms ?? 0);
    const answer =
      allWords.length >= FALLBACK_BELOW
        ? allWords
        : hits.length >= FALLBACK_BELOW
          ? hits
          : [...new Set([...hits, ...allWordsOfEvery])];
    return answer
      .sort(
        (a, b) =>
          b.matched - a.matched || b.matchedAny - a.matchedAny || b.score - a.score || a.index - b.index,
      )
      .map(({ doc, score }) => ({ doc, score }));
  }
}
