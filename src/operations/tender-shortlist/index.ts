import { defineOperation, type StartedOperation } from "../../contract/operation.ts";
import type { OperationEnvironment } from "../../operation-environment.ts";
import { limitConcurrency } from "../retry.ts";
import { buildExpertQuery } from "./expert-query.ts";
import { fetchNotices } from "./fetch-notices.ts";
import {
  type TenderShortlistInput,
  type TenderShortlistOutput,
  TenderShortlistRequest,
  TenderShortlistResponse,
} from "./schema.ts";
import { type SearchCache, StoreSearchCache } from "./search-cache.ts";
import { buildShortlist, type FetchedNotices, fetchedNoticesCodec } from "./shortlist.ts";
import { TedClient } from "./ted-client.ts";

/** Distinct queries also kept in memory per instance; each holds at most 500 normalised notices. */
const CACHE_MAX_LOCAL_ENTRIES = 200;
/** How long one instance may fetch a query before another may take over (a fetch that died with its instance). */
const CACHE_LOAD_LEASE_MS = 120_000;

const RETRIES = 3;

/** The whole operation over its clients: query → (cached or single-flight) fetch → shortlist. */
function createTenderShortlist(client: TedClient, cache: SearchCache<FetchedNotices>, now: () => Date) {
  return async (input: TenderShortlistInput) => {
    const query = buildExpertQuery(input);
    const { value } = await cache.getOrLoad(query, () => fetchNotices(client, query, { now }));
    return { body: buildShortlist(value, input, now()) };
  };
}

/**
 * POST and GET are two registry entries of one operation: both forms share one client, one bound on
 * upstream calls in flight and one cache per running service (its config object).
 */
const startedByService = new WeakMap<object, StartedOperation<TenderShortlistInput, TenderShortlistOutput>>();

async function start(env: OperationEnvironment) {
  let started = startedByService.get(env.config);
  if (!started) {
    started = bind(env);
    startedByService.set(env.config, started);
  }
  return started;
}

function bind(env: OperationEnvironment): StartedOperation<TenderShortlistInput, TenderShortlistOutput> {
  const { config, now } = env;
  const client = new TedClient({
    url: config.ted.apiUrl,
    userAgent: `utility402/1.0 (tender-shortlist; +${config.baseUrl})`,
    timeoutMs: config.ted.timeoutMs,
    retries: RETRIES,
    backoffBaseMs: config.ted.retryBaseMs,
    maxRetryAfterMs: config.ted.timeoutMs,
    limit: limitConcurrency(config.ted.maxInFlight),
  });
  // In the store, so that instances sharing a database share the cache and fetch a query once.
  const cache = new StoreSearchCache<FetchedNotices>({
    store: env.store,
    // v2: notices carry every kind of deadline, the buyer's own texts, URLs and languages; entries cached by an
    // instance still running the previous shape are not read back.
    namespace: "tender-shortlist:v2",
    codec: fetchedNoticesCodec,
    ttlMs: config.ted.cacheTtlMs,
    loadLeaseMs: CACHE_LOAD_LEASE_MS,
    maxLocalEntries: CACHE_MAX_LOCAL_ENTRIES,
    now: () => now().getTime(),
  });
  return {
    handle: createTenderShortlist(client, cache, now),
    catalogDetails: { upstream: "TED Search API v3", cacheTtlSeconds: config.ted.cacheTtlMs / 1000 },
  };
}

const exampleInput = { query: "software", countries: ["AUT"], cpvCodes: ["72"], maxResults: 1 };

const common = {
  priceUsd: "0.15",
  kind: "sync",
  tags: ["tenders"],
  input: TenderShortlistRequest,
  output: TenderShortlistResponse,
  outputContentType: "application/json",
  example: {
    input: exampleInput,
    output: {
      generatedAt: "2026-10-08T09:00:00Z",
      query:
        'FT~"software" AND buyer-country IN (AUT) AND classification-cpv=72* AND notice-type IN (cn-standard ' +
        "cn-social cn-desg pin-cfc-standard pin-cfc-social qu-sy subco) SORT BY publication-date DESC",
      count: 1,
      tenders: [
        {
          noticeId: "688936-2026",
          title:
            "Austria – IT services: consulting, software development, Internet and support – DIGIT- Bereitstellen von diversen IT-Dienstleistungen",
          buyerName: "Oberösterreichische Gesundheitsholding GmbH und Tochterunternehmen",
          buyerCountry: "AUT",
          deadline: "2026-11-04T22:59:59Z",
          deadlineType: "tender",
          deadlines: [{ type: "tender", at: "2026-11-04T22:59:59Z", open: true }],
          estimatedValue: null,
          currency: null,
          fitScore: 47,
          fitReasons: [
            "+12: CPV 72000000 falls under the requested prefix 72",
            "+10: the buyer is in AUT, a requested country",
            "+15: 27 days until the deadline (2026-11-04T22:59:59Z)",
            "+10: a contract notice (cn-standard): an open call for tenders",
          ],
          risks: [
            "no estimated value published",
            "procurement in deu, not English (the language of the buyer's own texts): the documents and the bid are likely in deu",
            "11 lots: check which lots fit and each lot's conditions",
          ],
          sourceUrl: "https://ted.europa.eu/en/notice/-/detail/688936-2026",
          submissionUrls: [],
          documentUrls: [],
          noticeType: "cn-standard",
          publicationDate: "2026-10-06",
          cpvCodes: ["72000000", "72262000", "72266000", "72250000", "72253000"],
          lotCount: 11,
          languages: ["deu"],
          submissionLanguages: [],
        },
      ],
      stats: { pages: 1, scanned: 5, dropped: 0, duplicates: 0 },
    },
  },
  errorResponses: [
    { status: 502, description: "The official notice upstream (TED) is unavailable; nothing is charged." },
  ],
  start,
} as const;

const DESCRIPTION =
  "Up to 30 current EU procurement notices from TED (Search API v3) that fit a profile: free text, keywords, " +
  "buyer countries (ISO 3166-1 alpha-3), CPV codes or prefixes, publication and deadline ranges, a minimum " +
  "value. Only competitions still open (contract notices, calls for competition); awards and past deadlines are " +
  "dropped, one notice per procedure (the latest). Each tender is normalised (every deadline TED publishes, " +
  "tender and request to participate, in UTC, with which one `deadline` is; value and currency; buyer; English " +
  "title where TED has one; submission and document URLs; the procurement languages) and scored 0-100 with the " +
  "reason for every point (query and keywords as whole words in the buyer's own title, description and lots) " +
  "and the risks to check, with the official notice link. Identical queries within 10 minutes are answered from a cache. " +
  "TED unavailable: 502, never charged.";

export const tenderShortlist = defineOperation({
  ...common,
  id: "tender-shortlist",
  method: "POST",
  path: "/v1/tender-shortlist",
  summary: "Shortlist current EU public tenders (TED)",
  description: DESCRIPTION,
  inputFrom: "body",
  bodyOptional: true,
});

export const tenderShortlistGet = defineOperation({
  ...common,
  id: "tender-shortlist-get",
  method: "GET",
  path: "/v1/tender-shortlist",
  summary: "Shortlist current EU public tenders (TED), query-string form",
  description:
    "The GET compatibility form of POST /v1/tender-shortlist: the same fields as query parameters " +
    "(arrays repeated or comma-separated: ?countries=DEU&countries=AUT or ?countries=DEU,AUT), the same " +
    `validation, price and response. ${DESCRIPTION}`,
  inputFrom: "query",
});
