import { afterEach, describe, expect, it } from "vitest";
import {
  fixturePages,
  type StandInAnswer,
  startTedStandIn,
  type TedStandIn,
} from "../../../test/fixtures/ted/stand-in.ts";
import { freePort } from "../../../test/helpers/service.ts";
import { Problem } from "../../problem.ts";
import { limitConcurrency } from "../retry.ts";
import { fetchNotices, MAX_PAGES, PAGE_SIZE } from "./fetch-notices.ts";
import {
  retryAfterMs,
  TED_FIELDS,
  TED_MAX_FIELDS_PER_PAGE,
  TedClient,
  type TedClientOptions,
  type TedSearchRequest,
} from "./ted-client.ts";

const NOW = new Date("2027-03-01T09:00:00Z");
const REQUEST: TedSearchRequest = {
  query: "buyer-country IN (AUT)",
  fields: TED_FIELDS,
  page: 1,
  limit: 10,
  scope: "ACTIVE",
  paginationMode: "PAGE_NUMBER",
  checkQuerySyntax: false,
};
const PAGE_03 = fixturePages("search-response-03.json", NOW)[0];

let standIn: TedStandIn | undefined;
afterEach(async () => {
  await standIn?.close();
  standIn = undefined;
});

/** A client of the stand-in whose waits are recorded instead of slept. */
function clientOf(url: string, options: Partial<TedClientOptions> = {}) {
  const waits: number[] = [];
  const client = new TedClient({
    url,
    userAgent: "utility402-test",
    timeoutMs: 2000,
    retries: 3,
    backoffBaseMs: 100,
    maxRetryAfterMs: 10_000,
    limit: limitConcurrency(4),
    random: () => 1,
    sleep: async (ms) => {
      waits.push(ms);
    },
    ...options,
  });
  return { client, waits };
}

async function serve(answer: (request: Record<string, unknown>, index: number) => StandInAnswer) {
  standIn = await startTedStandIn(answer);
  return standIn;
}

async function upstreamProblem(call: Promise<unknown>): Promise<Problem> {
  const error = await call.then(
    () => undefined,
    (caught: unknown) => caught,
  );
  expect(error).toBeInstanceOf(Problem);
  expect((error as Problem).status).toBe(502);
  return error as Problem;
}

describe("the TED client", () => {
  it("posts the search with a User-Agent and reads the page", async () => {
    const ted = await serve(() => ({ body: PAGE_03 }));
    const page = await clientOf(ted.url).client.searchPage(REQUEST);
    expect(page.notices.map((notice) => notice["publication-number"])).toHaveLength(5);
    expect(page.totalNoticeCount).toBe(24);
    expect(ted.requests).toEqual([REQUEST]);
    expect(ted.userAgents).toEqual(["utility402-test"]);
  });

  it("retries 429 and 5xx with growing jittered waits, honouring Retry-After", async () => {
    const ted = await serve((_, index) =>
      index === 0
        ? { status: 429, headers: { "retry-after": "2" }, body: { message: "slow down" } }
        : index < 3
          ? { status: 503, body: "unavailable" }
          : { body: PAGE_03 },
    );
    const { client, waits } = clientOf(ted.url, { random: () => 0.5 });
    await client.searchPage(REQUEST);
    expect(ted.requests).toHaveLength(4);
    // Retry-After 2 s beats the first backoff (75 ms); then 150 ms and 300 ms (base × 2^n × 0.75).
    expect(waits).toEqual([2000, 150, 300]);
  });

  it("gives up after 3 retries with a 502 naming the last failure", async () => {
    const ted = await serve(() => ({ status: 500, body: "boom" }));
    const problem = await upstreamProblem(clientOf(ted.url).client.searchPage(REQUEST));
    expect(ted.requests).toHaveLength(4);
    expect(problem.detail).toContain("HTTP 500 after 4 attempts");
    expect(problem.detail).toContain("nothing was charged");
  });

  it("stops retrying when Retry-After asks for longer than it will wait", async () => {
    const ted = await serve(() => ({ status: 429, headers: { "retry-after": "3600" } }));
    const problem = await upstreamProblem(clientOf(ted.url).client.searchPage(REQUEST));
    expect(ted.requests).toHaveLength(1);
    expect(problem.detail).toContain("asked to retry after 3600 s");
  });

  it("retries network errors and timeouts, then answers 502", async () => {
    const closedPort = await freePort();
    const refused = await upstreamProblem(
      clientOf(`http://127.0.0.1:${closedPort}/`).client.searchPage(REQUEST),
    );
    expect(refused.detail).toMatch(/network error .* after 4 attempts/);

    const ted = await serve(() => ({ hang: true }));
    const timedOut = await upstreamProblem(clientOf(ted.url, { timeoutMs: 150 }).client.searchPage(REQUEST));
    expect(timedOut.detail).toContain("no answer within 150 ms after 4 attempts");
    expect(ted.requests).toHaveLength(4);
  });

  it("treats an answer that is not JSON, or not a search page, as a failure to retry", async () => {
    const html = await serve(() => ({ body: "<html>maintenance</html>" }));
    expect((await upstreamProblem(clientOf(html.url).client.searchPage(REQUEST))).detail).toContain(
      "not JSON",
    );
    expect(html.requests).toHaveLength(4);
    await html.close();

    for (const body of [{ results: [] }, { notices: [{ "notice-title": {} }] }, { notices: "none" }]) {
      standIn = await startTedStandIn(() => ({ body }));
      const problem = await upstreamProblem(clientOf(standIn.url).client.searchPage(REQUEST));
      expect(problem.detail).toContain("unexpected answer shape");
      await standIn.close();
    }
    standIn = await startTedStandIn(() => ({ body: { ...PAGE_03, timedOut: true } }));
    expect((await upstreamProblem(clientOf(standIn.url).client.searchPage(REQUEST))).detail).toContain(
      "timed out",
    );
  });

  it("does not retry a 4xx refusal of the query", async () => {
    const ted = await serve(() => ({ status: 400, body: { message: "QUERY_SYNTAX_ERROR" } }));
    const problem = await upstreamProblem(clientOf(ted.url).client.searchPage(REQUEST));
    expect(ted.requests).toHaveLength(1);
    expect(problem.detail).toContain("HTTP 400");
  });

  it("reads Retry-After as seconds or an HTTP date", () => {
    expect(retryAfterMs("3")).toBe(3000);
    expect(retryAfterMs(new Date(10_000).toUTCString(), 4000)).toBe(6000);
    expect(retryAfterMs("soon")).toBeUndefined();
    expect(retryAfterMs(null)).toBeUndefined();
  });

  it("keeps at most the configured number of upstream calls in flight", async () => {
    let inFlight = 0;
    let most = 0;
    const ted = await serve(() => {
      inFlight++;
      most = Math.max(most, inFlight);
      return { body: PAGE_03, delayMs: 40 };
    });
    const { client } = clientOf(ted.url, { limit: limitConcurrency(2) });
    const tracked = () =>
      client.searchPage(REQUEST).finally(() => {
        inFlight--;
      });
    await Promise.all(Array.from({ length: 6 }, tracked));
    expect(ted.requests).toHaveLength(6);
    expect(most).toBe(2);
  });
});

