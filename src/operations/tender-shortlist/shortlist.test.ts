import { describe, expect, it } from "vitest";
import { type FixtureName, fixturePages } from "../../../test/fixtures/ted/stand-in.ts";
import { normalizeNotice } from "./normalize.ts";
import { TenderShortlistRequest } from "./schema.ts";
import { buildShortlist, fetchedNoticesCodec, selectCandidates } from "./shortlist.ts";
import type { TedNotice } from "./ted-client.ts";

const NOW = new Date("2027-03-01T09:00:00Z");
const DAY = 86_400_000;
const day = (offsetDays: number) => new Date(NOW.getTime() + offsetDays * DAY).toISOString().slice(0, 10);

const recorded = (name: FixtureName, ageDays = 0) =>
  fixturePages(name, NOW, ageDays).flatMap((page) => page.notices) as TedNotice[];

const shortlist = (notices: TedNotice[], request: Record<string, unknown> = {}, pages = 1) =>
  buildShortlist(
    { query: "Q", pages, notices: notices.map(normalizeNotice) },
    TenderShortlistRequest.parse({ maxResults: 30, ...request }),
    NOW,
  );

/** A current contract notice in English with a value; each test overrides what it is about. */
const notice = (id: string, fields: TedNotice = {}): TedNotice => ({
  "publication-number": id,
  "notice-type": "cn-standard",
  "notice-title": { eng: `Notice ${id}` },
  "buyer-name": { eng: [`Buyer ${id}`] },
  "buyer-country": ["DEU"],
  "publication-date": `${day(-1)}+01:00`,
  "deadline-receipt-tender-date-lot": [`${day(30)}+01:00`],
  "estimated-value-proc": 100000,
  "estimated-value-cur-proc": "EUR",
  ...fields,
});

const ids = (result: ReturnType<typeof shortlist>) => result.tenders.map((tender) => tender.noticeId);
const tender = (result: ReturnType<typeof shortlist>, id: string) => {
  const found = result.tenders.find((candidate) => candidate.noticeId === id);
  if (!found) throw new Error(`${id} is not in the shortlist`);
  return found;
};

describe("filtering and stats", () => {
  it("drops award and other non-competition notices (fixture 05): scanned = kept + dropped + duplicates", () => {
    const result = shortlist(recorded("search-request-and-pages-05.json"));
    expect(result.stats).toEqual({ pages: 1, scanned: 13, dropped: 9, duplicates: 0 });
    expect(ids(result).sort()).toEqual(["619343-2026", "619389-2026", "624948-2026", "625615-2026"]);
    expect(result.count).toBe(4);
  });

  it("drops notices whose every deadline has passed, keeps those without a deadline (fixture 03, 45 days on)", () => {
    const result = shortlist(recorded("search-response-03.json", 45));
    expect(result.stats).toEqual({ pages: 1, scanned: 5, dropped: 3, duplicates: 0 });
    expect(ids(result).sort()).toEqual(["683963-2026", "685705-2026"]);
    const reasons = selectCandidates(
      recorded("search-response-03.json", 45).map(normalizeNotice),
      NOW,
    ).dropReasons;
    expect([...reasons.values()]).toEqual(["deadline-passed", "deadline-passed", "deadline-passed"]);
  });

  it("shows the earliest deadline still open when some lots' deadlines have passed", () => {
    const result = shortlist([
      notice("1-2027", { "deadline-receipt-tender-date-lot": [`${day(-2)}+01:00`, `${day(12)}+01:00`] }),
    ]);
    expect(result.tenders[0]?.deadline).toBe(`${day(12)}T22:59:59Z`);
  });

  it("applies minValue in euros to known values and keeps unknown values with a risk (fixtures 04, 01)", () => {
    const result = shortlist(recorded("search-response-04.json"), { minValue: 300_000_000 });
    expect(ids(result).sort()).toEqual(["598420-2026", "612350-2026"]);
    expect(result.stats.dropped).toBe(1);
    expect(tender(result, "598420-2026").risks).toContain(
      "no estimated value published: minValue could not be checked",
    );
    expect(tender(result, "612350-2026").fitReasons).toContain(
      "+5: estimated value 700,000,000 EUR is at least minValue 300,000,000 EUR",
    );
    // 18,000,000 SEK is about 1.6 million euros.
    expect(ids(shortlist(recorded("search-response-01.json"), { minValue: 1_000_000 }))).toContain(
      "450106-2026",
    );
    expect(ids(shortlist(recorded("search-response-01.json"), { minValue: 2_000_000 }))).not.toContain(
      "450106-2026",
    );
  });

  it("counts the same notice twice and older versions of a procedure as duplicates, keeping the latest", () => {
    const twice = shortlist(
      [...recorded("search-response-03.json"), ...recorded("search-response-03.json")],
      {},
      2,
    );
    expect(twice.stats).toEqual({ pages: 2, scanned: 10, dropped: 0, duplicates: 5 });
    expect(twice.count).toBe(5);

    // Fixture 02: a call and, a month later, the award of the same procedure: the award is the latest
    // version, so the procedure is a duplicate plus an award, and nothing is left.
    const awarded = shortlist(recorded("search-response-02.json"));
    expect(awarded.stats).toEqual({ pages: 1, scanned: 2, dropped: 1, duplicates: 1 });
    expect(awarded.count).toBe(0);

    const versions = shortlist([
      notice("10-2027", { "procedure-identifier": "p-1", "publication-date": `${day(-9)}+01:00` }),
      notice("12-2027", { "procedure-identifier": "p-1", "publication-date": `${day(-2)}+01:00` }),
      notice("11-2027", { "procedure-identifier": "p-1", "publication-date": `${day(-5)}+01:00` }),
    ]);
    expect(ids(versions)).toEqual(["12-2027"]);
    expect(versions.stats).toEqual({ pages: 1, scanned: 3, dropped: 0, duplicates: 2 });
  });
});

