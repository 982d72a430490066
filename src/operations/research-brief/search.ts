import { z } from "zod";
import { createCrossrefProvider } from "./crossref.ts";
import { createPoliteFetcher } from "./polite-fetch.ts";
import { ProviderError, providerFetch } from "./retry.ts";
import type { SearchHit, SearchProvider } from "./search-provider.ts";
import type { ResearchSettings, SearchProviderName } from "./settings.ts";
import { createWikipediaProvider } from "./wikipedia.ts";

type WebSearchSettings = { provider: "searxng" | "brave" | "tavily"; url: string; apiKey?: string };
export type SearchSettings = ResearchSettings["search"];

/** What the catalog, /readyz, the banner and a brief's method.search call the configured search. */
export const searchName = (settings: Pick<SearchSettings, "providers">) => settings.providers.join("+");

const SEARCH_TIMEOUT_MS = 20_000;

/** Parses a provider's answer; a shape it does not have is the provider's failure, not ours. */
function parseAnswer<T extends z.ZodType>(provider: string, schema: T, body: unknown): z.output<T> {
  const parsed = schema.safeParse(body);
  if (!parsed.success) {
    const where = parsed.error.issues[0]?.path.join(".") || "body";
    throw new ProviderError(provider, `answered an unexpected shape (at ${where})`, false);
  }
  return parsed.data;
}

const text = z
  .string()
  .nullish()
  .transform((value) => value ?? "");

/** SearXNG's JSON API: GET /search?q=…&format=json (the instance must enable the json format). */
const SearxngAnswer = z.looseObject({
  results: z.array(
    z.looseObject({ url: z.string(), title: text, content: text, publishedDate: z.string().nullish() }),
  ),
});

/** Brave Web Search: GET …/res/v1/web/search?q=…&count=… with X-Subscription-Token. */
const BraveAnswer = z.looseObject({
  web: z
    .looseObject({
      results: z.array(
        z.looseObject({ url: z.string(), title: text, description: text, page_age: z.string().nullish() }),
      ),
    })
    .optional(),
});

/** Tavily: POST /search with a bearer key and { query, max_results }. */
const TavilyAnswer = z.looseObject({
  results: z.array(
    z.looseObject({ url: z.string(), title: text, content: text, published_date: z.string().nullish() }),
  ),
});

/** Search result snippets may carry HTML emphasis (Brave's <strong>): keep the words only. */
const stripTags = (value: string) =>
  value
    .replace(/<[^>]*>/g, "")
    .replace(/\s+/g, " ")
    .trim();

/**
 * Every configured provider for one query, side by side, their hits interleaved by rank in the
 * configured order. A provider that fails leaves the others' hits; only when all fail does the
 * search fail (retryable when any failure was).
 */
export function createSearchProviders(settings: SearchSettings): SearchProvider {
  const http = createPoliteFetcher(settings.userAgent);
  const providers = settings.providers.map((name: SearchProviderName): SearchProvider => {
    switch (name) {
      case "wikipedia":
        return createWikipediaProvider(settings.wikipediaUrl, http);
      case "crossref":
        return createCrossrefProvider(settings.crossrefUrl, http, settings.mailto);
      default:
        if (settings.web?.provider !== name) throw new Error(`search provider ${name} is not configured`);
        return createSearchProvider(settings.web);
    }
  });
  if (providers.length === 1) return providers[0] as SearchProvider;
  return {
    name: searchName(settings),
    async search(query, options) {
      const results = await Promise.allSettled(providers.map((provider) => provider.search(query, options)));
      const lists = results.flatMap((result) => (result.status === "fulfilled" ? [result.value] : []));
      if (lists.length === 0) {
        const errors = results.map((result) => (result as PromiseRejectedResult).reason);
        throw new ProviderError(
          searchName(settings),
          errors.map((error) => (error instanceof Error ? error.message : String(error))).join("; "),
          errors.some((error) => !(error instanceof ProviderError) || error.retryable),
        );
      }
      const merged: SearchHit[] = [];
      for (let rank = 0; rank < Math.max(...lists.map((list) => list.length)); rank++) {
        for (const list of lists) if (list[rank]) merged.push(list[rank] as SearchHit);
      }
      return merged;
    },
  };
}

/** One web search engine (SearXNG, Brave, Tavily): hits whose pages the safe fetcher reads. */
export function createSearchProvider(settings: WebSearchSettings): SearchProvider {
  const { provider, url, apiKey } = settings;
  switch (provider) {
    case "searxng":
      return {
        name: provider,
        async search(query, { count, signal }) {
          const endpoint = new URL(url);
          if (!endpoint.pathname.endsWith("/search")) {
            endpoint.pathname = `${endpoint.pathname.replace(/\/+$/, "")}/search`;
          }
          endpoint.searchParams.set("q", query);
          endpoint.searchParams.set("format", "json");
          const body = await providerFetch(provider, endpoint.toString(), {
            headers: { accept: "application/json", ...(apiKey ? { authorization: `Bearer ${apiKey}` } : {}) },
            timeoutMs: SEARCH_TIMEOUT_MS,
            signal,
          });
          return parseAnswer(provider, SearxngAnswer, body)
            .results.slice(0, count)
            .map((hit) => ({
              url: hit.url,
              title: stripTags(hit.title),
              snippet: stripTags(hit.content),
              ...(hit.publishedDate ? { publishedAt: hit.publishedDate } : {}),
            }));
        },
      };
    case "brave":
      return {
        name: provider,
        async search(query, { count, signal }) {
          const endpoint = new URL(url);
          endpoint.searchParams.set("q", query);
          endpoint.searchParams.set("count", String(Math.min(count, 20)));
          const body = await providerFetch(provider, endpoint.toString(), {
            headers: { accept: "application/json", "x-subscription-token": apiKey ?? "" },
            timeoutMs: SEARCH_TIMEOUT_MS,
            signal,
          });
          return (parseAnswer(provider, BraveAnswer, body).web?.results ?? []).slice(0, count).map((hit) => ({
            url: hit.url,
            title: stripTags(hit.title),
            snippet: stripTags(hit.description),
            ...(hit.page_age ? { publishedAt: hit.page_age } : {}),
          }));
        },
      };
    case "tavily":
      return {
        name: provider,
        async search(query, { count, signal }) {
          const body = await providerFetch(provider, url, {
            method: "POST",
            headers: { "content-type": "application/json", authorization: `Bearer ${apiKey ?? ""}` },
            body: JSON.stringify({ query, max_results: Math.min(count, 20), search_depth: "basic" }),
            timeoutMs: SEARCH_TIMEOUT_MS,
            signal,
          });
          return parseAnswer(provider, TavilyAnswer, body)
            .results.slice(0, count)
            .map((hit) => ({
              url: hit.url,
              title: stripTags(hit.title),
              snippet: stripTags(hit.content),
              ...(hit.published_date ? { publishedAt: hit.published_date } : {}),
            }));
        },
      };
  }
}
