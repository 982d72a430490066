import { z } from "zod";
import type { PoliteFetcher } from "./polite-fetch.ts";
import { ProviderError } from "./retry.ts";
import type { SearchHit, SearchProvider, SourceDocument } from "./search-provider.ts";
import { stripMarkup } from "./source-text.ts";

/**
 * Wikipedia through the MediaWiki Action API (api.php), no key needed:
 * - search: `action=query&list=search&srsearch=…&srlimit=…&srnamespace=0`;
 * - the article: `action=query&prop=extracts|revisions|info&titles=…&explaintext=1&exsectionformat=wiki
 *   &rvprop=ids|timestamp&inprop=url&redirects=1`: its plain text as the API gives it (never scraped
 *   HTML), the revision it was read at, and the article's URL.
 * Both ask for `format=json&formatversion=1`: `query.pages` keyed by page id, which is the shape the
 * recordings in test/fixtures/research/ have (an array of pages, formatversion 2, is read too).
 */

export const WIKIPEDIA_LICENCE =
  "Wikipedia text is CC BY-SA 4.0: credit Wikipedia contributors and link the article";

const TIMEOUT_MS = 20_000;
const PROVIDER = "wikipedia";

/** Sections at the end of an article that list links and references, not prose: not read. */
const APPARATUS_SECTIONS = new Set([
  "see also",
  "notes",
  "references",
  "sources",
  "citations",
  "footnotes",
  "bibliography",
  "further reading",
  "external links",
  "notes and references",
  "works cited",
]);

const SearchAnswer = z.looseObject({
  query: z.looseObject({
    search: z.array(
      z.looseObject({
        title: z.string(),
        pageid: z.number().optional(),
        snippet: z.string().optional(),
        timestamp: z.string().optional(),
      }),
    ),
  }),
});

const Page = z.looseObject({
  pageid: z.number().optional(),
  title: z.string(),
  /** "" in formatversion 1, true in 2. */
  missing: z.unknown().optional(),
  invalid: z.unknown().optional(),
  extract: z.string().optional(),
  revisions: z
    .array(z.looseObject({ revid: z.number().optional(), timestamp: z.string().optional() }))
    .optional(),
  lastrevid: z.number().optional(),
  touched: z.string().optional(),
  fullurl: z.string().optional(),
  canonicalurl: z.string().optional(),
});
type Page = z.output<typeof Page>;

const ArticleAnswer = z.looseObject({
  query: z
    .looseObject({
      pages: z.union([z.record(z.string(), Page), z.array(Page)]).optional(),
    })
    .optional(),
});

function parse<T extends z.ZodType>(schema: T, body: unknown): z.output<T> {
  const parsed = schema.safeParse(body);
  if (!parsed.success) {
    const where = parsed.error.issues[0]?.path.join(".") || "body";
    throw new ProviderError(PROVIDER, `answered an unexpected shape (at ${where})`, false);
  }
  return parsed.data;
}

/** A title as it appears in a wiki URL: spaces as underscores, the rest percent-encoded except ":" and "/". */
const titlePath = (title: string) =>
  encodeURIComponent(title.replace(/ /g, "_")).replace(/%3A/gi, ":").replace(/%2F/gi, "/");

/** The wiki's article URL for a title, beside its api.php (…/w/api.php → …/wiki/Title). */
export function articleUrl(apiUrl: string, title: string): string {
  return `${new URL(apiUrl).origin}/wiki/${titlePath(title)}`;
}

/** Parses a `list=search` answer into hits (the snippet's searchmatch spans dropped). */
export function parseWikipediaSearch(body: unknown, apiUrl: string): Omit<SearchHit, "document">[] {
  return parse(SearchAnswer, body).query.search.map((hit) => ({
    url: articleUrl(apiUrl, hit.title),
    title: hit.title,
    snippet: stripMarkup(hit.snippet ?? ""),
    ...(hit.timestamp ? { publishedAt: hit.timestamp } : {}),
  }));
}

/**
 * The article's text as paragraphs: the extract's lines are paragraphs, `== Heading ==` lines
 * become their own (plain) paragraph, and the apparatus sections at the end (See also, References,
 * External links, …, with their subsections) are left out.
 */
