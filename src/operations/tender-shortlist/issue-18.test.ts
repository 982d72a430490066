import { describe, expect, it } from "vitest";
import { RESTRICTED_NOTICE, RESTRICTED_NOTICE_AS_OF } from "../../../test/fixtures/ted/restricted-notice.ts";
import { type FixtureName, fixturePages } from "../../../test/fixtures/ted/stand-in.ts";
import { buildExpertQuery } from "./expert-query.ts";
import { normalizeNotice } from "./normalize.ts";
import { TenderShortlistRequest } from "./schema.ts";
import { buildShortlist, fetchedNoticesCodec } from "./shortlist.ts";
import { TED_FIELDS, type TedNotice } from "./ted-client.ts";

/**
 * The tender-shortlist part of issue 18: every deadline TED publishes, the URLs it gives, whole-word scoring in
 * the buyer's own texts, and the procurement language from the notice's language fields.
 */
const NOW = new Date(`${RESTRICTED_NOTICE_AS_OF}T09:00:00Z`);

const recorded = (name: FixtureName) =>
  fixturePages(name, NOW).flatMap((page) => page.notices) as TedNotice[];

const shortlist = (notices: TedNotice[], request: Record<string, unknown> = {}) =>
  buildShortlist(
    { query: "Q", pages: 1, notices: notices.map(normalizeNotice) },
    TenderShortlistRequest.parse({ maxResults: 30, ...request }),
    NOW,
  );

const tender = (result: ReturnType<typeof shortlist>, id: string) => {
  const found = result.tenders.find((candidate) => candidate.noticeId === id);
  if (!found) throw new Error(`${id} is not in the shortlist`);
  return found;
};

const queryReasons = (result: ReturnType<typeof shortlist>) =>
  result.tenders.filter((t) => t.fitReasons.some((reason) => /query|appears/.test(reason)));

describe("every deadline TED publishes (restricted procedure 479730-2026, constructed)", () => {
  it("asks TED for the request-to-participate deadline, its time, the URLs, descriptions, lots and languages", () => {
    for (const field of [
      "deadline-receipt-tender-date-lot",
      "deadline-receipt-tender-time-lot",
      "deadline-receipt-request-date-lot",
      "deadline-receipt-request-time-lot",
      "submission-url-lot",
      "document-url-lot",
      "description-proc",
      "title-lot",
      "description-lot",
      "official-language",
      "submission-language",
    ]) {
      expect(TED_FIELDS).toContain(field);
    }
  });

  it("the request-to-participate deadline is the deadline, with its time, its kind, runway points and rank", () => {
    const result = shortlist([RESTRICTED_NOTICE, ...recorded("search-response-03.json")], {
      rankingMode: "deadlineSoonest",
    });
    const restricted = tender(result, "479730-2026");
    expect(restricted.deadline).toBe("2026-12-21T11:00:00Z");
    expect(restricted.deadlineType).toBe("request-to-participate");
    expect(restricted.deadlines).toEqual([
      { type: "request-to-participate", at: "2026-12-21T11:00:00Z", open: true },
    ]);
    expect(restricted.fitReasons).toContain("+15: 27 days until the deadline (2026-12-21T11:00:00Z)");
    expect(restricted.risks).not.toContain(
      "no submission deadline in the notice data: read it on the notice page",
    );
    expect(restricted.submissionUrls).toEqual(["https://tenders.example.org/479730/submit"]);
    expect(restricted.documentUrls).toEqual(["https://tenders.example.org/479730/documents"]);
    // Fixture 03 moved to NOW: deadlines 2026-12-… and two notices without one; 479730-2026 is not last.
    const order = result.tenders.map((t) => t.noticeId);
    const withDeadline = result.tenders.filter((t) => t.deadline !== null).map((t) => t.deadline as string);
    expect(withDeadline).toEqual([...withDeadline].sort());
    expect(order.indexOf("479730-2026")).toBeLessThan(withDeadline.length);
  });

  it("a notice with both deadlines shows the earliest open one and lists both; a passed request deadline is a risk", () => {
    const both = {
      ...RESTRICTED_NOTICE,
      "publication-number": "479731-2026",
      "deadline-receipt-tender-date-lot": ["2027-02-15+01:00"],
      "deadline-receipt-tender-time-lot": ["10:00:00+01:00"],
    };
    const passed = {
      ...both,
      "publication-number": "479732-2026",
      "procedure-identifier": "p-2",
      "deadline-receipt-request-date-lot": ["2026-11-20+01:00"],
    };
    const result = shortlist([both, passed]);
    expect(tender(result, "479731-2026")).toMatchObject({
      deadline: "2026-12-21T11:00:00Z",
      deadlineType: "request-to-participate",
      deadlines: [
        { type: "request-to-participate", at: "2026-12-21T11:00:00Z", open: true },
        { type: "tender", at: "2027-02-15T09:00:00Z", open: true },
      ],
    });
    const late = tender(result, "479732-2026");
    expect(late).toMatchObject({ deadline: "2027-02-15T09:00:00Z", deadlineType: "tender" });
    expect(late.risks).toContain(
      "the request-to-participate deadline (2026-11-20T11:00:00Z) has passed: only candidates already admitted can tender",
    );
  });

  it("deadline bounds of the query cover the request-to-participate deadline too", () => {
    expect(buildExpertQuery({ deadlineAfter: "2026-12-01", deadlineBefore: "2026-12-31" })).toContain(
      "((deadline-receipt-tender-date-lot>=20261201 AND deadline-receipt-tender-date-lot<=20261231) OR " +
        "(deadline-receipt-request-date-lot>=20261201 AND deadline-receipt-request-date-lot<=20261231))",
    );
  });

  it("the shared cache keeps every deadline with its kind", () => {
    const fetched = { query: "Q", pages: 1, notices: [normalizeNotice(RESTRICTED_NOTICE)] };
    expect(fetchedNoticesCodec.decode(fetchedNoticesCodec.encode(fetched))).toEqual(fetched);
  });
});

