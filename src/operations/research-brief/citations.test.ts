import { describe, expect, it } from "vitest";
import { limitWords, verifyCitations } from "./citations.ts";
import { extractiveAnswer } from "./extractive.ts";
import { planQueries } from "./pipeline.ts";
import { countWords } from "./text.ts";

const sources = [
  { n: 1, url: "https://a.example/one" },
  { n: 2, url: "https://b.example/two/" },
];

describe("verifyCitations", () => {
  it("keeps citations of sources that were read and removes the rest, naming each", () => {
    const checked = verifyCitations(
      "Alpha is true [1]. Beta holds [2, 5]. Gamma [3-4] is made up. See https://b.example/two and https://evil.example/x.",
      sources,
    );
    expect(checked.text).toBe("Alpha is true [1]. Beta holds [2]. See https://b.example/two and.");
    expect(checked.removed).toEqual(["[5]", "[3]", "[4]", "a link to https://evil.example/x"]);
    expect(checked.droppedSentences).toBe(1);
    expect(checked.cited).toEqual([1, 2]);
  });

  it("keeps Markdown structure, links to read pages, and sentences without citations", () => {
    const markdown =
      "## Findings\n\n- Read [here](https://a.example/one#part) [1][1].\n- Invented [9].\n- Plain line.";
    const checked = verifyCitations(markdown, sources);
    expect(checked.text).toBe("## Findings\n\n- Read [here](https://a.example/one#part) [1].\n- Plain line.");
    expect(checked.removed).toEqual(["[9]"]);
  });
});

describe("links whose URL contains parentheses", () => {
  const wikipedia = [{ n: 1, url: "https://en.wikipedia.org/wiki/Python_(programming_language)" }];

  it("a Markdown link to a read page with ) in its URL is kept whole, not garbled", () => {
    const markdown =
      "Python is a general-purpose language ([Python](https://en.wikipedia.org/wiki/Python_(programming_language))) [1].";
    const checked = verifyCitations(markdown, wikipedia);
    expect(checked.text).toBe(markdown);
    expect(checked.removed).toEqual([]);
  });

  it("a bare URL with ) in it is recognised, and a link to an unread page is removed whole", () => {
    const checked = verifyCitations(
      "See https://en.wikipedia.org/wiki/Python_(programming_language). " +
        "Compare [Monty](https://en.wikipedia.org/wiki/Monty_Python_(disambiguation)) too [1].",
      wikipedia,
    );
    expect(checked.text).toBe(
      "See https://en.wikipedia.org/wiki/Python_(programming_language). Compare Monty too [1].",
    );
    expect(checked.removed).toEqual([
      "a link to https://en.wikipedia.org/wiki/Monty_Python_(disambiguation)",
    ]);
  });
});

describe("limitWords", () => {
  it("cuts at a sentence boundary so that the words (markers not counted) fit", () => {
    const text = "One two three four [1]. Five six seven [2].\n\n- Eight nine ten.\n- Eleven twelve.";
    expect(limitWords(text, 100)).toEqual({ text, shortened: false });
    const cut = limitWords(text, 10);
    expect(cut).toEqual({
      text: "One two three four [1]. Five six seven [2].\n\n- Eight nine ten.",
      shortened: true,
    });
    expect(countWords(cut.text)).toBe(10);
  });
});

describe("planQueries and the extractive answer", () => {
  it("plans the question, its content words, and those with the context's terms", () => {
    expect(
      planQueries(
        "How do heat pumps affect winter range?",
        "Our vans run in Finland; Finland winters are long.",
      ),
    ).toEqual([
      "How do heat pumps affect winter range?",
      "heat pumps affect winter range",
      "heat pumps affect winter range finland vans run winters",
    ]);
  });

  it("leads with the best sentence, then quotes relevant sentences by source, each cited, then lists the sources", () => {
    const answer = extractiveAnswer(
      "Why do heat pumps help winter range?",
      undefined,
      [
        {
          n: 1,
          title: "Heat pumps",
          url: "https://a.example/heat-pumps",
          text: "Heat pumps move heat instead of making it, which helps winter range a lot. Unrelated sentence about tax law here.",
        },
        {
          n: 2,
          title: "Heaters",
          url: "https://b.example/heaters",
          text: "Resistive heaters draw several kilowatts in winter and shorten the range of vans.",
        },
        {
          n: 3,
          title: "Markets",
          url: "https://c.example/markets",
          text: "The stock market rose on Tuesday for the third day in a row.",
        },
      ],
      200,
    );
    expect(answer.split("\n")).toEqual([
      "Heat pumps move heat instead of making it, which helps winter range a lot. [1]",
      "",
      "Evidence by source:",
      "",
      "**[2] Heaters**",
      "- Resistive heaters draw several kilowatts in winter and shorten the range of vans. [2]",
      "",
      "Sources:",
      "1. [Heat pumps](https://a.example/heat-pumps)",
      "2. [Heaters](https://b.example/heaters)",
      "3. [Markets](https://c.example/markets)",
    ]);
    expect(
      verifyCitations(answer, [
        { n: 1, url: "https://a.example/heat-pumps" },
        { n: 2, url: "https://b.example/heaters" },
        { n: 3, url: "https://c.example/markets" },
      ]).text,
    ).toBe(answer);
  });
});