export function articleText(extract: string): string {
  const paragraphs: string[] = [];
  let skipBelow = 0; // inside an apparatus section of this heading level (0: not skipping)
  let heading: string | undefined; // kept until text follows it: an empty section says nothing
  // Intro-only extracts may run paragraphs together ("…behaves.Physics is…"): split them again.
  const text = extract.replace(/(\p{Ll}{2}[.!?])(?=\p{Lu}\p{Ll})/gu, "$1\n");
  for (const raw of text.split("\n")) {
    const line = raw.trim();
    if (!line) continue;
    const match = /^(={2,6})\s*(.*?)\s*\1$/.exec(line);
    if (match) {
      const level = (match[1] as string).length;
      const name = match[2] as string;
      if (skipBelow > 0 && level > skipBelow) continue;
      skipBelow = APPARATUS_SECTIONS.has(name.toLowerCase()) ? level : 0;
      heading = skipBelow === 0 && name ? name : undefined;
      continue;
    }
    if (skipBelow > 0) continue;
    if (heading) paragraphs.push(heading);
    heading = undefined;
    paragraphs.push(line.replace(/\s+/g, " "));
  }
  return paragraphs.join("\n\n");
}

/** The permanent link to one revision: https://<host>/w/index.php?title=<Title>&oldid=<revid>. */
export function revisionPermalink(
  apiUrl: string,
  page: Pick<Page, "title" | "canonicalurl" | "fullurl">,
  revid: number,
) {
  const api = new URL(apiUrl);
  // The article's own URL names the public host (the API may be reached through another address).
  const known = page.canonicalurl ?? page.fullurl;
  const origin = known ? new URL(known, api).origin : api.origin;
  const script = api.pathname.endsWith("/api.php")
    ? api.pathname.replace(/api\.php$/, "index.php")
    : "/w/index.php";
  return `${origin}${script}?title=${titlePath(page.title)}&oldid=${revid}`;
}

/**
 * Reads a `prop=extracts|revisions|info` answer: the first page that exists, its extract, and the
 * revision it was read at (`revisions[0].revid`, else `lastrevid`). `warnings`, `normalized`,
 * `redirects`, `continue` and the absence of `revisions` or `info` are all tolerated. The cited URL
 * is the revision's permalink when a revision id is known, else the article's URL.
 */
export function parseWikipediaArticle(body: unknown, apiUrl: string): SourceDocument {
  const pagesField = parse(ArticleAnswer, body).query?.pages;
  const pages: Page[] = Array.isArray(pagesField) ? pagesField : Object.values(pagesField ?? {});
  const page = pages.find((candidate) => candidate.missing === undefined && candidate.invalid === undefined);
  if (!page) {
    const asked = pages[0]?.title;
    throw new ProviderError(PROVIDER, `has no article${asked ? ` titled "${asked}"` : ""}`, false);
  }
  const text = articleText(page.extract ?? "");
  if (!text) throw new ProviderError(PROVIDER, `gave no text for "${page.title}"`, false);
  const revision = page.revisions?.[0];
  const revid = revision?.revid ?? page.lastrevid;
  const publishedAt = revision?.timestamp ?? page.touched;
  return {
    url:
      revid !== undefined
        ? revisionPermalink(apiUrl, page, revid)
        : (page.canonicalurl ?? page.fullurl ?? articleUrl(apiUrl, page.title)),
    title: page.title,
    text,
    ...(publishedAt ? { publishedAt } : {}),
    kind: "wikipedia",
    licence: WIKIPEDIA_LICENCE,
  };
}

export function searchRequest(apiUrl: string, query: string, count: number): string {
  const url = new URL(apiUrl);
  url.search = new URLSearchParams({
    action: "query",
    list: "search",
    srsearch: query,
    srlimit: String(Math.min(Math.max(count, 1), 50)),
    srnamespace: "0",
    format: "json",
    formatversion: "1",
  }).toString();
  return url.toString();
}

export function articleRequest(apiUrl: string, title: string): string {
  const url = new URL(apiUrl);
  url.search = new URLSearchParams({
    action: "query",
    prop: "extracts|revisions|info",
    titles: title,
    explaintext: "1",
    exsectionformat: "wiki",
    rvprop: "ids|timestamp",
    inprop: "url",
    redirects: "1",
    format: "json",
    formatversion: "1",
  }).toString();
  return url.toString();
}

/** Search hits whose document is one more API call (made only when the pipeline reads that hit). */
export function createWikipediaProvider(apiUrl: string, http: PoliteFetcher): SearchProvider {
  return {
    name: PROVIDER,
    async search(query, { count, signal }) {
      const body = await http.getJson(PROVIDER, searchRequest(apiUrl, query, count), {
        timeoutMs: TIMEOUT_MS,
        signal,
      });
      return parseWikipediaSearch(body, apiUrl)
        .slice(0, count)
        .map((hit) => ({
          ...hit,
          document: async (documentSignal?: AbortSignal) =>
            parseWikipediaArticle(
              await http.getJson(PROVIDER, articleRequest(apiUrl, hit.title), {
                timeoutMs: TIMEOUT_MS,
                signal: documentSignal,
              }),
              apiUrl,
            ),
        }));
    },
  };
}
