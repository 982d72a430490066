import { z } from "zod";
import type { PoliteFetcher } from "./polite-fetch.ts";
import { ProviderError } from "./retry.ts";
import type { SearchHit, SearchProvider, SourceDocument } from "./search-provider.ts";
import { jatsParagraphs, stripMarkup } from "./source-text.ts";

/**
 * Crossref's REST API, no key needed, for questions that look scholarly:
 * - a DOI in the question: `GET {base}/works/{doi}`;
 * - otherwise `GET {base}/works?query=…&rows=…&select=…`;
 * both with `mailto=` when the operator's contact is an email (Crossref's "polite pool").
 * A work's text is its title, its abstract (JATS tags stripped), authors, container and year; it is
 * cited as https://doi.org/<DOI>. Works without an abstract have nothing to read and are dropped.
 */

const PROVIDER = "crossref";
const TIMEOUT_MS = 20_000;
const MAX_ROWS = 20;
/**
 * A work is a source when its abstract has at least this many words (about two sentences). Web
 * pages need 60 words, but abstracts are short by design (most run 100–300 words, letters and
 * conference abstracts 30–60), and an abstract is the author's own summary, not a stub.
 */
export const MIN_ABSTRACT_WORDS = 30;
/** The fields a search asks for (references and the like, often most of a record, are left out). */
const SELECT = [
  "DOI",
  "type",
  "title",
  "abstract",
  "author",
  "container-title",
  "issued",
  "published",
  "created",
];
const AUTHORS_SHOWN = 6;

const DateParts = z.looseObject({ "date-parts": z.array(z.array(z.number().nullable())).optional() });

const Work = z.looseObject({
  DOI: z.string().min(1),
  type: z.string().optional(),
  title: z.array(z.string()).optional(),
  abstract: z.string().optional(),
  author: z
    .array(
      z.looseObject({
        given: z.string().optional(),
        family: z.string().optional(),
        name: z.string().optional(),
      }),
    )
    .optional(),
  "container-title": z.array(z.string()).optional(),
  issued: DateParts.optional(),
  published: DateParts.optional(),
  created: DateParts.optional(),
});
type Work = z.output<typeof Work>;

const Answer = z.looseObject({
  status: z.literal("ok"),
  "message-type": z.enum(["work", "work-list"]),
  message: z.unknown(),
});
const WorkList = z.looseObject({ items: z.array(z.unknown()) });

export interface CrossrefWork {
  doi: string;
  url: string;
  type?: string;
  title: string;
  /** Plain paragraphs; empty when the record has no abstract. */
  abstract: string[];
  authors: string[];
  container?: string;
  /** YYYY, YYYY-MM or YYYY-MM-DD: issued (earliest publication), else published, else created. */
  date?: string;
}

const words = (text: string) => text.split(/\s+/).filter((token) => /[\p{L}\p{N}]/u.test(token)).length;

/** https://doi.org/<DOI>, the DOI percent-encoded where a URL needs it ("/" kept). */
export const doiUrl = (doi: string) => `https://doi.org/${encodeURIComponent(doi).replace(/%2F/gi, "/")}`;

function dateOf(work: Work): string | undefined {
  for (const field of [work.issued, work.published, work.created]) {
    const parts = field?.["date-parts"]?.[0]?.filter((part): part is number => typeof part === "number");
    if (parts && parts.length > 0) {
      const [year, month, day] = parts;
      return [String(year).padStart(4, "0"), month, day]
        .filter((part) => part !== undefined)
        .map((part) => String(part).padStart(2, "0"))
        .join("-");
    }
  }
  return undefined;
}

function toWork(work: Work): CrossrefWork {
  const container = work["container-title"]?.map(stripMarkup).find(Boolean);
  const date = dateOf(work);
  return {
    doi: work.DOI,
    url: doiUrl(work.DOI),
    ...(work.type ? { type: work.type } : {}),
    title: stripMarkup(work.title?.[0] ?? "") || `DOI ${work.DOI}`,
    abstract: work.abstract ? jatsParagraphs(work.abstract) : [],
    authors: (work.author ?? [])
      .map((author) => stripMarkup(author.name ?? [author.given, author.family].filter(Boolean).join(" ")))
      .filter(Boolean),
    ...(container ? { container } : {}),
    ...(date ? { date } : {}),
  };
}

/** Reads a `work` or `work-list` answer; a list item that is not a work (no DOI) is skipped. */
export function parseCrossrefAnswer(body: unknown): CrossrefWork[] {
  const answer = Answer.safeParse(body);
  if (!answer.success) {
    const where = answer.error.issues[0]?.path.join(".") || "body";
    throw new ProviderError(PROVIDER, `answered an unexpected shape (at ${where})`, false);
  }
  let items: unknown[] = [answer.data.message];
  if (answer.data["message-type"] === "work-list") {
    const list = WorkList.safeParse(answer.data.message);
    if (!list.success)
      throw new ProviderError(PROVIDER, "answered an unexpected shape (at message.items)", false);
    items = list.data.items;
  }
  const works = items.flatMap((item) => {
    const work = Work.safeParse(item);
    return work.success ? [toWork(work.data)] : [];
  });
  if (answer.data["message-type"] === "work" && works.length === 0) {
    throw new ProviderError(PROVIDER, "answered an unexpected shape (at message.DOI)", false);
  }
  return works;
}