describe("risks", () => {
  it("deadline within 7 days, no estimated value and many lots (fixture 03, 21 days on)", () => {
    const risks = tender(shortlist(recorded("search-response-03.json", 21)), "688936-2026").risks;
    expect(risks).toEqual([
      `deadline within 7 days (${day(6)}T22:59:59Z): little time to prepare a bid`,
      "no estimated value published",
      "procurement in deu, not English (the language of the buyer's own texts): the documents and the bid are likely in deu",
      "11 lots: check which lots fit and each lot's conditions",
    ]);
  });

  it("framework agreement named in the title (fixture 05)", () => {
    expect(tender(shortlist(recorded("search-request-and-pages-05.json")), "619389-2026").risks).toContain(
      "framework agreement (named in the title): winning gives a place in the framework, not guaranteed orders",
    );
  });

  it("title not in English, missing buyer, mixed currencies, unknown type, no deadline", () => {
    const result = shortlist([
      notice("20-2027", {
        "notice-title": { fra: "Nettoyage des locaux" },
        "buyer-name": { fra: ["Ville de Lyon"] },
      }),
      notice("21-2027", { "buyer-name": undefined }),
      notice("22-2027", {
        "estimated-value-proc": undefined,
        "estimated-value-lot": ["1000", "2000"],
        "estimated-value-cur-lot": ["EUR", "PLN"],
      }),
      notice("23-2027", { "notice-type": undefined, "deadline-receipt-tender-date-lot": undefined }),
    ]);
    expect(tender(result, "20-2027").risks).toEqual([
      "procurement in fra, not English (the language of the buyer's own texts): the documents and the bid are likely in fra",
    ]);
    expect(tender(result, "21-2027").risks).toEqual(["buyer name missing from the notice data"]);
    expect(tender(result, "21-2027").buyerName).toBeNull();
    expect(tender(result, "22-2027").risks).toEqual([
      "no estimated value published",
      "values in several currencies (EUR, PLN) are not summed: check each lot",
    ]);
    expect(tender(result, "22-2027")).toMatchObject({ estimatedValue: null, currency: null });
    expect(tender(result, "23-2027").risks).toEqual([
      "no submission deadline in the notice data: read it on the notice page",
      "notice type not in the search data: check that the notice still invites tenders",
    ]);
    expect(tender(result, "23-2027").deadline).toBeNull();
  });

  it("a current contract notice with everything known has no risk", () => {
    expect(shortlist([notice("24-2027")]).tenders[0]?.risks).toEqual([]);
  });
});