describe("whole words in the buyer's own texts (fixtures 03 and 04)", () => {
  const eight = () => [...recorded("search-response-03.json"), ...recorded("search-response-04.json")];

  it('{"query":"AI"} scores neither "railways", "Spain" nor "países": no notice has AI as a word', () => {
    const result = shortlist(eight(), { query: "AI" });
    expect(result.count).toBe(8);
    expect(queryReasons(result)).toEqual([]);
  });

  it('"services" no longer matches TED\'s category labels (it matched 7 of 8 notices)', () => {
    const result = shortlist(eight(), { query: "services", keywords: ["services"] });
    expect(queryReasons(result).map((t) => t.noticeId)).toEqual([]);
  });

  it("matches whole words of the buyer's own title, accent-insensitive", () => {
    const own = shortlist(eight(), { query: "financial IT systems" });
    expect(tender(own, "612350-2026").fitReasons).toContain(
      '+20: "financial IT systems" appears in the title',
    );
    const accents = shortlist(eight(), { query: "softwarelosung" });
    expect(tender(accents, "685705-2026").fitReasons).toContain('+20: "softwarelosung" appears in the title');
  });

  it("reads the description and the lots, not only the title", () => {
    const result = shortlist([RESTRICTED_NOTICE], { query: "AI", keywords: ["stations", "tunnel"] });
    expect(tender(result, "479730-2026").fitReasons.slice(0, 2)).toEqual([
      '+12: "AI" appears in the description',
      "+15: 2 of 2 keywords appear in the title, description or lots (stations, tunnel)",
    ]);
  });
});

describe("the procurement language from the notice's language fields", () => {
  it("a German notice with TED's English title is a language risk (official-language DEU)", () => {
    const german = {
      ...recorded("search-response-03.json").find((n) => n["publication-number"] === "690555-2026"),
      "official-language": ["DEU"],
      "submission-language": ["DEU"],
    } as TedNotice;
    expect(tender(shortlist([german]), "690555-2026").risks).toContain(
      "procurement in deu, not English (the notice's official language; tenders in deu): the documents and the bid are likely in deu",
    );
    expect(tender(shortlist([german]), "690555-2026").languages).toEqual(["deu"]);
  });

  it("fires for the recorded Austrian notices without language fields (their own title is German)", () => {
    const risks = tender(shortlist(recorded("search-response-03.json")), "690555-2026").risks;
    expect(risks.some((risk) => risk.startsWith("procurement in deu, not English"))).toBe(true);
  });

  it("does not fire when English is an official language", () => {
    const english = { ...RESTRICTED_NOTICE, "official-language": ["ENG"], "submission-language": ["ENG"] };
    const risks = tender(shortlist([english]), "479730-2026").risks;
    expect(risks.some((risk) => risk.startsWith("procurement in"))).toBe(false);
  });
});
