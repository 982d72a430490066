import { describe, expect, it } from "vitest";
import {
  doiIn,
  hasAbstract,
  looksScholarly,
  MIN_ABSTRACT_WORDS,
  parseCrossrefAnswer,
  workDocument,
} from "../../src/operations/research-brief/crossref.ts";
import { ProviderError } from "../../src/operations/research-brief/retry.ts";
import { countWords } from "../../src/operations/research-brief/text.ts";
import {
  parseWikipediaArticle,
  parseWikipediaSearch,
  WIKIPEDIA_LICENCE,
} from "../../src/operations/research-brief/wikipedia.ts";
import { fixture, pythonArticle } from "./research-sources-standins.ts";

/** Parsers against the recorded answers in test/fixtures/research/ (see its SOURCES.md). */

const ENWIKI = "https://en.wikipedia.org/w/api.php";
const DEWIKI = "https://de.wikipedia.org/w/api.php";

describe("Wikipedia list=search (formatversion 1)", () => {
  it("mediawiki-search-01: enwiki's ten hits, searchmatch spans dropped, continue and batchcomplete ignored", () => {
    const hits = parseWikipediaSearch(fixture("mediawiki-search-01.json"), ENWIKI);
    expect(hits).toHaveLength(10);
    expect(hits[0]).toEqual({
      url: "https://en.wikipedia.org/wiki/Python_(programming_language)",
      title: "Python (programming language)",
      snippet:
        "Python is a high-level, general-purpose programming language. Its design philosophy emphasizes code readability with the use of significant indentation",
      publishedAt: "2026-03-25T15:46:00Z",
    });
    expect(hits.map((hit) => hit.title)).toContain("Flask (web framework)");
    for (const hit of hits) expect(hit.snippet).not.toMatch(/<|searchmatch/);
  });

  it("mediawiki-search-02: searchinfo with a suggestion is tolerated", () => {
    const hits = parseWikipediaSearch(fixture("mediawiki-search-02.json"), ENWIKI);
    expect(hits.map((hit) => [hit.title, hit.url])).toEqual([
      ["Computing", "https://en.wikipedia.org/wiki/Computing"],
      ["Cloud computing", "https://en.wikipedia.org/wiki/Cloud_computing"],
    ]);
  });

  it("mediawiki-search-03: German Wikipedia, umlauts and a slash in titles, continue '-||info'", () => {
    const hits = parseWikipediaSearch(fixture("mediawiki-search-03.json"), DEWIKI);
    expect(hits).toHaveLength(6);
    expect(hits[0]?.url).toBe("https://de.wikipedia.org/wiki/Hallo");
    const list = hits.find((hit) => hit.title.startsWith("Liste von Hallo-Welt-Programmen"));
    expect(list?.url).toBe(
      "https://de.wikipedia.org/wiki/Liste_von_Hallo-Welt-Programmen/H%C3%B6here_Programmiersprachen",
    );
    expect(list?.title).toBe("Liste von Hallo-Welt-Programmen/Höhere Programmiersprachen");
  });

  it("an answer without query.search is the provider's failure, not retried", () => {
    const error = (() => {
      try {
        parseWikipediaSearch(fixture("mediawiki-info-01.json"), ENWIKI);
      } catch (caught) {
        return caught;
      }
    })() as ProviderError;
    expect(error).toBeInstanceOf(ProviderError);
    expect(error.retryable).toBe(false);
    expect(error.message).toBe("wikipedia: answered an unexpected shape (at query.search)");
  });
});

