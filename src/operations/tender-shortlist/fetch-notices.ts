import { type NormalizedNotice, normalizeNotice } from "./normalize.ts";
import { MAX_RESULTS_LIMIT } from "./schema.ts";
import { type FetchedNotices, selectCandidates } from "./shortlist.ts";
import {
  TED_FIELDS,
  TED_MAX_FIELDS_PER_PAGE,
  TED_MAX_NOTICES_PER_PAGE,
  type TedClient,
} from "./ted-client.ts";

/** Notices per page: 100, within TED's budget of 250 notices and 10,000 fields (notices × fields) a page. */
export const PAGE_SIZE = Math.min(
  100,
  TED_MAX_NOTICES_PER_PAGE,
  Math.floor(TED_MAX_FIELDS_PER_PAGE / TED_FIELDS.length),
);
/** At most this many pages per query (500 notices), however few of them are current competitions. */
export const MAX_PAGES = 5;

export interface FetchOptions {
  pageSize?: number;
  maxPages?: number;
  now: () => Date;
}

/**
 * Reads result pages in order until enough current competition notices are in hand to fill the largest
 * shortlist (30, whatever this request's maxResults, so the result serves every request with the same
 * query), TED has no more, or MAX_PAGES pages were read.
 */
export async function fetchNotices(
  client: TedClient,
  query: string,
  options: FetchOptions,
): Promise<FetchedNotices> {
  const pageSize = options.pageSize ?? PAGE_SIZE;
  const maxPages = options.maxPages ?? MAX_PAGES;
  const notices: NormalizedNotice[] = [];
  let pages = 0;
  for (let page = 1; page <= maxPages; page++) {
    const result = await client.searchPage({
      query,
      fields: TED_FIELDS,
      page,
      limit: pageSize,
      scope: "ACTIVE",
      paginationMode: "PAGE_NUMBER",
      checkQuerySyntax: false,
    });
    pages++;
    notices.push(...result.notices.map(normalizeNotice));
    const exhausted =
      result.notices.length < pageSize ||
      (result.totalNoticeCount !== undefined && page * pageSize >= result.totalNoticeCount);
    if (exhausted || selectCandidates(notices, options.now()).candidates.length >= MAX_RESULTS_LIMIT) break;
  }
  return { query, pages, notices };
}
