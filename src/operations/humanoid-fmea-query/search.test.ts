import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { Bm25Index, FALLBACK_BELOW, stem, tokenize } from "./search.ts";

describe("tokenize and stem", () => {
  it("lower-cases, drops stop words and punctuation, and folds simple inflections together", () => {
    expect(tokenize("The robot FALLS onto a person")).toEqual(["robot", "fall", "onto", "person"]);
    expect(tokenize("The robot falls on someone", "query")).toEqual(["robot", "fall", "person"]);
    expect(["fall", "falls", "falling"].map(stem)).toEqual(["fall", "fall", "fall"]);
    expect(["stop", "stops", "stopped", "stopping"].map(stem)).toEqual(["stop", "stop", "stop", "stop"]);
    expect(["brake", "brakes", "braking"].map(stem)).toEqual(["brak", "brak", "brak"]);
    expect(["battery", "batteries"].map(stem)).toEqual(["battery", "battery"]);
    expect(["press", "status", "analysis"].map(stem)).toEqual(["press", "status", "analysis"]);
    expect(tokenize("ISO/TS 15066:2016, Émission")).toEqual(["iso", "ts", "15066", "2016", "emission"]);
  });

  it("reads e-stop as one term, never as the letters of e.g., and folds engineers' synonyms", () => {
    for (const spelling of ["e-stop", "E-Stop", "estop", "E stop", "emergency stop", "Emergency-stopping"])
      expect(tokenize(spelling, "query"), spelling).toEqual(["estop"]);
    expect(tokenize("e.g. i.e. cf. etc.", "query")).toEqual([]);
    expect(tokenize("fixtures, e.g. a mannequin")).not.toContain("e");
    expect(tokenize("harmonic drive", "query")).toEqual(tokenize("strain wave", "query"));
    expect(tokenize("Strain-wave gear")).toEqual(
      expect.arrayContaining(["strain", "wave", ...tokenize("strain wave", "query")]),
    );
    for (const phrase of ["finger trap", "pinching", "pinch point", "closing gap"])
      expect(tokenize(phrase, "query"), phrase).toEqual(["pinch"]);
    // A crushed battery or a crushing fall is not a pinch point.
    expect(tokenize("crush", "query")).toEqual(["crush"]);
    for (const phrase of [
      "LLM",
      "VLA",
      "foundation model",
      "large language models",
      "vision-language-action model",
    ])
      expect(tokenize(phrase, "query"), phrase).toEqual(["foundationmodel"]);
    expect(tokenize("robot tips over", "query")).toEqual(["robot", "tipover"]);
    const groups: [string, string[]][] = [
      [
        "localisation",
        ["localisation", "localization", "localised", "localized", "localising", "localizing"],
      ],
      ["lose", ["loss", "losses", "lost", "lose", "losing"]],
      ["teleop", ["teleop", "tele-op", "teleoperation", "teleoperated", "teleoperator", "remote operator"]],
      ["latency", ["lag", "lagging", "latency", "latencies", "delay", "delayed"]],
      [
        "intrusion",
        [
          "hacked",
          "hacker",
          "compromised",
          "intrusion",
          "intruder",
          "attack",
          "cyber attack",
          "cybersecurity",
          "malicious",
          "unauthorised",
          "unauthorized",
        ],
      ],
      [
        "vulnerabl",
        ["elderly", "older adults", "older people", "old person", "seniors", "frail", "vulnerable"],
      ],
      ["pinch", ["pinch point", "pinch-points", "pinching"]],
    ];
    for (const [term, spellings] of groups)
      for (const spelling of spellings) expect(tokenize(spelling, "query"), spelling).toEqual([term]);
    // A document keeps its own words and counts the group's term once, even for an overlapping phrase.
    expect(tokenize("a cyber attack").filter((t) => t === "intrusion")).toHaveLength(1);
    expect(tokenize("pinch point")).toEqual(["pinch", "point", "pinch"]);
    expect(tokenize("tip-over")).toEqual(expect.arrayContaining(["tip", "over", "tipover"]));
  });
});

