import { z } from "zod";
import { envSettings, httpUrl, optional } from "../../env-settings.ts";
import { parseAllowHost } from "./fetch-allow.ts";

/** Search providers RESEARCH_SEARCH_PROVIDER may list; the first three are web search engines. */
export const SEARCH_PROVIDERS = ["searxng", "brave", "tavily", "wikipedia", "crossref"] as const;
export type SearchProviderName = (typeof SEARCH_PROVIDERS)[number];
const WEB_SEARCH = ["searxng", "brave", "tavily"] as const;
type WebSearchName = (typeof WEB_SEARCH)[number];
const isWebSearch = (name: SearchProviderName): name is WebSearchName =>
  (WEB_SEARCH as readonly string[]).includes(name);

const DEFAULT_SEARCH_URLS = {
  searxng: "",
  brave: "https://api.search.brave.com/res/v1/web/search",
  tavily: "https://api.tavily.com/search",
} as const;

export interface ResearchSettings {
  search: {
    /** RESEARCH_SEARCH_PROVIDER in order (default wikipedia, crossref); their hits are interleaved. */
    providers: SearchProviderName[];
    /** The web search engine among them (at most one), with its endpoint and key. */
    web?: { provider: WebSearchName; url: string; apiKey?: string };
    /** MediaWiki Action API endpoint (…/w/api.php). */
    wikipediaUrl: string;
    /** Crossref REST API base (…/works is appended). */
    crossrefUrl: string;
    /** RESEARCH_CONTACT: the operator's email or URL, named in the User-Agent. */
    contact?: string;
    /** Sent to Crossref as `mailto` when the contact is an email (its "polite pool"). */
    mailto?: string;
    /** Names the service, its BASE_URL and the contact to Wikipedia and Crossref. */
    userAgent: string;
  };
  /** Unset: briefs are extractive (ranked sentences from the sources), no model. */
  llm?: { baseUrl: string; apiKey?: string; model: string };
  /**
   * `host:port` entries (IPv6 `[::1]:8080`) the page fetcher may reach although the host is or
   * resolves to a private address; a bare host allows ports 80 and 443 only. Canonical form.
   */
  fetchAllowHosts: string[];
}

/**
 * The User-Agent for Wikipedia and Crossref, as their policies ask: the service, how to reach it,
 * and the operator (`mailto:` for an email), e.g.
 * `utility402/1.0 (research-brief; +https://api.example; mailto:ops@example.org)`.
 */
export function researchUserAgent(baseUrl: string, contact?: string): string {
  const who = contact ? `; ${contact.includes("://") ? contact : `mailto:${contact}`}` : "";
  return `utility402/1.0 (research-brief; +${baseUrl}${who})`;
}

/** The web search engines RESEARCH_SEARCH_PROVIDER names (check() allows at most one). */
const webSearchesOf = (providers: SearchProviderName[] | undefined) => (providers ?? []).filter(isWebSearch);

export const researchSettings = envSettings({
  variables: {
    RESEARCH_SEARCH_PROVIDER: optional(
      z
        .string()
        .transform((list) => [
          ...new Set(
            list
              .split(",")
              .map((name) => name.trim().toLowerCase())
              .filter(Boolean),
          ),
        ])
        .pipe(
          z
            .array(z.enum(SEARCH_PROVIDERS, { error: `each must be one of ${SEARCH_PROVIDERS.join(", ")}` }))
            .min(1, "must name at least one provider"),
        ),
    ).default(["wikipedia", "crossref"]),
    RESEARCH_SEARCH_URL: optional(httpUrl),
    RESEARCH_SEARCH_API_KEY: optional(z.string()),
    RESEARCH_WIKIPEDIA_URL: optional(httpUrl).default("https://en.wikipedia.org/w/api.php"),
    RESEARCH_CROSSREF_URL: optional(httpUrl).default("https://api.crossref.org"),
    RESEARCH_CONTACT: optional(
      z
        .string()
        .trim()
        .refine(
          (value) => z.email().safeParse(value).success || httpUrl.safeParse(value).success,
          "must be an email address or an http(s) URL",
        ),
    ),
    RESEARCH_LLM_BASE_URL: optional(httpUrl),
    RESEARCH_LLM_API_KEY: optional(z.string()),
    RESEARCH_LLM_MODEL: optional(z.string().min(1)),
    RESEARCH_FETCH_ALLOW_HOSTS: optional(
      z.string().transform((value, context) =>
        value
          .split(",")
          .filter((entry) => entry.trim())
          .flatMap((entry) => {
            const parsed = parseAllowHost(entry);
            if ("entry" in parsed) return [parsed.entry];
            context.addIssue({ code: "custom", message: `${parsed.error} (write host or host:port)` });
            return [];
          }),
      ),
    ).default([]),
  },
  check: (e) => {
    const problems: string[] = [];
    const webSearches = webSearchesOf(e.RESEARCH_SEARCH_PROVIDER);
    const searchProvider = webSearches[0];
    if (webSearches.length > 1) {
      problems.push(
        `RESEARCH_SEARCH_PROVIDER: at most one of ${WEB_SEARCH.join(", ")} (they share RESEARCH_SEARCH_URL and RESEARCH_SEARCH_API_KEY); got ${webSearches.join(", ")}`,
      );
    }
    if (searchProvider === "searxng" && !e.RESEARCH_SEARCH_URL) {
      problems.push(
        "RESEARCH_SEARCH_URL: required when RESEARCH_SEARCH_PROVIDER=searxng (your instance's base URL)",
      );
    }
    if ((searchProvider === "brave" || searchProvider === "tavily") && !e.RESEARCH_SEARCH_API_KEY) {
      problems.push(`RESEARCH_SEARCH_API_KEY: required when RESEARCH_SEARCH_PROVIDER=${searchProvider}`);
    }
    if (e.RESEARCH_LLM_BASE_URL && !e.RESEARCH_LLM_MODEL) {
      problems.push("RESEARCH_LLM_MODEL: required when RESEARCH_LLM_BASE_URL is set");
    }
    return problems;
  },
  read: (e, { baseUrl }): ResearchSettings => {
    const searchProvider = webSearchesOf(e.RESEARCH_SEARCH_PROVIDER)[0];
    return {
      search: {
        providers: e.RESEARCH_SEARCH_PROVIDER,
        ...(searchProvider
          ? {
              web: {
                provider: searchProvider,
                url: e.RESEARCH_SEARCH_URL ?? DEFAULT_SEARCH_URLS[searchProvider],
                apiKey: e.RESEARCH_SEARCH_API_KEY,
              },
            }
          : {}),
        wikipediaUrl: e.RESEARCH_WIKIPEDIA_URL,
        crossrefUrl: e.RESEARCH_CROSSREF_URL.replace(/\/+$/, ""),
        ...(e.RESEARCH_CONTACT ? { contact: e.RESEARCH_CONTACT } : {}),
        ...(e.RESEARCH_CONTACT?.includes("@") && !e.RESEARCH_CONTACT.includes("://")
          ? { mailto: e.RESEARCH_CONTACT }
          : {}),
        userAgent: researchUserAgent(baseUrl, e.RESEARCH_CONTACT),
      },
      llm: e.RESEARCH_LLM_BASE_URL
        ? {
            baseUrl: e.RESEARCH_LLM_BASE_URL.replace(/\/+$/, ""),
            apiKey: e.RESEARCH_LLM_API_KEY,
            model: e.RESEARCH_LLM_MODEL as string,
          }
        : undefined,
      fetchAllowHosts: e.RESEARCH_FETCH_ALLOW_HOSTS,
    };
  },
});