const TYPE_LABELS: Record<string, string> = { "journal-article": "", "posted-content": "preprint" };

/** The text a brief reads: title, abstract paragraphs, then one line of authors, container, type, year and DOI. */
export function workDocument(work: CrossrefWork): SourceDocument {
  const authors =
    work.authors.length > AUTHORS_SHOWN
      ? `${work.authors.slice(0, AUTHORS_SHOWN).join(", ")} et al`
      : work.authors.join(", ");
  const type = work.type ? (TYPE_LABELS[work.type] ?? work.type.replace(/-/g, " ")) : "";
  // No full stop at the end: the line is a reference, not a sentence to quote.
  const reference = [authors, work.container, type, work.date?.slice(0, 4), `doi:${work.doi}`]
    .filter(Boolean)
    .join(" · ");
  return {
    url: work.url,
    title: work.title,
    text: [work.title, ...work.abstract, reference].join("\n\n"),
    ...(work.date ? { publishedAt: work.date } : {}),
    kind: "crossref",
    minWords: MIN_ABSTRACT_WORDS,
  };
}

/** A work is worth reading when it has an abstract of at least MIN_ABSTRACT_WORDS words. */
export const hasAbstract = (work: CrossrefWork) => words(work.abstract.join(" ")) >= MIN_ABSTRACT_WORDS;

export function toHit(work: CrossrefWork): SearchHit {
  const document = workDocument(work);
  return {
    url: work.url,
    title: work.title,
    snippet: work.abstract.join(" ").slice(0, 300),
    ...(work.date ? { publishedAt: work.date } : {}),
    document: async () => document,
  };
}

/** The first DOI written in the text (bare, doi:…, or in a doi.org link), trailing punctuation dropped. */
export function doiIn(text: string): string | undefined {
  const match = /\b10\.\d{4,9}\/[^\s"'<>]+/.exec(text);
  if (!match) return undefined;
  let doi = match[0].replace(/[.,;:!?]+$/, "");
  if (doi.endsWith(")") && !doi.includes("(")) doi = doi.slice(0, -1);
  return doi;
}

const SCHOLARLY_WORDS =
  /\b(?:stud(?:y|ies|ied)|papers?|journals?|et al\b|research(?:ers?)?|peer[- ]reviewed|meta-analys[ie]s|systematic reviews?|preprints?|literature|publications?|published|citations?|cited|abstracts?|doi|clinical trials?|scholarly|academic|thesis|dissertation|findings|evidence)/i;
/** A quoted title ("…" or “…” of three words or more) or an author-year citation ("Smith (2019)", "Smith et al. 2019"). */
const TITLE_OR_AUTHOR =
  /["“][^"”]*\S\s+\S+\s+\S[^"”]*["”]|\b\p{Lu}[\p{L}'’-]+(?: et al\.?)?,? \(?(?:19|20)\d{2}\)?/u;

/** Does the question ask about the literature: a DOI, study/paper/journal/et al./research words, a quoted title or an author-year citation? */
export function looksScholarly(text: string): boolean {
  return doiIn(text) !== undefined || SCHOLARLY_WORDS.test(text) || TITLE_OR_AUTHOR.test(text);
}

export function worksRequest(baseUrl: string, query: string, rows: number, mailto?: string): string {
  const url = new URL(`${baseUrl.replace(/\/+$/, "")}/works`);
  url.searchParams.set("query", query);
  url.searchParams.set("rows", String(Math.min(Math.max(rows, 1), MAX_ROWS)));
  url.searchParams.set("select", SELECT.join(","));
  if (mailto) url.searchParams.set("mailto", mailto);
  return url.toString();
}

export function workRequest(baseUrl: string, doi: string, mailto?: string): string {
  const url = new URL(
    `${baseUrl.replace(/\/+$/, "")}/works/${encodeURIComponent(doi).replace(/%2F/gi, "/")}`,
  );
  if (mailto) url.searchParams.set("mailto", mailto);
  return url.toString();
}

export function createCrossrefProvider(
  baseUrl: string,
  http: PoliteFetcher,
  mailto?: string,
): SearchProvider {
  return {
    name: PROVIDER,
    async search(query, { count, signal }) {
      const doi = doiIn(query);
      if (!doi && !looksScholarly(query)) return [];
      let body: unknown;
      if (doi) {
        try {
          body = await http.getJson(PROVIDER, workRequest(baseUrl, doi, mailto), {
            timeoutMs: TIMEOUT_MS,
            signal,
          });
        } catch (error) {
          // 404 (no such DOI) and other refusals: Crossref has nothing to read for it.
          if (error instanceof ProviderError && !error.retryable) return [];
          throw error;
        }
      } else {
        body = await http.getJson(PROVIDER, worksRequest(baseUrl, query, count, mailto), {
          timeoutMs: TIMEOUT_MS,
          signal,
        });
      }
      const works = parseCrossrefAnswer(body);
      return works.filter(hasAbstract).slice(0, count).map(toHit);
    },
  };
}