describe("BM25", () => {
  const docs = [
    { id: "a", title: "battery fire", body: "cells" },
    {
      id: "b",
      title: "gear wear",
      body: "battery mentioned once in a much longer body about gears and wear",
    },
    { id: "c", title: "fire door", body: "exit" },
    { id: "d", title: "fire door", body: "exit" },
  ];
  const index = new Bm25Index(docs, (d) => [
    { text: d.title, weight: 3 },
    { text: d.body, weight: 1 },
  ]);

  it("matches the textbook formula on a hand-computed case", () => {
    // "cells": only in doc a (n = 1, N = 4): idf = ln(1 + 3.5/1.5).
    const idf = Math.log(1 + 3.5 / 1.5);
    expect(index.idf("cell")).toBeCloseTo(idf, 12);
    // Weighted lengths: a = c = d = 2×3 + 1 = 7, b = 2×3 + 9 (stop words dropped) = 15 → average 9.
    const norm = 1.2 * (1 - 0.75 + (0.75 * 7) / 9);
    expect(index.scores("cells")[0]).toBeCloseTo((idf * 1 * 2.2) / (1 + norm), 12);
  });

  it("ranks a rarer term higher, a heavier field higher, and leaves out documents without a query term", () => {
    expect(index.idf("cell")).toBeGreaterThan(index.idf("fire"));
    expect(index.search("battery").map((h) => h.doc.id)).toEqual(["a", "b"]);
    expect(index.search("nothing here").length).toBe(0);
  });

  it("answers the documents with every deciding term, or, when they are fewer than 3, every document with any", () => {
    // Six documents; "robot" is in more than half of them, so it scores but decides nothing.
    const corpus = [
      { id: "a", text: "robot battery fire" },
      { id: "b", text: "robot battery fire" },
      { id: "c", text: "robot battery fire" },
      { id: "d", text: "robot battery" },
      { id: "e", text: "robot gear" },
      { id: "f", text: "fire door" },
    ];
    const small = new Bm25Index(corpus, (d) => [{ text: d.text, weight: 1 }]);
    const found = (query: string, include?: (d: (typeof corpus)[number]) => boolean) =>
      small.search(query, include).map((h) => h.doc.id);
    expect(FALLBACK_BELOW).toBe(3);
    // Three documents hold both words: all-words answers, and nothing else.
    expect(found("battery fire")).toEqual(["a", "b", "c"]);
    // "robot" is common: "robot gear" is decided by "gear" alone, not answered by five robots.
    expect(found("robot gear")).toEqual(["e"]);
    // Only "a" and "b" are left with both words: fewer than 3, so every document with either word
    // answers, the ones with both first.
    const fallback = found("battery fire", (d) => d.id !== "c");
    expect(fallback.slice(0, 2).sort()).toEqual(["a", "b"]);
    expect(fallback.slice(2).sort()).toEqual(["d", "f"]);
    // With 4 or more terms a document may miss ⌊n/4⌋ of the best match's terms; more terms rank first.
    expect(index.search("battery fire cells gear").map((h) => h.doc.id)[0]).toBe("a");
  });

  it("breaks ties by document order, deterministically", () => {
    const hits = index.search("door exit");
    expect(hits.map((h) => h.doc.id)).toEqual(["c", "d"]);
    expect(hits[0]?.score).toBe(hits[1]?.score);
    expect(index.search("door exit")).toEqual(hits);
  });

  it("filters after scoring without changing scores", () => {
    const all = index.search("fire");
    const filtered = index.search("fire", (d) => d.id !== "a");
    expect(filtered).toEqual(all.filter((h) => h.doc.id !== "a"));
  });
});

describe("the answer rule, against an independent reading of the documentation (fast-check)", () => {
  // Seed printed so that a failure can be replayed: FC_SEED=<seed> npx vitest run <this file>.
  const seed = Number(process.env.FC_SEED ?? Date.now() % 2 ** 31);

  it("all words first, best match below 3, then every word below 3, common words deciding only then, more deciding terms first", () => {
    console.log(`search answer rule: fast-check seed ${seed}`);
    const vocabulary = [
      "robot",
      "fall",
      "battery",
      "fire",
      "gear",
      "door",
      "hand",
      "pinch",
      "lidar",
      "drift",
    ];
    const word = fc.constantFrom(...vocabulary);
    const corpus = fc.array(fc.array(word, { minLength: 1, maxLength: 6 }), { minLength: 1, maxLength: 12 });
    const query = fc.array(word, { minLength: 1, maxLength: 5 });
    fc.assert(
      fc.property(corpus, query, fc.integer({ min: 0, max: 11 }), (texts, words, excluded) => {
        const docs = texts.map((t, id) => ({ id, text: t.join(" ") }));
        const index = new Bm25Index(docs, (d) => [{ text: d.text, weight: 1 }]);
        const include = (d: { id: number }) => d.id !== excluded;
        const answer = index.search(words.join(" "), include);

        // The rule as docs/humanoid-fmea.md states it, computed from the words themselves.
        const terms = [...new Set(words)];
        const has = (d: { text: string }, term: string) => d.text.split(" ").includes(term);
        const common = (term: string) => docs.filter((d) => has(d, term)).length > docs.length / 2;
        const deciding = terms.some((t) => !common(t)) ? terms.filter((t) => !common(t)) : terms;
        const scores = index.scores(words.join(" ")).map((s) => Math.round(s * 1000) / 1000);
        const hits = docs
          .filter(include)
          .map((d) => ({
            d,
            matched: deciding.filter((t) => has(d, t)).length,
            score: scores[d.id] as number,
          }))
          .filter((h) => h.matched > 0 && h.score > 0);
        const best = Math.max(0, ...hits.map((h) => h.matched));
        const strict = hits.filter((h) => h.matched >= Math.max(1, best - Math.floor(deciding.length / 4)));
        // Below 3 even then: every query term decides, with the same all-but-a-quarter rule.
        const anyTerm = docs
          .filter(include)
          .map((d) => ({
            d,
            matched: deciding.filter((t) => has(d, t)).length,
            all: terms.filter((t) => has(d, t)).length,
            score: scores[d.id] as number,
          }))
          .filter((h) => h.all > 0 && h.score > 0);
        const bestAll = Math.max(0, ...anyTerm.map((h) => h.all));
        const everyTerm = anyTerm.filter(
          (h) => h.matched > 0 || h.all >= Math.max(1, bestAll - Math.floor(terms.length / 4)),
        );
        const expected = (strict.length >= 3 ? strict : hits.length >= 3 ? hits : everyTerm)
          .map((h) => ({ ...h, all: terms.filter((t) => has(h.d, t)).length }))
          .sort((a, b) => b.matched - a.matched || b.all - a.all || b.score - a.score || a.d.id - b.d.id)
          .map((h) => h.d.id);
        expect(answer.map((h) => h.doc.id)).toEqual(expected);
      }),
      { seed, numRuns: 300 },
    );
  });
});
