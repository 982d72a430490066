import { describe, expect, it } from "vitest";
import { extractiveAnswer, rankSentences, sectionsOf } from "./extractive.ts";

/** A MediaWiki plain-text extract (explaintext, exsectionformat=wiki), from Wikipedia (CC BY-SA). */
const PYTHON = {
  n: 1,
  title: "Python (programming language)",
  url: "https://en.wikipedia.org/wiki/Python_(programming_language)",
  text:
    "Python is a high-level, general-purpose programming language. Its design philosophy emphasizes code readability with the use of significant indentation.\n" +
    "Guido van Rossum began working on Python in the late 1980s as a successor to the ABC programming language.\n\n\n" +
    "== History ==\n" +
    "Python was conceived in the late 1980s by Guido van Rossum at Centrum Wiskunde & Informatica (CWI) in the Netherlands.\n" +
    "Python 3.0 was released on 3 December 2008, with many of its major features backported to Python 2.6.x and 2.7.x.\n\n\n" +
    "== Design philosophy and features ==\n" +
    "Python is a multi-paradigm programming language that supports object-oriented and structured programming.",
};

describe("sections", () => {
  it("MediaWiki == Heading == lines, Markdown headings, and a short unpunctuated line before a long paragraph", () => {
    expect(sectionsOf(PYTHON.text).map((section) => section.heading)).toEqual([
      undefined,
      undefined,
      "History",
      "History",
      "Design philosophy and features",
    ]);
    const html =
      "Winter practice\n\nFleet operators limit cold-weather capacity loss by preconditioning batteries while vehicles are still plugged in, so that heating energy comes from the grid.\n\n## Depots\n\nParking indoors helps.";
    expect(sectionsOf(html)).toEqual([
      {
        heading: "Winter practice",
        paragraph:
          "Fleet operators limit cold-weather capacity loss by preconditioning batteries while vehicles are still plugged in, so that heating energy comes from the grid.",
      },
      { heading: "Depots", paragraph: "Parking indoors helps." },
    ]);
  });
});

describe("the extractive brief", () => {
  it("leads with an answer sentence, then evidence by source with section headings, then the sources", () => {
    const answer = extractiveAnswer(
      "When was Python 3.0 released?",
      undefined,
      [
        PYTHON,
        {
          n: 2,
          title: "Python release history",
          url: "https://blog.example/python-releases",
          text:
            "Subscribe to our newsletter to get every Python release in your inbox.\n\n" +
            "Python 3.0 was released in December 2008 after years of discussion about breaking changes.\n\n" +
            "Python 2.7 was released in 2010 and supported until 2020, far longer than planned.",
        },
      ],
      300,
    );
    expect(answer.split("\n")).toEqual([
      "Python 3.0 was released in December 2008 after years of discussion about breaking changes. [2]",
      "",
      "Evidence by source:",
      "",
      "**[1] Python (programming language)**",
      "- *History:* Python 3.0 was released on 3 December 2008, with many of its major features backported to Python 2.6.x and 2.7.x. [1]",
      "- Python is a high-level, general-purpose programming language. [1]",
      "- *Design philosophy and features:* Python is a multi-paradigm programming language that supports object-oriented and structured programming. [1]",
      "- Guido van Rossum began working on Python in the late 1980s as a successor to the ABC programming language. [1]",
      "",
      "**[2] Python release history**",
      "- Python 2.7 was released in 2010 and supported until 2020, far longer than planned. [2]",
      "",
      "Sources:",
      "1. [Python (programming language)](https://en.wikipedia.org/wiki/Python_(programming_language))",
      "2. [Python release history](https://blog.example/python-releases)",
    ]);
    expect(answer).not.toContain("newsletter");
  });

  it("says where sources give different figures for the same quantity", () => {
    const answer = extractiveAnswer(
      "How many steps a day lower the risk of death?",
      undefined,
      [
        {
          n: 1,
          title: "Study A",
          url: "https://a.example/steps",
          text: "Adults who walked 7,000 steps a day had a lower risk of death than those who walked less.",
        },
        {
          n: 2,
          title: "Study B",
          url: "https://b.example/steps",
          text: "In this cohort, adults who walked 10,000 steps a day had the lowest risk of death.",
        },
        {
          n: 3,
          title: "Study C",
          url: "https://c.example/steps",
          text: "The risk of death fell by 3.5 percent for every 1,000 extra steps in the study period.",
        },
      ],
      300,
    );
    expect(answer).toContain(
      "Figures that differ: “7,000 steps” [1] against “10,000 steps” [2], both on adults, walked, day.",
    );
    expect(answer.match(/Figures that differ/g)).toHaveLength(1);
  });

  it("is empty when no sentence of any source is about the question, and ranks no promotional sentence", () => {
    const sources = [
      { n: 1, text: "The stock market rose on Tuesday for the third day in a row, led by banks." },
      { n: 2, text: "Subscribe now: winter batteries are 20% off for newsletter readers this week." },
    ];
    expect(extractiveAnswer("Why do batteries lose capacity in winter?", undefined, sources, 200)).toBe("");
    expect(rankSentences("Why do batteries lose capacity in winter?", undefined, sources)).toEqual([]);
  });

  it("matches inflected forms and whole numbers: 'charging' finds 'charged', '10,000' finds '10000'", () => {
    const ranked = rankSentences("charging 10,000 vans", undefined, [
      { n: 1, text: "Most of the vans were charged overnight at the depot in winter." },
      { n: 2, text: "A fleet of 10000 vehicles needs a large depot for the winter months." },
      { n: 3, text: "Rain fell on the city for most of the afternoon and evening." },
    ]);
    expect(ranked.map((sentence) => [sentence.n, sentence.answersQuestion])).toEqual([
      [1, true],
      [2, true],
    ]);
  });
});