describe("paging through results", () => {
  it("asks for pages of 100 notices, within TED's budget of 10,000 fields a page", () => {
    expect(PAGE_SIZE).toBe(100);
    expect(PAGE_SIZE * TED_FIELDS.length).toBeLessThanOrEqual(TED_MAX_FIELDS_PER_PAGE);
  });

  it("reads pages in order until TED has no more (a short page)", async () => {
    const pages = [
      fixturePages("search-response-01.json", NOW)[0],
      fixturePages("search-response-03.json", NOW)[0],
      fixturePages("search-response-04.json", NOW)[0],
    ];
    const ted = await serve((request) => ({ body: pages[(request.page as number) - 1] }));
    const fetched = await fetchNotices(clientOf(ted.url).client, "Q", { now: () => NOW, pageSize: 5 });
    expect(fetched.pages).toBe(3);
    expect(fetched.notices).toHaveLength(13);
    expect(ted.requests.map((request) => [request.page, request.limit, request.query])).toEqual([
      [1, 5, "Q"],
      [2, 5, "Q"],
      [3, 5, "Q"],
    ]);
  });

  it("stops at the page that reaches totalNoticeCount, and never reads more than MAX_PAGES", async () => {
    const exact = await serve(() => ({
      body: { ...fixturePages("search-response-01.json", NOW)[0], totalNoticeCount: 5 },
    }));
    expect((await fetchNotices(clientOf(exact.url).client, "Q", { now: () => NOW, pageSize: 5 })).pages).toBe(
      1,
    );
    await exact.close();

    standIn = await startTedStandIn(() => ({ body: fixturePages("search-response-01.json", NOW)[0] }));
    const endless = await fetchNotices(clientOf(standIn.url).client, "Q", { now: () => NOW, pageSize: 5 });
    expect(endless.pages).toBe(MAX_PAGES);
    expect(standIn.requests).toHaveLength(MAX_PAGES);
  });

  it("stops once 30 current competitions are in hand", async () => {
    const deadline = `${new Date(NOW.getTime() + 20 * 86_400_000).toISOString().slice(0, 10)}+01:00`;
    const page = (n: number) => ({
      notices: Array.from({ length: 10 }, (_, i) => ({
        "publication-number": `${n * 10 + i}-2027`,
        "notice-type": "cn-standard",
        "deadline-receipt-tender-date-lot": [deadline],
      })),
      totalNoticeCount: 1000,
    });
    const ted = await serve((request) => ({ body: page(request.page as number) }));
    const fetched = await fetchNotices(clientOf(ted.url).client, "Q", { now: () => NOW, pageSize: 10 });
    expect(fetched.pages).toBe(3);
  });
});
