/**
 * research-brief grounding check (issue 15): the cost per brief of checking every sentence's figures,
 * years and names against the sources it cites (groundAnswer), against the citation check that ran
 * alone before (verifyCitations), in the same run. The brief: five sources (four recorded Wikipedia
 * plain-text extracts, 1–39k characters each, and a short web article), and an 800-word answer
 * (the default maxWords) of sentences taken from those sources with their [n], a few of them
 * citing the wrong source or stating a figure no source gives, as a model's answer would.
 * Run: npx tsx bench/research-grounding.bench.ts (writes bench/results/research-grounding.json).
 */
import fs from "node:fs";
import { verifyCitations } from "../src/operations/research-brief/citations.ts";
import { extractiveAnswer } from "../src/operations/research-brief/extractive.ts";
import { groundAnswer } from "../src/operations/research-brief/grounding.ts";
import { countWords, sentences } from "../src/operations/research-brief/text.ts";
import { type BenchRow, report, timePerRun } from "./lib.ts";

const ROUNDS = 7;
const ITERATIONS = 20;
const MAX_WORDS = 800;

const extract = (file: string) => {
  const body = JSON.parse(
    fs.readFileSync(new URL(`../test/fixtures/research/${file}`, import.meta.url), "utf8"),
  ) as { query: { pages: Record<string, { title: string; extract: string }> } };
  const page = Object.values(body.query.pages)[0] as { title: string; extract: string };
  return { title: page.title, text: page.extract };
};

const sources = [
  {
    ...extract("mediawiki-extracts-01.json"),
    url: "https://en.wikipedia.org/wiki/Python_(programming_language)",
  },
  { ...extract("mediawiki-extracts-03.json"), url: "https://en.wikipedia.org/wiki/Area" },
  { ...extract("mediawiki-extracts-02.json"), url: "https://en.wikipedia.org/wiki/Physics" },
  {
    ...extract("mediawiki-extracts-04.json"),
    url: "https://en.wikipedia.org/wiki/2005_Azores_subtropical_storm",
  },
  {
    title: "Winter practice for electric fleets",
    url: "https://fleet.example/winter",
    text:
      "Fleet operators limit cold-weather capacity loss by preconditioning batteries while vehicles are still plugged in. " +
      "At minus 20 degrees Celsius a typical cell delivers 60 to 70 percent of its rated capacity. " +
      "Parking vehicles indoors keeps cells several degrees warmer overnight and reduces the morning range penalty by about 10 %.",
  },
].map((source, index) => ({ n: index + 1, ...source }));

// An 800-word answer: sentences of 8–40 words from each source in turn, cited; every seventh cites
// the next source instead (its figures are then not in the source it cites), and two state
// figures and names that no source gives.
const pools = sources.map((source) =>
  source.text
    .split(/\n+/)
    .flatMap(sentences)
    .filter((sentence) => /[.!?]$/.test(sentence) && countWords(sentence) >= 8 && countWords(sentence) <= 40),
);
const lines: string[] = [];
let words = 0;
for (let i = 0; words < MAX_WORDS - 60; i++) {
  const n = (i % sources.length) + 1;
  const pool = pools[n - 1] as string[];
  const sentence = pool[Math.floor(i / sources.length) % pool.length] as string;
  const cited = i % 7 === 6 ? (n % sources.length) + 1 : n;
  lines.push(`${sentence.replace(/[.!?]$/, "")} [${cited}].`);
  words += countWords(sentence);
}
lines.push(
  "The WHO recommends 10,000 steps a day [3].",
  "In 2023 the European Battery Alliance counted 4.2 million vans [5].",
);
const answer = lines.map((line, index) => (index % 4 === 3 ? `${line}\n` : line)).join(" ");

const citations = verifyCitations(answer, sources);
const grounded = groundAnswer(answer, sources, "How do the sources compare?");
const removed = grounded.unsupported.length + grounded.uncited.length;
if (removed === 0)
  throw new Error("the grounding check removed nothing from an answer with unsupported sentences");

const measured: Record<string, () => unknown> = {
  "citation check alone (verifyCitations)": () => verifyCitations(answer, sources),
  "grounding check (groundAnswer)": () => groundAnswer(answer, sources, "How do the sources compare?"),
  "both checks, as the pipeline runs them": () =>
    groundAnswer(verifyCitations(answer, sources).text, sources, "How do the sources compare?"),
  "extractive brief of the same sources (no model)": () =>
    extractiveAnswer("How do the sources compare?", undefined, sources, MAX_WORDS),
};

// Interleaved rounds on a shared, noisy machine: ratios per round, then the median.
const times = new Map<string, number[]>(Object.keys(measured).map((name) => [name, []]));
for (let round = 0; round < ROUNDS; round++) {
  for (const [name, fn] of Object.entries(measured)) times.get(name)?.push(timePerRun(fn, ITERATIONS));
}
const median = (values: number[]) =>
  [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)] as number;
const baseline = times.get("citation check alone (verifyCitations)") as number[];
const rows: BenchRow[] = Object.keys(measured).map((name) => {
  const series = times.get(name) as number[];
  return {
    measure: name,
    "median ms per brief": Number(median(series).toFixed(3)),
    "× citation check": Number(
      median(series.map((value, round) => value / (baseline[round] as number))).toFixed(2),
    ),
  };
});

const groundingMs = rows[1]?.["median ms per brief"] as number;
const ratio = rows[1]?.["× citation check"] as number;
report("research-grounding", rows, {
  command: "npx tsx bench/research-grounding.bench.ts",
  brief: {
    sources: sources.length,
    sourceCharacters: sources.map((source) => source.text.length),
    answerWords: countWords(answer),
    answerSentences: lines.length,
    citationsRemoved: citations.removed.length,
    sentencesRemovedByGrounding: removed,
  },
  rounds: ROUNDS,
  iterationsPerBatch: ITERATIONS,
  ratio,
  note:
    `The grounding check costs ${groundingMs} ms per 800-word brief over ${sources.length} sources ` +
    `(${ratio}x the citation check alone): it reads each cited source once for its numbers, acronyms ` +
    "and capitalised names, then checks each sentence against the sources it cites. Next to a USD 5.00 " +
    "brief that waits seconds for search, pages and a model, it is negligible.",
});
console.log(`grounding / citation check = ${ratio}; ${groundingMs} ms per brief`);