describe("scoring", () => {
  const profile = {
    query: "cloud hosting",
    keywords: ["kubernetes", "backup"],
    cpvCodes: ["72415000", "48"],
    countries: ["AUT", "DEU"],
    minValue: 50_000,
  };

  it("gives every point a reason: a notice that matches everything scores 100", () => {
    const perfect = notice("30-2027", {
      "notice-title": { eng: "Germany – Cloud hosting with Kubernetes and backup" },
      "classification-cpv": ["72415000"],
    });
    const result = shortlist([perfect], profile).tenders[0];
    expect(result?.fitScore).toBe(100);
    expect(result?.fitReasons).toEqual([
      '+20: "cloud hosting" appears in the title',
      "+15: 2 of 2 keywords appear in the title, description or lots (kubernetes, backup)",
      "+20: CPV 72415000 is one of the requested codes",
      "+10: the buyer is in DEU, a requested country",
      `+15: 30 days until the deadline (${day(30)}T22:59:59Z)`,
      "+5: estimated value published (100,000 EUR)",
      "+5: estimated value 100,000 EUR is at least minValue 50,000 EUR",
      "+10: a contract notice (cn-standard): an open call for tenders",
    ]);
  });

  it("scores partial matches lower, each with its reason, and the score is the sum of the reasons' points", () => {
    const partial = notice("31-2027", {
      "notice-title": { eng: "Hosting of the web site" },
      "classification-cpv": ["48000000"],
      "notice-type": "pin-cfc-standard",
      "deadline-receipt-tender-date-lot": [`${day(10)}+01:00`],
      "buyer-country": ["FRA"],
    });
    const result = shortlist([partial], profile).tenders[0];
    expect(result?.fitReasons).toEqual([
      "+5: 1 of 2 query words appear in the title or description (hosting)",
      "+12: CPV 48000000 falls under the requested prefix 48",
      `+8: 10 days until the deadline (${day(10)}T22:59:59Z)`,
      "+5: estimated value published (100,000 EUR)",
      "+5: estimated value 100,000 EUR is at least minValue 50,000 EUR",
      "+5: a call for competition (pin-cfc-standard) rather than a contract notice",
    ]);
    const sum = result?.fitReasons.reduce(
      (total, reason) => total + Number(/^\+(\d+):/.exec(reason)?.[1]),
      0,
    );
    expect(result?.fitScore).toBe(sum);
    expect(result?.fitScore).toBe(40);
  });

  it("is deterministic for the same data and clock, and within 0-100 for every recorded notice", () => {
    const all = [
      "search-response-01.json",
      "search-response-03.json",
      "search-response-04.json",
      "search-request-and-pages-05.json",
    ].flatMap((name) => recorded(name as FixtureName));
    const first = shortlist(all, profile);
    expect(shortlist(all, profile)).toEqual(first);
    for (const { fitScore } of first.tenders) {
      expect(fitScore).toBeGreaterThanOrEqual(0);
      expect(fitScore).toBeLessThanOrEqual(100);
    }
    expect(
      shortlist([
        notice("32-2027", {
          "notice-type": undefined,
          "estimated-value-proc": undefined,
          "deadline-receipt-tender-date-lot": undefined,
        }),
      ]).tenders[0]?.fitScore,
    ).toBe(0);
  });
});

describe("ranking", () => {
  const all = () =>
    (
      [
        "search-response-01.json",
        "search-response-03.json",
        "search-response-04.json",
        "search-request-and-pages-05.json",
      ] as const
    ).flatMap((name) => recorded(name));

  it("bestFit: score, then the sooner deadline, then the notice id", () => {
    const tenders = shortlist(all(), { query: "software", cpvCodes: ["72"] }).tenders;
    for (let i = 1; i < tenders.length; i++) {
      const [a, b] = [tenders[i - 1], tenders[i]] as const;
      expect(a?.fitScore).toBeGreaterThanOrEqual(b?.fitScore as number);
      if (a?.fitScore === b?.fitScore && a?.deadline && b?.deadline)
        expect(a.deadline <= b.deadline).toBe(true);
    }
    expect(tenders[0]?.noticeId).toBe("688936-2026");
  });

  it("deadlineSoonest: earliest deadline first, notices without one last", () => {
    const tenders = shortlist(all(), { rankingMode: "deadlineSoonest" }).tenders;
    const deadlines = tenders.map((t) => t.deadline);
    const known = deadlines.filter((d) => d !== null) as string[];
    expect(known).toEqual([...known].sort());
    expect(deadlines.slice(0, known.length)).toEqual(known);
    expect(deadlines.slice(known.length).every((d) => d === null)).toBe(true);
  });

  it("highestValue: compared in euros across currencies, unknown values last", () => {
    const result = shortlist(
      [
        ...all(),
        notice("40-2027", { "estimated-value-proc": 30_000_000, "estimated-value-cur-proc": "HUF" }),
        notice("41-2027", { "estimated-value-proc": 80_000, "estimated-value-cur-proc": "EUR" }),
      ],
      { rankingMode: "highestValue" },
    );
    const withValue = result.tenders.filter((t) => t.estimatedValue !== null).map((t) => t.noticeId);
    // 700M EUR, 265M EUR, 18M SEK (~1.6M EUR), 2M SEK (~182k EUR), 80k EUR, 30M HUF (~77k EUR), 1.68M CZK (~69k EUR)
    expect(withValue).toEqual([
      "612350-2026",
      "609844-2026",
      "450106-2026",
      "450523-2026",
      "41-2027",
      "40-2027",
      "619343-2026",
    ]);
    expect(ids(result).slice(0, withValue.length)).toEqual(withValue);
  });

  it("returns maxResults at most and count equals the number returned", () => {
    const result = shortlist(all(), { maxResults: 3 });
    expect(result.tenders).toHaveLength(3);
    expect(result.count).toBe(3);
    expect(result.stats.scanned - result.stats.dropped - result.stats.duplicates).toBeGreaterThan(3);
  });
});

describe("fetched notices in the shared cache", () => {
  it("come back from their stored text exactly as they were, deadlines as dates", () => {
    const fetched = {
      query: "Q",
      pages: 2,
      notices: recorded("search-response-01.json").map(normalizeNotice),
    };
    expect(fetched.notices.some((n) => n.deadlines.length > 0)).toBe(true);
    const decoded = fetchedNoticesCodec.decode(fetchedNoticesCodec.encode(fetched));
    expect(decoded).toEqual(fetched);
    expect(decoded.notices.flatMap((n) => n.deadlines).every((d) => d.at instanceof Date)).toBe(true);
  });
});
