import { z } from "zod";
import type { Config } from "../../config.ts";
import { ProviderError, providerFetch } from "./retry.ts";

export interface SearchHit {
  url: string;
  title: string;
  snippet: string;
  publishedAt?: string;
}

export interface SearchProvider {
  readonly name: "searxng" | "brave" | "tavily";
  search(query: string, options: { count: number; signal?: AbortSignal }): Promise<SearchHit[]>;
}

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

export function createSearchProvider(settings: NonNullable<Config["research"]["search"]>): SearchProvider {
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
