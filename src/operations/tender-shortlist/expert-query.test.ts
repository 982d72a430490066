import { describe, expect, it } from "vitest";
import { buildExpertQuery, searchableText, splitCpvCodes } from "./expert-query.ts";
import { TenderShortlistRequest } from "./schema.ts";

const COMPETITION =
  "notice-type IN (cn-standard cn-social cn-desg pin-cfc-standard pin-cfc-social qu-sy subco)";
const SORT = " SORT BY publication-date DESC";

/** The query with every quoted phrase replaced by a placeholder: what is left is the query's structure. */
const structure = (query: string) => query.replace(/"[^"]*"/g, "<phrase>");

describe("the TED expert query", () => {
  it("without criteria asks only for competitions, newest first", () => {
    expect(buildExpertQuery({})).toBe(COMPETITION + SORT);
  });

  it("puts every field in its clause: phrases, IN lists, CPV prefixes, date bounds", () => {
    const input = TenderShortlistRequest.parse({
      query: "cloud hosting",
      keywords: ["kubernetes", "container platform"],
      countries: ["DEU", "AUT"],
      cpvCodes: ["72000000-5", "48000000", "722", "30*"],
      publishedAfter: "2026-09-01",
      publishedBefore: "2026-10-31",
      deadlineAfter: "2026-11-01",
      deadlineBefore: "2027-01-15",
    });
    expect(buildExpertQuery(input)).toBe(
      'FT~"cloud hosting" AND (FT~"kubernetes" OR FT~"container platform") AND buyer-country IN (DEU AUT) ' +
        "AND (classification-cpv IN (72000000 48000000) OR classification-cpv=722* OR classification-cpv=30*) " +
        "AND publication-date>=20260901 AND publication-date<=20261031 " +
        "AND ((deadline-receipt-tender-date-lot>=20261101 AND deadline-receipt-tender-date-lot<=20270115) OR " +
        "(deadline-receipt-request-date-lot>=20261101 AND deadline-receipt-request-date-lot<=20270115)) " +
        `AND ${COMPETITION}${SORT}`,
    );
  });

  it("renders CPV prefixes the way TED's own recorded request does (fixture 05)", () => {
    const query = buildExpertQuery({
      cpvCodes: ["09", "31", "45231", "71314"],
      publishedAfter: "2026-09-09",
    });
    expect(
      query.startsWith(
        "(classification-cpv=09* OR classification-cpv=31* OR classification-cpv=45231* OR classification-cpv=71314*) AND publication-date>=20260909",
      ),
    ).toBe(true);
  });

  it("a term with quotes, operators or wildcards stays one phrase: it can neither break nor widen the query", () => {
    const hostile = [
      'robot" OR FT~"*',
      'x") OR (buyer-country IN (FRA',
      '\\" OR notice-type=can-standard OR \\"',
      "*",
      "AND OR NOT",
    ];
    for (const term of hostile.filter((t) => searchableText(t) !== "")) {
      const query = buildExpertQuery({ query: term, keywords: [term] });
      expect(structure(query)).toBe(`FT~<phrase> AND FT~<phrase> AND ${COMPETITION}${SORT}`);
      expect(query.match(/"/g)).toHaveLength(4);
    }
    expect(searchableText('robot" OR FT~"*')).toBe("robot OR FT~");
    expect(searchableText("*")).toBe("");
  });

  it("keeps one of each repeated value", () => {
    expect(buildExpertQuery({ countries: ["DEU", "DEU"], keywords: ["a b", " a  b "] })).toBe(
      `FT~"a b" AND buyer-country IN (DEU) AND ${COMPETITION}${SORT}`,
    );
    expect(splitCpvCodes(["72000000-5", "72000000", "72", "72*"])).toEqual({
      exact: ["72000000"],
      prefixes: ["72"],
    });
  });
});
