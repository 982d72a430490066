import { describe, expect, it } from "vitest";
import { readFixture } from "../../../test/fixtures/ted/stand-in.ts";
import { deadlineInstant, decodeEntities, normalizeNotice } from "./normalize.ts";

const recorded = (fixture: Parameters<typeof readFixture>[0], noticeId: string) => {
  const notice = readFixture(fixture)
    .pages.flatMap((page) => page.notices)
    .find((candidate) => candidate["publication-number"] === noticeId);
  if (!notice) throw new Error(`${noticeId} is not in ${fixture}`);
  return normalizeNotice(notice);
};

describe("reading a TED notice", () => {
  it("turns TED's offset days into UTC instants: end of the day without a time, the lot's time with one", () => {
    expect(deadlineInstant("2026-11-04+01:00")?.toISOString()).toBe("2026-11-04T22:59:59.000Z");
    expect(deadlineInstant("2026-09-14+02:00")?.toISOString()).toBe("2026-09-14T21:59:59.000Z");
    expect(deadlineInstant("2026-11-04+01:00", "10:00:00+01:00")?.toISOString()).toBe(
      "2026-11-04T09:00:00.000Z",
    );
    expect(deadlineInstant("2026-11-04+01:00", "12:30")?.toISOString()).toBe("2026-11-04T11:30:00.000Z");
    expect(deadlineInstant("2026-11-04Z")?.toISOString()).toBe("2026-11-04T23:59:59.000Z");
    expect(deadlineInstant("4 November")).toBeNull();
  });

  it("reads a recorded Austrian contract notice (fixture 03) field by field", () => {
    const notice = recorded("search-response-03.json", "688936-2026");
    expect(notice).toMatchObject({
      noticeId: "688936-2026",
      title:
        "Austria – IT services: consulting, software development, Internet and support – DIGIT- Bereitstellen von diversen IT-Dienstleistungen",
      titleLanguage: "eng",
      buyerName: "Oberösterreichische Gesundheitsholding GmbH und Tochterunternehmen",
      buyerCountry: "AUT",
      value: null,
      sourceUrl: "https://ted.europa.eu/en/notice/-/detail/688936-2026",
      noticeType: "cn-standard",
      publicationDate: "2026-10-06",
      cpvCodes: ["72000000", "72262000", "72266000", "72250000", "72253000"],
      lotCount: 11,
      languages: ["deu"],
      frameworkAgreement: null,
    });
    // Eleven lots with one deadline: kept once, with its kind.
    expect(notice.deadlines).toEqual([{ type: "tender", at: new Date("2026-11-04T22:59:59.000Z") }]);
  });

  it("takes the buyer's language when TED has no English title, and decodes HTML entities in names", () => {
    const polish = recorded("search-response-02.json", "645567-2026");
    expect(polish.titleLanguage).toBe("pol");
    expect(polish.title?.startsWith("Polska – Roboty w zakresie burzenia")).toBe(true);
    expect(decodeEntities("Falu Energi &amp; Vatten &#246; &#xE4; &unknown;")).toBe(
      "Falu Energi & Vatten ö ä &unknown;",
    );
    // Every named HTML entity, not a handful; a code point past U+10FFFF is U+FFFD, never a throw;
    // a bare "&" (and a legacy name without ";") is text.
    expect(decodeEntities("Caf&eacute; M&Uuml;LLER &mdash; Sm&oslash;rrebr&oslash;d &hellip;")).toBe(
      "Café MÜLLER — Smørrebrød …",
    );
    expect(decodeEntities("bad &#x110000; &#99999999999; &#0; end")).toBe("bad \uFFFD \uFFFD \uFFFD end");
    expect(decodeEntities("AT&T &notice R&D &amp")).toBe("AT&T &notice R&D &amp");
    expect(
      normalizeNotice({
        "publication-number": "3-2026",
        "title-proc": { deu: ["Stadtwerke M&uuml;nchen &ndash; Reinigung"] },
        "buyer-name": { deu: ["Gemeinde &#x110000; &Auml;"] },
      }),
    ).toMatchObject({ title: "Stadtwerke München – Reinigung" });
    const notice = normalizeNotice({
      "publication-number": "1-2026",
      "title-proc": { fra: "Nettoyage des locaux" },
      "buyer-name": { fra: ["Ville de Lyon"] },
    });
    expect(notice).toMatchObject({ title: "Nettoyage des locaux", titleLanguage: "fra", languages: ["fra"] });
    expect(normalizeNotice({ "publication-number": "2-2026" })).toMatchObject({
      title: null,
      titleLanguage: null,
      buyerName: null,
      buyerCountry: null,
      lotCount: null,
      value: null,
    });
  });

  it("takes the value from the procedure, else the sum of the lots, else the total; never sums currencies", () => {
    expect(recorded("search-response-04.json", "612350-2026").value).toEqual({
      amount: 700_000_000,
      currency: "EUR",
    });
    expect(recorded("search-response-01.json", "450106-2026").value).toEqual({
      amount: 18_000_000,
      currency: "SEK",
    });
    expect(recorded("search-request-and-pages-05.json", "619343-2026").value).toEqual({
      amount: 1_678_875,
      currency: "CZK",
    });
    const lots = normalizeNotice({
      "publication-number": "3-2026",
      "estimated-value-lot": ["100000", 250000.5],
      "estimated-value-cur-lot": ["EUR", "EUR"],
    });
    expect(lots.value).toEqual({ amount: 350_000.5, currency: "EUR" });
    const mixed = normalizeNotice({
      "publication-number": "4-2026",
      "estimated-value-lot": ["100000", "2000000"],
      "estimated-value-cur-lot": ["EUR", "SEK"],
    });
    expect(mixed).toMatchObject({ value: null, mixedCurrencies: ["EUR", "SEK"] });
    const fallback = normalizeNotice({
      "publication-number": "5-2026",
      "estimated-value-lot": ["100000", "2000000"],
      "estimated-value-cur-lot": ["EUR", "SEK"],
      "total-value": 90000,
      "total-value-cur": ["EUR"],
    });
    expect(fallback).toMatchObject({
      value: { amount: 90000, currency: "EUR" },
      mixedCurrencies: ["EUR", "SEK"],
    });
  });

  it("names framework agreements from the field or the title, and counts lots", () => {
    expect(recorded("search-request-and-pages-05.json", "619389-2026").frameworkAgreement).toBe("title");
    const declared = normalizeNotice({
      "publication-number": "6-2026",
      "framework-agreement-lot": ["none", "fa-wo-rc"],
      "identifier-lot": ["LOT-0001", "LOT-0002", "LOT-0001"],
    });
    expect(declared).toMatchObject({ frameworkAgreement: "field", lotCount: 2 });
    for (const title of [
      "Rahmenvertrag Reinigung",
      "Accord-cadre de maintenance",
      "Рамково споразумение за доставка",
      "Συμφωνία-πλαίσιο για υπηρεσίες",
    ]) {
      expect(
        normalizeNotice({ "publication-number": "6-2026", "notice-title": { xxx: title } })
          .frameworkAgreement,
      ).toBe("title");
    }
    expect(
      normalizeNotice({ "publication-number": "7-2026", "framework-agreement-lot": ["none"] })
        .frameworkAgreement,
    ).toBeNull();
  });

  it("links the official notice page: TED's English page, else one built from the publication number", () => {
    expect(
      normalizeNotice({ "publication-number": "8-2026", links: { html: { ENG: "https://evil.example/x" } } })
        .sourceUrl,
    ).toBe("https://ted.europa.eu/en/notice/-/detail/8-2026");
  });

  it("gives versions of one procedure one key: procedure id, notice id, else buyer and own-language title", () => {
    const [call, award] = ["557381-2026", "645567-2026"].map((id) => recorded("search-response-02.json", id));
    expect(call?.procedureKey).toBe(award?.procedureKey);
    expect(
      normalizeNotice({ "publication-number": "9-2026", "procedure-identifier": "abc" }).procedureKey,
    ).toBe("procedure:abc");
    expect(normalizeNotice({ "publication-number": "9-2026", "notice-identifier": "n1" }).procedureKey).toBe(
      "notice:n1",
    );
  });
});