describe("Wikipedia prop=extracts|revisions|info (formatversion 1, pages keyed by id)", () => {
  it("extracts-01 + info-01 (one page, recorded a second apart): lastrevid permalink, touched date, warnings tolerated", () => {
    const document = parseWikipediaArticle(JSON.parse(pythonArticle()), ENWIKI);
    expect(document).toMatchObject({
      url: "https://en.wikipedia.org/w/index.php?title=Python_(programming_language)&oldid=1345336232",
      title: "Python (programming language)",
      publishedAt: "2026-03-27T09:26:22Z",
      kind: "wikipedia",
      licence: WIKIPEDIA_LICENCE,
    });
    const paragraphs = document.text.split("\n\n");
    expect(paragraphs[0]).toBe(
      "Python is a high-level, general-purpose programming language. Its design philosophy emphasizes code readability with the use of significant indentation. Python is dynamically type-checked and garbage-collected. It supports multiple programming paradigms, including structured (particularly procedural), object-oriented and functional programming.",
    );
    // Headings are plain paragraphs; the apparatus at the end (See also … External links) is left out.
    expect(paragraphs).toContain("History");
    expect(paragraphs).toContain("Languages influenced by Python");
    expect(document.text).not.toMatch(/^=+ /m);
    for (const gone of ["See also", "Further reading", "External links", "Think Python", "Pydoc"]) {
      expect(document.text).not.toContain(gone);
    }
    expect(countWords(document.text)).toBeGreaterThan(3000);
  });

  it("the public host comes from the page's URL even when the API is reached elsewhere (a stand-in)", () => {
    const document = parseWikipediaArticle(JSON.parse(pythonArticle()), "http://127.0.0.1:8080/w/api.php");
    expect(document.url).toBe(
      "https://en.wikipedia.org/w/index.php?title=Python_(programming_language)&oldid=1345336232",
    );
  });

  it("extracts-01 alone (no revisions, no info): the article URL is cited, no date", () => {
    const document = parseWikipediaArticle(fixture("mediawiki-extracts-01.json"), ENWIKI);
    expect(document.url).toBe("https://en.wikipedia.org/wiki/Python_(programming_language)");
    expect(document.publishedAt).toBeUndefined();
  });

  it("info-01 alone has no extract: no text, the provider's failure", () => {
    expect(() => parseWikipediaArticle(fixture("mediawiki-info-01.json"), ENWIKI)).toThrow(
      'wikipedia: gave no text for "Python (programming language)"',
    );
  });

  it("extracts-02 (Physics, extracts+info+pageimages): lastrevid, touched, run-together paragraphs split", () => {
    const document = parseWikipediaArticle(fixture("mediawiki-extracts-02.json"), ENWIKI);
    expect(document.url).toBe("https://en.wikipedia.org/w/index.php?title=Physics&oldid=902734855");
    expect(document.publishedAt).toBe("2019-06-27T17:36:04Z");
    const paragraphs = document.text.split("\n\n");
    expect(paragraphs).toHaveLength(3);
    expect(paragraphs[0]).toMatch(/how the universe behaves\.$/);
    expect(paragraphs[1]).toMatch(/^Physics is one of the oldest academic disciplines/);
    expect(paragraphs[0]).toContain("φυσική");
  });

  it("extracts-03 (Area, 2017): revisions[0].revid, no info: the permalink on the API's host, no date", () => {
    const document = parseWikipediaArticle(fixture("mediawiki-extracts-03.json"), ENWIKI);
    expect(document.url).toBe("https://en.wikipedia.org/w/index.php?title=Area&oldid=740370016");
    expect(document.publishedAt).toBeUndefined();
    expect(document.text).toContain("Formal definition");
    expect(document.text).not.toContain("Routh's theorem"); // under "See also"
  });

  it("extracts-04 (normalized, intro only, trailing blank lines): two paragraphs, article URL", () => {
    const document = parseWikipediaArticle(fixture("mediawiki-extracts-04.json"), ENWIKI);
    expect(document.url).toBe("https://en.wikipedia.org/wiki/2005_Azores_subtropical_storm");
    expect(document.title).toBe("2005 Azores subtropical storm");
    expect(document.text.split("\n\n")).toHaveLength(2);
    expect(document.text.endsWith("warm core.")).toBe(true);
  });
});

