import { describe, expect, it } from "vitest";
import { groundAnswer, groundingCaveats } from "./grounding.ts";

/** Realistic source text: a battery article, a walking study, a step-count explainer, Wikipedia (CC BY-SA). */
const sources = [
  {
    n: 1,
    url: "https://batteries.example/cold",
    title: "The chemistry of cold batteries",
    text:
      "Lithium-ion batteries lose usable capacity in cold weather because the electrolyte becomes more viscous.\n\n" +
      "At minus twenty degrees Celsius a typical cell delivers roughly sixty to seventy percent of its rated capacity.\n\n" +
      "Battery management systems therefore limit the charging current below about five degrees Celsius.",
  },
  {
    n: 2,
    url: "https://en.wikipedia.org/wiki/Python_(programming_language)",
    title: "Python (programming language)",
    text:
      "Python is a high-level, general-purpose programming language.\n" +
      "Guido van Rossum began working on Python in the late 1980s as a successor to the ABC programming language. " +
      "Python 3.0, released in 2008, was a major revision and not completely backward-compatible with earlier versions.\n" +
      "As of 2026, the Python Software Foundation supports Python 3.10, 3.11, 3.12, 3.13, and 3.14.",
  },
  {
    n: 3,
    url: "https://health.example/walking",
    title: "Daily steps and mortality",
    text:
      "Adults who took about 7,000 steps a day had a 50 to 70 percent lower risk of death than those who took fewer. " +
      "The World Health Organization recommends 150 minutes of moderate activity a week. " +
      "Average daily steps in the cohort rose 3.5 percent, to 1.2 million steps a year.",
  },
  {
    n: 4,
    url: "https://health.example/step-target",
    title: "Is there a daily step target?",
    text:
      "There is no official daily step target. The round number most people quote began as a pedometer " +
      "advertising slogan in Japan in 1965, not as a finding of any study.",
  },
];

describe("groundAnswer: figures, years and names must be in a cited source", () => {
  it('catches "The WHO recommends 10,000 steps a day [4]." when source 4 says there is no target', () => {
    const grounded = groundAnswer(
      "The WHO recommends 10,000 steps a day [4]. No official target exists [4].",
      sources,
    );
    expect(grounded.text).toBe("No official target exists [4].");
    expect(grounded.unsupported).toEqual([
      { sentence: "The WHO recommends 10,000 steps a day [4].", cited: [4], missing: ["10,000", "WHO"] },
    ]);
    expect(groundingCaveats(grounded)).toEqual([
      "Removed 1 sentence stating a figure or name that the sources it cites do not contain: " +
        "“The WHO recommends 10,000 steps a day [4].” (10,000, WHO not in [4]).",
    ]);
  });

  it("keeps sentences whose figures, years and names all occur in the cited source, however written", () => {
    const answer = [
      "At −20 °C a cell delivers 60–70 % of its rated capacity [1].",
      "Charging is limited below about 5 °C [1].",
      "Guido van Rossum began Python in the late 1980s; Python 3.0 followed in 2008 [2].",
      "The Python Software Foundation supports Python 3.10 to 3.14 [2].",
      "Adults at about 7000 steps a day had a 50–70 per cent lower risk of death [3].",
      "Steps rose 3.5 % to 1,200,000 a year [3].",
      "The World Health Organization (WHO) recommends 150 minutes of activity a week [3].",
    ].join(" ");
    const grounded = groundAnswer(answer, sources);
    expect(grounded.unsupported).toEqual([]);
    expect(grounded.uncited).toEqual([]);
    expect(grounded.text).toBe(answer);
  });

  it("a figure that is in a different source than the one cited is not grounded", () => {
    const grounded = groundAnswer(
      "Python 3.0 was released in 2008 [1]. About 7,000 steps a day lowers the risk of death [4].",
      sources,
    );
    expect(grounded.text).toBe("");
    expect(grounded.unsupported.map((entry) => [entry.cited, entry.missing])).toEqual([
      [[1], ["3.0", "2008"]],
      [[4], ["7,000"]],
    ]);
  });

  it("a sentence citing two sources is grounded by either; a name must be in one of them", () => {
    const grounded = groundAnswer(
      "About 7,000 steps helps, and there is no official target [3][4]. Guido van Rossum agrees [3][4].",
      sources,
    );
    expect(grounded.text).toBe("About 7,000 steps helps, and there is no official target [3][4].");
    expect(grounded.unsupported[0]?.missing).toEqual(["Guido van Rossum"]);
  });

  it("an uncited sentence stating a figure, year or name is removed; one that states none is kept", () => {
    const grounded = groundAnswer(
      "Cold slows the ions. In 2023 the CDC reported more winter breakdowns. The Nordic Battery Council disagrees. " +
        "Preconditioning helps [1].",
      sources,
    );
    expect(grounded.text).toBe("Cold slows the ions. Preconditioning helps [1].");
    expect(grounded.uncited.map((entry) => entry.missing)).toEqual([
      ["2023", "CDC"],
      ["Nordic Battery Council"],
    ]);
    expect(groundingCaveats(grounded)).toEqual([
      "Removed 2 uncited sentences stating a figure or name without naming a source for it: " +
        "“In 2023 the CDC reported more winter breakdowns.” (2023, CDC); “The Nordic Battery Council disagrees.” (Nordic Battery Council).",
    ]);
  });

  it("what the asker said counts as evidence; headings are not checked; sentence openers are not names", () => {
    const grounded = groundAnswer(
      "## Advice for 2025\n\nFor your 40 vans in Finland, precondition while plugged in. However, Battery Management Systems limit charging [1].",
      sources,
      "How do we keep range up?\nWe run 40 electric delivery vans in Finland.",
    );
    expect(grounded.text).toBe(
      "## Advice for 2025\n\nFor your 40 vans in Finland, precondition while plugged in. However, Battery Management Systems limit charging [1].",
    );
  });

  it("a link to a source's page (with parentheses in its URL) cites that source", () => {
    const grounded = groundAnswer(
      "Python 3.0 came out in 2008 ([Wikipedia](https://en.wikipedia.org/wiki/Python_(programming_language))). " +
        "It dates from 1965 per https://health.example/step-target.",
      sources,
    );
    expect(grounded.unsupported).toEqual([]);
    expect(grounded.uncited).toEqual([]);
  });
});
