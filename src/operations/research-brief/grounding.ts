import { BARE_URL, LINK, MARKER, mapSentences, markerNumbers, trimUrl } from "./citations.ts";
import { clip, isStopWord, normalizeUrl, numbersIn } from "./text.ts";

/**
 * The grounding check: every sentence of an answer is compared with the sources it cites. What a
 * reader would take as a checkable fact must occur in one of those sources:
 *
 * - figures: every number, by value (thousands separators, a space before %, "percent" and
 *   "per cent" do not matter; "1.2 million" also matches 1,200,000; numbers up to twenty and whole
 *   tens also match their words, "sixty"); units are not compared;
 * - years (as numbers, "the 1980s" → 1980);
 * - acronyms (WHO, CDC: two or more capitals), matched case-sensitively as a word, or as the
 *   initials of a capitalised name in the source or in the same sentence ("World Health
 *   Organization (WHO)");
 * - names of organisations and people: two or more capitalised words, joined by "of", "the",
 *   "for", "van", "de" and the like ("Python Software Foundation", "Guido van Rossum"), matched
 *   ignoring case and spacing (a sentence-initial "The" or "According" is not part of a name).
 *
 * A cited sentence with a fact that none of its cited sources (title or text) contains is removed,
 * not rewritten: a $5 brief should not pass on a figure no source gives, even attributed. A
 * sentence with no citation that states a figure, year or name is removed the same way, unless
 * the asker's own question or context states it. Headings are not checked. The caller lists what
 * was removed, and why, in the caveats.
 */

export interface GroundingSource {
  n: number;
  url?: string;
  title: string;
  text: string;
}

export interface UngroundedSentence {
  /** The sentence as the answer had it. */
  sentence: string;
  /** The sources it cited (empty: it cited none). */
  cited: number[];
  /** The facts none of those sources contains, as written ("10,000", "WHO"). */
  missing: string[];
}

export interface GroundedText {
  text: string;
  /** Cited sentences removed because a fact in them is in none of their cited sources. */
  unsupported: UngroundedSentence[];
  /** Uncited sentences removed because they state a fact. */
  uncited: UngroundedSentence[];
}

interface Evidence {
  numbers: Set<string>;
  /** Lower-cased, squeezed text, for names. */
  folded: string;
  /** Words written in capitals (case kept), for acronyms. */
  acronyms: Set<string>;
  /** Initials of the capitalised names ("World Health Organization" → WHO). */
  initialisms: Set<string>;
}

const SMALL_NUMBERS = (
  "zero one two three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen " +
  "sixteen seventeen eighteen nineteen twenty"
).split(" ");
const TENS = ["", "", "twenty", "thirty", "forty", "fifty", "sixty", "seventy", "eighty", "ninety"];
const SCALES: Record<string, number> = { thousand: 1e3, million: 1e6, billion: 1e9, trillion: 1e12 };
const NUMBER_WORD = new RegExp(
  `\\b(?:(${TENS.slice(2).join("|")})(?:[- ](${SMALL_NUMBERS.slice(1, 10).join("|")}))?|(${SMALL_NUMBERS.join("|")})|(hundred|dozen))\\b`,
  "gi",
);

/** Connecting words inside a name ("Bank of England", "Guido van Rossum"). */
const NAME_JOINERS = new Set("of the for de del della der den di du da van von la le al bin y".split(" "));
/** Capitalised only because they open a sentence or a clause: never the start of a name. */
const OPENERS = new Set(
  "according although however unlike like despite per overall today yesterday meanwhile moreover thus hence also yes many most some several both each every".split(
    " ",
  ),
);
/** Written in capitals but not names: Roman numerals up to XXXIX, shouted words, currency codes. */
const NOT_ACRONYMS =
  /^(?:X{0,3}(?:IX|IV|V?I{0,3})|OK|AM|PM|AD|BC|CE|BCE|CAVEATS?|NOTE|TL;?DR|FAQ|USD|EUR|GBP|ID|URL)$/;

const plain = (value: number) => String(Number(value.toPrecision(12)));

/** The values a number stands for: as written, and times its scale word ("1.2 million"). */
function valuesOf(value: string, after: string): string[] {
  const bare = value.replace(/%$/, "");
  const scale = /^\s*(thousand|million|billion|trillion)\b/i.exec(after)?.[1]?.toLowerCase();
  return scale ? [bare, plain(Number(bare) * (SCALES[scale] as number))] : [bare];
}

