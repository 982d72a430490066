import { describe, expect, it } from "vitest";
import { Bm25Index, stem, tokenize } from "./search.ts";

describe("tokenize and stem", () => {
  it("lower-cases, drops stop words and punctuation, and folds simple inflections together", () => {
    expect(tokenize("The robot FALLS onto a person")).toEqual(["robot", "fall", "onto", "person"]);
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
    for (const phrase of ["finger trap", "crush", "crushing", "pinching"])
      expect(tokenize(phrase, "query"), phrase).toEqual(["pinch"]);
    for (const phrase of [
      "LLM",
      "VLA",
      "foundation model",
      "large language models",
      "vision-language-action model",
    ])
      expect(tokenize(phrase, "query"), phrase).toEqual(["foundationmodel"]);
    expect(tokenize("robot tips over", "query")).toEqual(["robot", "tipover"]);
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

  it("keeps only the documents with the most query terms: all of them when any document has them all", () => {
    // "battery fire": a has both; b has only battery, c and d only fire.
    expect(index.search("battery fire").map((h) => h.doc.id)).toEqual(["a"]);
    // "battery door": no document has both, so every document with one of them, best first.
    expect(
      index
        .search("battery door")
        .map((h) => h.doc.id)
        .sort(),
    ).toEqual(["a", "b", "c", "d"]);
    // The level is taken among the documents the filter keeps.
    expect(
      index
        .search("battery fire", (d) => d.id !== "a")
        .map((h) => h.doc.id)
        .sort(),
    ).toEqual(["b", "c", "d"]);
    // With 4 or more terms a document may miss ⌊n/4⌋ of the best match's terms; more terms rank first.
    // "battery fire cells gear": a has 3 (battery, fire, cells), b has 2 (battery, gear), c and d 1.
    expect(index.search("battery fire cells gear").map((h) => h.doc.id)).toEqual(["a", "b"]);
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
