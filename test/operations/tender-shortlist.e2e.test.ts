// ajv comes with @redocly/openapi-core and @x402/extensions (not a direct dependency of this package).
import { Ajv2020 } from "ajv/dist/2020.js";
import ajvFormats from "ajv-formats";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { devPrivateKey } from "../../src/chain/dev-accounts.ts";
import { createPayer, paymentReceipt } from "../../src/client/paying-fetch.ts";
import { tenderShortlist, tenderShortlistGet } from "../../src/operations/tender-shortlist/index.ts";
import { INVALID_FIELDS } from "../fixtures/ted/invalid-requests.ts";
import { RESTRICTED_NOTICE, RESTRICTED_NOTICE_AS_OF } from "../fixtures/ted/restricted-notice.ts";
import {
  FIXTURE_NAMES,
  type FixtureName,
  fixturePages,
  readFixture,
  type StandInAnswer,
  shiftDates,
  shiftDay,
  shiftFor,
  startTedStandIn,
  type TedStandIn,
} from "../fixtures/ted/stand-in.ts";
import { jsonPost, startTestService, type TestService, usdcBalances } from "../helpers/service.ts";

const PRICE = 150_000n; // USD 0.15 in USDC atomic units
const COMPETITION =
  "notice-type IN (cn-standard cn-social cn-desg pin-cfc-standard pin-cfc-social qu-sy subco)";
const SORT = " SORT BY publication-date DESC";

/** The response and tender objects of SPEC.md ("Tender shortlist response", "Tender notice"), as JSON Schema. */
const SPEC_RESPONSE_SCHEMA = {
  $schema: "https://json-schema.org/draft/2020-12/schema",
  type: "object",
  additionalProperties: false,
  required: ["generatedAt", "query", "count", "tenders", "stats"],
  properties: {
    generatedAt: { type: "string", format: "date-time" },
    query: { type: "string" },
    count: { type: "integer", minimum: 0 },
    tenders: {
      type: "array",
      items: {
        type: "object",
        required: ["noticeId", "title", "fitScore", "fitReasons", "risks", "sourceUrl"],
        properties: {
          noticeId: { type: "string" },
          title: { type: "string" },
          buyerName: { type: ["string", "null"] },
          buyerCountry: { type: ["string", "null"] },
          deadline: { type: ["string", "null"], format: "date-time" },
          estimatedValue: { type: ["number", "null"] },
          currency: { type: ["string", "null"] },
          fitScore: { type: "number", minimum: 0, maximum: 100 },
          fitReasons: { type: "array", items: { type: "string" } },
          risks: { type: "array", items: { type: "string" } },
          sourceUrl: { type: "string", format: "uri" },
        },
      },
    },
    stats: {
      type: "object",
      required: ["pages", "scanned", "dropped", "duplicates"],
      properties: Object.fromEntries(
        ["pages", "scanned", "dropped", "duplicates"].map((name) => [name, { type: "integer", minimum: 0 }]),
      ),
    },
  },
};

const ajv = new Ajv2020({ allErrors: true, strict: true });
ajvFormats.default(ajv);
const validateSpecResponse = ajv.compile(SPEC_RESPONSE_SCHEMA);
const specErrors = (body: unknown) =>
  validateSpecResponse(body)
    ? []
    : (validateSpecResponse.errors ?? []).map(
        (e: { instancePath: string; message?: string }) => `${e.instancePath} ${e.message}`,
      );