describe("Crossref works", () => {
  it("crossref-works-query-01: 20 works; JATS, <scp>, entities and newlines stripped; partial dates", () => {
    const works = parseCrossrefAnswer(fixture("crossref-works-query-01.json"));
    expect(works).toHaveLength(20);
    expect(works[0]).toMatchObject({
      doi: "10.1111/ele.14024",
      url: "https://doi.org/10.1111/ele.14024",
      type: "journal-article",
      title: "The forecast trap",
      authors: ["Carl Boettiger"],
      container: "Ecology Letters",
      date: "2022-05-30",
    });
    expect(works[0]?.abstract[0]).toMatch(/^Encouraged by decision makers’ appetite/);
    const byDoi = new Map(works.map((work) => [work.doi, work]));
    expect(byDoi.get("10.1002/fee.70021")?.title).toBe(
      "The role of AI in ecology’s computational carbon footprint",
    );
    expect(byDoi.get("10.1177/2053951719836258")).toMatchObject({
      container: "Big Data & Society",
      date: "2019-01",
    });
    expect(byDoi.get("10.1101/055319")).toMatchObject({ type: "posted-content" });
    expect(byDoi.get("10.1101/055319")?.container).toBeUndefined();
    expect(byDoi.get("10.32614/cran.package.rfishbase")).toMatchObject({ type: "dataset" });
    for (const work of works) {
      for (const paragraph of work.abstract) expect(paragraph).not.toMatch(/<\/?jats|^Abstract$/);
    }
    // Five of the twenty deposited no abstract: nothing to read, not offered as sources.
    expect(works.filter((work) => !hasAbstract(work)).map((work) => work.doi)).toEqual([
      "10.1007/s12080-020-00477-4",
      "10.1007/s12080-013-0192-6",
      "10.1111/2041-210x.14070",
      "10.1002/fee.70021",
      "10.32614/cran.package.rfishbase",
    ]);
  });

  it("a work's document: title, abstract paragraphs, a reference line; cited by its DOI URL", () => {
    const [work] = parseCrossrefAnswer(fixture("crossref-works-query-01.json"));
    const document = workDocument(work as NonNullable<typeof work>);
    expect(document).toMatchObject({
      url: "https://doi.org/10.1111/ele.14024",
      title: "The forecast trap",
      publishedAt: "2022-05-30",
      kind: "crossref",
      minWords: MIN_ABSTRACT_WORDS,
    });
    expect(document.licence).toBeUndefined();
    const paragraphs = document.text.split("\n\n");
    expect(paragraphs[0]).toBe("The forecast trap");
    expect(paragraphs.at(-1)).toBe("Carl Boettiger · Ecology Letters · 2022 · doi:10.1111/ele.14024");
    expect(countWords(document.text)).toBeGreaterThan(140);
  });

  it("crossref-works-query-02: reference entries with HTML <p> abstracts, one without authors", () => {
    const works = parseCrossrefAnswer(fixture("crossref-works-query-02.json"));
    expect(works.map((work) => [work.title, work.authors, work.type])).toEqual([
      ["Communicating Ecology", [], "reference-entry"],
      ["Chemical Ecology", ["André Kessler"], "reference-entry"],
    ]);
    expect(works.every(hasAbstract)).toBe(true);
    expect(works[0]?.abstract[0]).toMatch(/^Communication is perhaps the most important/);
    expect(
      workDocument(works[0] as NonNullable<(typeof works)[0]>)
        .text.split("\n\n")
        .at(-1),
    ).toBe("Ecology · reference entry · 2022 · doi:10.1093/obo/9780199830060-0238");
  });

  it("crossref-work-01 (message-type work): eight authors shown as six and et al", () => {
    const [work] = parseCrossrefAnswer(fixture("crossref-work-01.json"));
    expect(work).toMatchObject({
      doi: "10.1038/srep16696",
      container: "Scientific Reports",
      date: "2015-11-19",
    });
    expect(work?.authors).toHaveLength(8);
    expect(work && hasAbstract(work)).toBe(true);
    expect(
      workDocument(work as NonNullable<typeof work>)
        .text.split("\n\n")
        .at(-1),
    ).toMatch(/^(?:[^,]+, ){5}[^,]+ et al · Scientific Reports · 2015 · doi:10\.1038\/srep16696$/);
  });

  it("crossref-work-02: a work without an abstract parses, and is not a source", () => {
    const [work] = parseCrossrefAnswer(fixture("crossref-work-02.json"));
    expect(work).toMatchObject({ doi: "10.1371/journal.pone.0033693", container: "PLoS ONE", abstract: [] });
    expect(work && hasAbstract(work)).toBe(false);
  });

  it("a Wikipedia answer is not a Crossref answer", () => {
    expect(() => parseCrossrefAnswer(fixture("mediawiki-search-01.json"))).toThrow(
      "crossref: answered an unexpected shape (at status)",
    );
  });
});

describe("when Crossref is asked", () => {
  it("questions that look scholarly: research, study, paper, journal, et al., a quoted title, a DOI", () => {
    for (const question of [
      "What is the Python programming language used for in ecological research?",
      "What does the latest study on cold batteries say?",
      "Which journal published the forecast trap paper?",
      "What did Boettiger et al. find about forecasts?",
      'What does "The forecast trap" argue about fisheries?',
      "Summarize 10.1038/srep16696",
    ]) {
      expect(looksScholarly(question), question).toBe(true);
    }
    for (const question of [
      "What is the Python programming language used for?",
      "Why do lithium-ion batteries lose capacity in cold weather, and how can fleets limit it?",
      "Which EU regulations govern humanoid robots in warehouses?",
    ]) {
      expect(looksScholarly(question), question).toBe(false);
    }
  });

  it("finds a DOI bare, after doi:, or in a doi.org link, without trailing punctuation", () => {
    expect(doiIn("What did doi:10.1038/srep16696 find?")).toBe("10.1038/srep16696");
    expect(doiIn("See https://doi.org/10.1371/journal.pone.0033693.")).toBe("10.1371/journal.pone.0033693");
    expect(doiIn("(10.1111/ele.14024)")).toBe("10.1111/ele.14024");
    expect(doiIn("No identifier here, only 10.5 percent.")).toBeUndefined();
  });
});
