import { z } from "zod";
import { Problem } from "../../problem.ts";
import { type Limit, retry, sleep } from "../retry.ts";

/**
 * The notice fields a shortlist reads (TED returns `links` with every notice unasked): every deadline TED
 * publishes (tenders, requests to participate, expressions of interest, each with its time), the buyer's own
 * titles and descriptions (procedure and lots), the submission and document URLs, and the language fields.
 */
export const TED_FIELDS = [
  "publication-number",
  "notice-title",
  "title-proc",
  "description-proc",
  "title-lot",
  "description-lot",
  "buyer-name",
  "buyer-country",
  "publication-date",
  "deadline-receipt-tender-date-lot",
  "deadline-receipt-tender-time-lot",
  "deadline-receipt-request-date-lot",
  "deadline-receipt-request-time-lot",
  "deadline-receipt-expressions-date-lot",
  "deadline-receipt-expressions-time-lot",
  "submission-url-lot",
  "document-url-lot",
  "submission-language",
  "notice-type",
  "form-type",
  "classification-cpv",
  "estimated-value-proc",
  "estimated-value-cur-proc",
  "estimated-value-lot",
  "estimated-value-cur-lot",
  "estimated-value-glo",
  "estimated-value-cur-glo",
  "total-value",
  "total-value-cur",
  "framework-agreement-lot",
  "identifier-lot",
  "procedure-identifier",
  "notice-identifier",
  "notice-version",
  "official-language",
] as const;

/** TED's per-page limits (reference: "Definition of limits", pagination mode). */
export const TED_MAX_NOTICES_PER_PAGE = 250;
export const TED_MAX_FIELDS_PER_PAGE = 10_000;

export interface TedSearchRequest {
  query: string;
  fields: readonly string[];
  page: number;
  limit: number;
  scope: "ACTIVE";
  paginationMode: "PAGE_NUMBER";
  checkQuerySyntax: false;
}

/** A notice as TED returns it: field name → value (shapes vary: a string, a list, a language map). */
export type TedNotice = Record<string, unknown>;

/** Only what pagination needs is required; notices are read field by field, tolerating shape drift. */
const TedPage = z.looseObject({
  notices: z.array(z.looseObject({ "publication-number": z.string().min(1) })),
  totalNoticeCount: z.number().int().min(0).optional(),
  timedOut: z.boolean().optional(),
});

export interface TedPageResult {
  notices: TedNotice[];
  totalNoticeCount?: number;
}

export interface TedClientOptions {
  url: string;
  userAgent: string;
  timeoutMs: number;
  /** Retries after the first attempt, on 429, 5xx, timeouts and network errors. */
  retries: number;
  /** Base of the exponential backoff; each wait is jittered between half and the full value. */
  backoffBaseMs: number;
  /** Longest wait honoured from a Retry-After header (a longer one ends the retries). */
  maxRetryAfterMs: number;
  /** Bounds the upstream calls in flight across all requests of this service. */
  limit: Limit;
  random?: () => number;
  sleep?: (ms: number) => Promise<void>;
}

const upstreamUnavailable = (detail: string) =>
  Problem.of(
    "upstream-unavailable",
    `TED did not answer usably: ${detail}; nothing was charged, try again later`,
  );

class RetryableError extends Error {
  constructor(
    message: string,
    readonly retryAfterMs?: number,
  ) {
    super(message);
  }
}

/** Retry-After as delta seconds or an HTTP date; undefined when absent or unreadable. */
export function retryAfterMs(header: string | null, now = Date.now()): number | undefined {
  if (!header) return undefined;
  if (/^\d+$/.test(header.trim())) return Number(header.trim()) * 1000;
  const at = Date.parse(header);
  return Number.isNaN(at) ? undefined : Math.max(0, at - now);
}

export class TedClient {
  private readonly random: () => number;
  private readonly sleep: (ms: number) => Promise<void>;

  constructor(private readonly options: TedClientOptions) {
    this.random = options.random ?? Math.random;
    this.sleep = options.sleep ?? sleep;
  }

  /** One result page; throws a 502 Problem once the retries are spent or the answer is unusable. */
  async searchPage(request: TedSearchRequest): Promise<TedPageResult> {
    const attempts = this.options.retries + 1;
    let tried = 0;
    try {
      return await retry(
        ({ number }) => {
          tried = number;
          return this.options.limit(() => this.attempt(request));
        },
        {
          attempts,
          baseMs: this.options.backoffBaseMs,
          jitter: this.random,
          retryOn: (error) => error instanceof RetryableError,
          retryAfterMs: (outcome) =>
            "error" in outcome ? (outcome.error as RetryableError).retryAfterMs : undefined,
          maxRetryAfterMs: this.options.maxRetryAfterMs,
          sleep: this.sleep,
        },
      );
    } catch (error) {
      if (!(error instanceof RetryableError)) throw error;
      let lastError = error.message;
      if (
        tried < attempts &&
        error.retryAfterMs !== undefined &&
        error.retryAfterMs > this.options.maxRetryAfterMs
      ) {
        lastError += ` (asked to retry after ${Math.ceil(error.retryAfterMs / 1000)} s)`;
      }
      throw upstreamUnavailable(`${lastError} after ${attempts} attempts`);
    }
  }

  private async attempt(request: TedSearchRequest): Promise<TedPageResult> {
    let response: Response;
    let text: string;
    try {
      response = await fetch(this.options.url, {
        method: "POST",
        headers: {
          "content-type": "application/json",
          accept: "application/json",
          "user-agent": this.options.userAgent,
        },
        body: JSON.stringify(request),
        signal: AbortSignal.timeout(this.options.timeoutMs),
      });
      text = await response.text();
    } catch (error) {
      const name = (error as Error).name;
      throw new RetryableError(
        name === "TimeoutError" || name === "AbortError"
          ? `no answer within ${this.options.timeoutMs} ms`
          : `network error (${(error as Error).message})`,
      );
    }
    if (response.status === 429 || response.status >= 500) {
      throw new RetryableError(`HTTP ${response.status}`, retryAfterMs(response.headers.get("retry-after")));
    }
    if (response.status !== 200) {
      // A 4xx other than 429 is TED refusing this query: retrying cannot help, and the agent's input was
      // already validated, so it is an upstream failure (never charged), not the agent's fault.
      throw upstreamUnavailable(`HTTP ${response.status}: ${text.slice(0, 200)}`);
    }
    let body: unknown;
    try {
      body = JSON.parse(text);
    } catch {
      throw new RetryableError(`an answer that is not JSON (${JSON.stringify(text.slice(0, 60))}…)`);
    }
    const page = TedPage.safeParse(body);
    if (!page.success) {
      const issue = page.error.issues[0];
      throw new RetryableError(
        `an unexpected answer shape (${issue?.path.join(".") || "body"}: ${issue?.message})`,
      );
    }
    if (page.data.timedOut) throw new RetryableError("a search that timed out upstream");
    return { notices: page.data.notices as TedNotice[], totalNoticeCount: page.data.totalNoticeCount };
  }
}