describe("tender-shortlist on the local chain against a TED stand-in", () => {
  // A frozen clock near the real time (payments and leases read it too); the recordings are moved to it.
  const NOW = new Date(Math.floor(Date.now() / 1000) * 1000);
  let answer: (request: Record<string, unknown>, index: number) => StandInAnswer | Promise<StandInAnswer>;
  let ted: TedStandIn;
  let service: TestService;
  let balanceOf: ReturnType<typeof usdcBalances>;
  const payer = createPayer(devPrivateKey(4));
  const url = () => `${service.url}/v1/tender-shortlist`;

  /** Serves one fixture's pages (by page number) as of NOW minus `ageDays`. */
  const replay = (name: FixtureName, ageDays = 0) => {
    const pages = fixturePages(name, NOW, ageDays);
    answer = (request) => ({ body: pages[(request.page as number) - 1] ?? { ...pages[0], notices: [] } });
  };

  /** A paid POST: the response, its body, and what it cost the payer and brought payTo. */
  async function paidPost(body: unknown) {
    const [payerBefore, payToBefore] = [await balanceOf(payer.address), await balanceOf(service.payTo)];
    const response = await payer.fetch(url(), jsonPost(body));
    const json = await response.json();
    return {
      response,
      json,
      charged: payerBefore - (await balanceOf(payer.address)),
      received: (await balanceOf(service.payTo)) - payToBefore,
    };
  }

  beforeAll(async () => {
    ted = await startTedStandIn((request, index) => answer(request, index));
    service = await startTestService(
      { TED_API_URL: ted.url, TED_TIMEOUT_MS: "400", TED_RETRY_BASE_MS: "5" },
      { operations: [tenderShortlist, tenderShortlistGet], clock: () => NOW.getTime() },
    );
    balanceOf = usdcBalances(service.localChain?.rpcUrl as string);
  });
  afterAll(async () => {
    await service?.stop();
    await ted?.close();
  });

  it("the SPEC.md schema check can fail: extra top-level property, missing field, score out of bounds, bad URI", () => {
    const valid = {
      generatedAt: "2026-11-21T09:00:00Z",
      query: "q",
      count: 1,
      tenders: [
        {
          noticeId: "1-2026",
          title: "t",
          fitScore: 50,
          fitReasons: [],
          risks: [],
          sourceUrl: "https://ted.europa.eu/x",
          extra: 1,
        },
      ],
      stats: { pages: 1, scanned: 1, dropped: 0, duplicates: 0 },
    };
    expect(specErrors(valid)).toEqual([]);
    const tender = valid.tenders[0] as Record<string, unknown>;
    expect(specErrors({ ...valid, cached: true })).not.toEqual([]);
    expect(specErrors({ ...valid, tenders: [{ ...tender, sourceUrl: undefined }] })).not.toEqual([]);
    expect(specErrors({ ...valid, tenders: [{ ...tender, fitScore: 101 }] })).not.toEqual([]);
    expect(specErrors({ ...valid, tenders: [{ ...tender, sourceUrl: "not a uri" }] })).not.toEqual([]);
  });

  // Every recorded TED answer, each for a request whose expert query the stand-in checks.
  const CASES: Record<
    FixtureName,
    { request: (shift: number) => Record<string, unknown>; query: (shift: number) => string }
  > = {
    "search-response-01.json": {
      request: () => ({ query: "software", countries: ["SWE"], maxResults: 3 }),
      query: () => `FT~"software" AND buyer-country IN (SWE) AND ${COMPETITION}${SORT}`,
    },
    "search-response-02.json": {
      request: () => ({ keywords: ["szpital", "parking"], cpvCodes: ["45110000"], countries: ["POL"] }),
      query: () =>
        `(FT~"szpital" OR FT~"parking") AND buyer-country IN (POL) AND classification-cpv IN (45110000) AND ${COMPETITION}${SORT}`,
    },
    "search-response-03.json": {
      request: () => ({
        query: "software",
        countries: ["AUT"],
        cpvCodes: ["72"],
        rankingMode: "deadlineSoonest",
      }),
      query: () =>
        `FT~"software" AND buyer-country IN (AUT) AND classification-cpv=72* AND ${COMPETITION}${SORT}`,
    },
    "search-response-04.json": {
      request: (shift) => ({
        deadlineAfter: shiftDay("2026-10-01", shift),
        minValue: 1_000_000,
        rankingMode: "highestValue",
      }),
      query: (shift) => {
        const day = shiftDay("2026-10-01", shift).replaceAll("-", "");
        return `(deadline-receipt-tender-date-lot>=${day} OR deadline-receipt-request-date-lot>=${day}) AND ${COMPETITION}${SORT}`;
      },
    },
    "search-request-and-pages-05.json": {
      request: (shift) => ({
        cpvCodes: ["09", "31", "45231", "71314"],
        publishedAfter: shiftDay("2026-09-09", shift),
        maxResults: 30,
      }),
      // TED's own recorded request, with its date moved like the data, plus the competition filter.
      query: (shift) =>
        `${readFixture("search-request-and-pages-05.json").request?.query.replace("20260909", shiftDay("2026-09-09", shift).replaceAll("-", ""))} AND ${COMPETITION}${SORT}`,
    },
  };

  it.each(FIXTURE_NAMES)(
    "replays %s: sends the expected expert query, answers per SPEC.md, charges once",
    async (name) => {
      replay(name);
      const shift = shiftFor(name, NOW);
      const before = ted.requests.length;
      const { response, json, charged, received } = await paidPost(CASES[name].request(shift));
      expect(response.status).toBe(200);
      expect(specErrors(json)).toEqual([]);
      const sent = ted.requests.slice(before);
      expect(sent).toHaveLength(1);
      expect(sent[0]).toMatchObject({
        query: CASES[name].query(shift),
        page: 1,
        limit: 100,
        scope: "ACTIVE",
        paginationMode: "PAGE_NUMBER",
      });
      expect(ted.userAgents.at(-1)).toMatch(
        /^utility402\/1\.0 \(tender-shortlist; \+http:\/\/127\.0\.0\.1:\d+\)$/,
      );
      expect(json.query).toBe(CASES[name].query(shift));
      const scanned = readFixture(name).pages.reduce((total, page) => total + page.notices.length, 0);
      expect(json.stats.scanned).toBe(scanned);
      expect(json.stats.pages).toBe(1);
      expect(json.count).toBe(json.tenders.length);
      expect(json.count).toBeLessThanOrEqual(scanned - json.stats.dropped - json.stats.duplicates);
      for (const tender of json.tenders)
        expect(tender.sourceUrl).toBe(`https://ted.europa.eu/en/notice/-/detail/${tender.noticeId}`);
      expect(charged).toBe(PRICE);
      expect(received).toBe(PRICE);
      expect(paymentReceipt(response)).toMatchObject({ success: true, network: "eip155:8453" });
    },
  );

  it("normalises a recorded notice end to end (fixture 03): UTC deadline, English title, reasons and risks", async () => {
    replay("search-response-03.json", 21);
    // Not the query of the replay above, which the cache would answer with data 21 days younger.
    const { json } = await paidPost({
      query: "IT-Dienstleistungen",
      countries: ["AUT", "DEU"],
      cpvCodes: ["72"],
      maxResults: 1,
    });
    const deadline = new Date(
      `${shiftDay("2026-11-04", shiftFor("search-response-03.json", NOW, 21))}T22:59:59Z`,
    );
    const days = Math.floor((deadline.getTime() - NOW.getTime()) / 86_400_000);
    expect(json.tenders).toEqual([
      {
        noticeId: "688936-2026",
        title:
          "Austria – IT services: consulting, software development, Internet and support – DIGIT- Bereitstellen von diversen IT-Dienstleistungen",
        buyerName: "Oberösterreichische Gesundheitsholding GmbH und Tochterunternehmen",
        buyerCountry: "AUT",
        deadline: deadline.toISOString().replace(".000Z", "Z"),
        deadlineType: "tender",
        deadlines: [{ type: "tender", at: deadline.toISOString().replace(".000Z", "Z"), open: true }],
        estimatedValue: null,
        currency: null,
        // Scored in the buyer's own title ("DIGIT- Bereitstellen von diversen IT-Dienstleistungen"), by words.
        fitScore: 52,
        fitReasons: [
          '+20: "IT-Dienstleistungen" appears in the title',
          "+12: CPV 72000000 falls under the requested prefix 72",
          "+10: the buyer is in AUT, a requested country",
          "+10: a contract notice (cn-standard): an open call for tenders",
        ],
        risks: [
          `deadline within 7 days (${deadline.toISOString().replace(".000Z", "Z")}): little time to prepare a bid`,
          "no estimated value published",
          "procurement in deu, not English (the language of the buyer's own texts): the documents and the bid are likely in deu",
          "11 lots: check which lots fit and each lot's conditions",
        ],
        sourceUrl: "https://ted.europa.eu/en/notice/-/detail/688936-2026",
        submissionUrls: [],
        documentUrls: [],
        noticeType: "cn-standard",
        publicationDate: shiftDay("2026-10-06", shiftFor("search-response-03.json", NOW, 21)),
        cpvCodes: ["72000000", "72262000", "72266000", "72250000", "72253000"],
        lotCount: 11,
        languages: ["deu"],
        submissionLanguages: [],
      },
    ]);
    expect(days).toBeLessThan(7);
  });

  it("a restricted procedure's request-to-participate deadline (479730-2026, constructed) is its deadline", async () => {
    // The notice is constructed with the shape of the recorded tender deadline fields plus its time field (see
    // test/fixtures/ted/restricted-notice.ts), moved like the recordings so that it is as current as they are.
    const shift = Math.round(
      (Date.parse(`${NOW.toISOString().slice(0, 10)}T00:00:00Z`) -
        Date.parse(`${RESTRICTED_NOTICE_AS_OF}T00:00:00Z`)) /
        86_400_000,
    );
    const restricted = shiftDates(RESTRICTED_NOTICE, shift);
    const [page] = fixturePages("search-response-03.json", NOW);
    answer = () => ({ body: { ...page, notices: [...(page?.notices ?? []), restricted] } });
    const before = ted.requests.length;
    const { response, json, charged } = await paidPost({
      keywords: ["spoortunnel"],
      deadlineAfter: shiftDay("2026-11-25", shift),
      rankingMode: "deadlineSoonest",
    });
    expect(response.status).toBe(200);
    expect(specErrors(json)).toEqual([]);
    const sent = ted.requests.slice(before)[0] as { query: string; fields: string[] };
    expect(sent.fields).toEqual(
      expect.arrayContaining(["deadline-receipt-request-date-lot", "deadline-receipt-request-time-lot"]),
    );
    expect(sent.query).toContain(
      `deadline-receipt-request-date-lot>=${shiftDay("2026-11-25", shift).replaceAll("-", "")}`,
    );
    const at = `${shiftDay("2026-12-21", shift)}T11:00:00Z`;
    const days = Math.floor((Date.parse(at) - NOW.getTime()) / 86_400_000);
    expect(json.tenders[0]).toMatchObject({
      noticeId: "479730-2026",
      deadline: at,
      deadlineType: "request-to-participate",
      deadlines: [{ type: "request-to-participate", at, open: true }],
      submissionUrls: ["https://tenders.example.org/479730/submit"],
      documentUrls: ["https://tenders.example.org/479730/documents"],
      languages: ["nld"],
      submissionLanguages: ["nld"],
    });
    expect(json.tenders[0].fitReasons).toContain(`+15: ${days} days until the deadline (${at})`);
    expect(json.tenders[0].fitReasons).toContain(
      "+15: 1 of 1 keywords appear in the title, description or lots (spoortunnel)",
    );
    expect(charged).toBe(PRICE);
  });

  it("answers identical requests from the cache and concurrent ones with one upstream call", async () => {
    const pages = fixturePages("search-response-03.json", NOW);
    answer = () => ({ body: pages[0], delayMs: 300 });
    const body = { query: "digitalisierung", countries: ["AUT"] };
    const before = ted.requests.length;
    const concurrent = await Promise.all([
      payer.fetch(url(), jsonPost(body)),
      createPayer(devPrivateKey(5)).fetch(url(), jsonPost(body)),
    ]);
    expect(concurrent.map((response) => response.status)).toEqual([200, 200]);
    expect(ted.requests.length - before).toBe(1);
    const [first, second] = await Promise.all(concurrent.map((response) => response.json()));
    expect(second).toEqual(first);

    const later = await paidPost({ ...body, rankingMode: "deadlineSoonest", maxResults: 2 });
    expect(later.response.status).toBe(200);
    expect(later.json.count).toBe(2);
    expect(ted.requests.length - before).toBe(1);
    expect(later.charged).toBe(PRICE);

    const other = await paidPost({ ...body, countries: ["DEU"] });
    expect(other.response.status).toBe(200);
    expect(ted.requests.length - before).toBe(2);
  });

  it("the GET form takes repeated and comma-separated arrays, costs the same and answers the same", async () => {
    replay("search-response-03.json");
    const body = {
      query: "kentico",
      countries: ["AUT", "DEU"],
      cpvCodes: ["72", "48"],
      maxResults: 5,
      rankingMode: "bestFit",
    };
    const post = await paidPost(body);
    expect(post.response.status).toBe(200);
    const getUrl = `${url()}?query=kentico&countries=AUT&countries=DEU&cpvCodes=72,48&maxResults=5&rankingMode=bestFit`;
    const unpaid = await fetch(getUrl);
    expect(unpaid.status).toBe(402);
    expect((await unpaid.json()).accepts[0].amount).toBe(PRICE.toString());
    const before = await balanceOf(payer.address);
    const get = await payer.fetch(getUrl);
    expect(get.status).toBe(200);
    // A paid answer to a GET is the payer's: a shared cache keyed by URL must not hand it to the next
    // (unpaying) request of the same query.
    expect(get.headers.get("cache-control")).toBe("private, no-store");
    const json = await get.json();
    expect(specErrors(json)).toEqual([]);
    expect(json).toEqual(post.json);
    expect(before - (await balanceOf(payer.address))).toBe(PRICE);
  });

  it.each([
    ["an HTTP 503 on every attempt", () => ({ status: 503, body: "down" }), "HTTP 503 after 4 attempts"],
    ["no answer within the timeout", () => ({ hang: true }), "no answer within 400 ms after 4 attempts"],
    ["an answer that is not JSON", () => ({ body: "<html>maintenance</html>" }), "not JSON"],
    ["an answer of an unexpected shape", () => ({ body: { hits: [] } }), "unexpected answer shape"],
  ])(
    "TED failing with %s is a 502 problem, and the payer's balance on chain is unchanged",
    async (_, failure, detail) => {
      answer = failure as () => StandInAnswer;
      const before = ted.requests.length;
      const { response, json, charged, received } = await paidPost({ query: `outage ${detail}` });
      expect(response.status).toBe(502);
      expect(response.headers.get("content-type")).toContain("application/problem+json");
      expect(response.headers.get("PAYMENT-RESPONSE")).toBeNull();
      expect(json).toMatchObject({ status: 502, type: "urn:utility402:problem:upstream-unavailable" });
      expect(json.detail).toContain(detail);
      expect(ted.requests.length - before).toBe(4);
      expect(charged).toBe(0n);
      expect(received).toBe(0n);
    },
  );

  it.each(INVALID_FIELDS)("POST: %s is a 400 at its pointer before any payment", async (_, body, pointer) => {
    const before = ted.requests.length;
    for (const response of [await fetch(url(), jsonPost(body)), await payer.fetch(url(), jsonPost(body))]) {
      expect(response.status).toBe(400);
      expect(response.headers.get("PAYMENT-REQUIRED")).toBeNull();
      expect((await response.json()).errors.map((error: { pointer: string }) => error.pointer)).toEqual([
        pointer,
      ]);
    }
    expect(ted.requests.length).toBe(before);
  });

  /** A request as query parameters: arrays as repeated parameters. */
  const toQueryString = (body: Record<string, unknown>) => {
    const params = new URLSearchParams();
    for (const [name, value] of Object.entries(body)) {
      for (const item of Array.isArray(value) ? value : [value]) params.append(name, String(item));
    }
    return params.toString();
  };
  // A query string carries text only: a number where text is expected is text there, and the reverse.
  const GET_INVALID: [string, Record<string, unknown>, string][] = [
    ...INVALID_FIELDS.filter(([name]) => !["query not a string", "minValue not a number"].includes(name)),
    ["minValue that is not a number", { minValue: "lots" }, "/minValue"],
    ["a comma-separated keyword list with an empty item", { keywords: "a,,b" }, "/keywords/1"],
  ];

  it.each(GET_INVALID)("GET: %s is a 400 at its pointer before any payment", async (_, body, pointer) => {
    const response = await fetch(`${url()}?${toQueryString(body)}`);
    expect(response.status).toBe(400);
    expect(response.headers.get("PAYMENT-REQUIRED")).toBeNull();
    expect((await response.json()).errors.map((error: { pointer: string }) => error.pointer)).toEqual([
      pointer,
    ]);
  });

  it("GET: a parameter given twice that takes one value is a 400", async () => {
    const response = await fetch(`${url()}?maxResults=1&maxResults=2`);
    expect(response.status).toBe(400);
    expect((await response.json()).errors).toEqual([
      { pointer: "/maxResults", message: "given more than once; this parameter takes one value" },
    ]);
  });
});