/** Every number value a text states, in digits or (up to ninety-nine, and tens) in words. */
function numberValues(text: string): Set<string> {
  const values = new Set<string>();
  const spelled = text.replace(/\bper\s?cent\b|\bpercent\b/gi, "%");
  for (const number of numbersIn(spelled)) {
    for (const value of valuesOf(number.value, spelled.slice(number.end))) values.add(value);
  }
  for (const match of spelled.matchAll(NUMBER_WORD)) {
    const [, tens, units, small, other] = match;
    let value: number;
    if (tens)
      value =
        TENS.indexOf(tens.toLowerCase()) * 10 + (units ? SMALL_NUMBERS.indexOf(units.toLowerCase()) : 0);
    else if (small) value = SMALL_NUMBERS.indexOf(small.toLowerCase());
    else value = other?.toLowerCase() === "dozen" ? 12 : 100;
    values.add(String(value));
    const scale = /^\s*(thousand|million|billion|trillion)\b/i.exec(
      spelled.slice((match.index ?? 0) + match[0].length),
    )?.[1];
    if (scale) values.add(plain(value * (SCALES[scale.toLowerCase()] as number)));
  }
  return values;
}

/** Text without what is not a claim: citation markers, link targets, bare URLs, emphasis marks. */
function claimText(sentence: string): string {
  return sentence
    .replace(LINK, "$1")
    .replace(BARE_URL, " ")
    .replace(MARKER, " ")
    .replace(/[*_`]+/g, "");
}

interface Name {
  written: string;
  words: string[];
}

const isCapitalised = (word: string) => /^\p{Lu}[\p{Ll}\p{M}]/u.test(word);
const isAcronym = (word: string) => /^\p{Lu}[\p{Lu}\d&]+s?$/u.test(word) && /\p{Lu}.*\p{Lu}/u.test(word);

/** Capitalised multi-word names and acronyms in a text (acronyms are never part of a name). */
function namesIn(text: string): { names: Name[]; acronyms: string[] } {
  const names: Name[] = [];
  const acronyms: string[] = [];
  let run: string[] = [];
  let sentenceStart = true;
  const close = () => {
    while (run.length > 0 && NAME_JOINERS.has((run.at(-1) as string).toLowerCase())) run.pop();
    const capitalised = run.filter(isCapitalised);
    if (capitalised.length >= 2) names.push({ written: run.join(" "), words: [...run] });
    run = [];
  };
  for (const token of text.split(/\s+/)) {
    const word = token
      .replace(/^[("“‘'[]+/, "")
      .replace(/[)"”’'\],.;:!?]+$/, "")
      .replace(/['’]s$/, "");
    const ends = /[,.;:!?)"”]$/.test(token) || /^[("“]/.test(token);
    if (/^[("“]/.test(token)) close();
    if (word && isAcronym(word) && !NOT_ACRONYMS.test(word)) {
      close();
      acronyms.push(word);
    } else if (word && isCapitalised(word)) {
      const opener = sentenceStart && (isStopWord(word.toLowerCase()) || OPENERS.has(word.toLowerCase()));
      if (!opener) run.push(word);
    } else if (run.length > 0 && NAME_JOINERS.has(word.toLowerCase())) {
      run.push(word);
    } else {
      close();
    }
    if (ends) close();
    sentenceStart = /[.!?:]$/.test(token);
  }
  close();
  return { names, acronyms };
}

const initials = (name: Name) =>
  name.words
    .filter((word) => !NAME_JOINERS.has(word.toLowerCase()))
    .map((word) => word[0])
    .join("")
    .toUpperCase();

/**
 * Lower case, possessive 's dropped, punctuation and runs of space as one space, padded: names are
 * compared as whole words ("Guido van Rossum's" holds " guido van rossum "). ASCII and common
 * typographic punctuation by list: a Unicode-class regular expression costs 3x as much on a long source.
 */
const fold = (text: string) =>
  ` ${text
    .toLowerCase()
    .replace(/[’‘]/g, "'")
    .replace(/'s\b/g, "")
    .replace(/[\s!-&(-,./:-@[-`{-~“”«»„…—–•·]+/g, " ")
    .trim()} `;

/** What a text states, each part worked out on first use (most sentences need only the numbers). */
function evidenceOf(text: string): Evidence {
  let numbers: Set<string> | undefined;
  let folded: string | undefined;
  let acronyms: Set<string> | undefined;
  let initialisms: Set<string> | undefined;
  return {
    get numbers() {
      numbers ??= numberValues(text);
      return numbers;
    },
    get folded() {
      folded ??= fold(text);
      return folded;
    },
    get acronyms() {
      if (!acronyms) {
        acronyms = new Set<string>();
        for (const word of text.match(/(?<![\p{L}\p{N}])\p{Lu}[\p{Lu}\d&]+(?![\p{Ll}\p{N}])/gu) ?? []) {
          acronyms.add(word);
        }
      }
      return acronyms;
    },
    get initialisms() {
      initialisms ??= new Set(namesIn(text).names.map(initials));
      return initialisms;
    },
  };
}

/** The facts of a sentence that none of the evidence states, as written in the sentence. */
export function missingFacts(sentence: string, evidence: readonly Evidence[]): string[] {
  const text = claimText(sentence);
  const missing: string[] = [];
  const spelled = text.replace(/\bper\s?cent\b|\bpercent\b/gi, "%");
  for (const number of numbersIn(spelled)) {
    const values = valuesOf(number.value, spelled.slice(number.end));
    if (!evidence.some((source) => values.some((value) => source.numbers.has(value)))) {
      missing.push(number.raw.trim());
    }
  }
  const { names, acronyms } = namesIn(text);
  const foundNames: Name[] = [];
  for (const name of names) {
    const wanted = fold(name.written);
    if (evidence.some((source) => source.folded.includes(wanted))) foundNames.push(name);
    else missing.push(name.written);
  }
  for (const acronym of acronyms) {
    const singular = acronym.replace(/s$/, "");
    const inSentence = foundNames.some((name) => initials(name) === singular);
    const stated = (source: Evidence) =>
      source.acronyms.has(acronym) ||
      source.acronyms.has(singular) ||
      source.initialisms.has(acronym) ||
      source.initialisms.has(singular);
    if (!inSentence && !evidence.some(stated)) {
      missing.push(acronym);
    }
  }
  return [...new Set(missing)];
}

/** Source numbers a sentence cites: [n] markers, and links or bare URLs to a source's page. */
function citedBy(sentence: string, byUrl: Map<string, number>): number[] {
  const cited = new Set<number>();
  for (const match of sentence.matchAll(MARKER))
    for (const n of markerNumbers(match[1] as string)) cited.add(n);
  for (const match of sentence.matchAll(LINK)) {
    const n = byUrl.get(normalizeUrl(match[2] as string));
    if (n !== undefined) cited.add(n);
  }
  for (const match of sentence.replace(LINK, "$1").matchAll(BARE_URL)) {
    const n = byUrl.get(normalizeUrl(trimUrl(match[0])));
    if (n !== undefined) cited.add(n);
  }
  return [...cited].sort((a, b) => a - b);
}

/**
 * Removes the sentences of `markdown` whose facts are not in the sources they cite, and uncited
 * sentences that state facts. `asked` (the question and the context) counts as evidence for every
 * sentence: the answer may repeat what the asker said. Run it after verifyCitations, so every
 * [n] names a source.
 */
export function groundAnswer(
  markdown: string,
  sources: readonly GroundingSource[],
  asked = "",
): GroundedText {
  const evidence = new Map<number, Evidence>();
  const evidenceFor = (n: number) => {
    let found = evidence.get(n);
    const source = sources.find((candidate) => candidate.n === n);
    if (!found && source) {
      found = evidenceOf(`${source.title}\n${source.text}`);
      evidence.set(n, found);
    }
    return found;
  };
  const askedEvidence = evidenceOf(asked);
  const byUrl = new Map<string, number>();
  for (const source of sources) if (source.url) byUrl.set(normalizeUrl(source.url), source.n);
  const unsupported: UngroundedSentence[] = [];
  const uncited: UngroundedSentence[] = [];

  const text = mapSentences(markdown, (sentence, prefix) => {
    if (prefix.trimStart().startsWith("#")) return sentence;
    const cited = citedBy(sentence, byUrl);
    const against = [askedEvidence, ...cited.flatMap((n) => evidenceFor(n) ?? [])];
    const missing = missingFacts(sentence, against);
    if (missing.length === 0) return sentence;
    (cited.length > 0 ? unsupported : uncited).push({ sentence, cited, missing });
    return undefined;
  });
  return { text, unsupported, uncited };
}

/** The caveats naming what groundAnswer removed and why (none when nothing was). */
export function groundingCaveats(grounded: GroundedText): string[] {
  const caveats: string[] = [];
  const quote = (entry: UngroundedSentence) => `“${clip(entry.sentence, 160)}”`;
  const count = (n: number, what: string) => `${n} ${what}${n === 1 ? "" : "s"}`;
  if (grounded.unsupported.length > 0) {
    caveats.push(
      `Removed ${count(grounded.unsupported.length, "sentence")} stating a figure or name that the sources ${grounded.unsupported.length === 1 ? "it cites" : "they cite"} do not contain: ` +
        grounded.unsupported
          .map(
            (entry) =>
              `${quote(entry)} (${entry.missing.join(", ")} not in ${entry.cited.map((n) => `[${n}]`).join("")})`,
          )
          .join("; ") +
        ".",
    );
  }
  if (grounded.uncited.length > 0) {
    caveats.push(
      `Removed ${count(grounded.uncited.length, "uncited sentence")} stating a figure or name without naming a source for it: ` +
        grounded.uncited.map((entry) => `${quote(entry)} (${entry.missing.join(", ")})`).join("; ") +
        ".",
    );
  }
  return caveats;
}
