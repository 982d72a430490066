/**
 * humanoid-fmea-query: what one query costs in the handler (validation of the body, filters, BM25
 * ranking, facets, paging) and what loading the catalogue costs at start-up (read, schema check of
 * the 96 entries, index build). Side by side: each text query against the filter-only query on the
 * same machine in the same run. Run: npx tsx bench/humanoid-fmea-query.bench.ts
 */
import fs from "node:fs";
import { CATALOGUE_URL, parseCatalogue } from "../src/operations/humanoid-fmea-query/catalogue.ts";
import { CATALOGUE, FmeaCatalogue, type FmeaQuery } from "../src/operations/humanoid-fmea-query/query.ts";
import { HumanoidFmeaQueryRequest } from "../src/operations/humanoid-fmea-query/schema.ts";
import { type BenchRow, report, timePerRun } from "./lib.ts";

const ITERATIONS = 2_000;

const queries: Record<string, Record<string, unknown>> = {
  "no filter (first 20)": {},
  "filters only": { minSeverity: 8, actionPriority: "H", standard: "ISO 25785-1", limit: 96 },
  "text, 4 words": { text: "fall on power loss" },
  "text, 20 words": {
    text:
      "robot falls onto a person after the battery management system cuts power while walking down " +
      "stairs carrying a payload near workers",
  },
  "text + filters, all 96": {
    text: "emergency stop",
    subsystem: "safety-control",
    minSeverity: 9,
    limit: 96,
  },
};

const run = (body: Record<string, unknown>) =>
  CATALOGUE.query(HumanoidFmeaQueryRequest.parse(body) as FmeaQuery);

// Every query is timed once to warm up, then again for the table; ratios are to the filter-only query.
const time = (body: Record<string, unknown>) => timePerRun(() => run(body), ITERATIONS);
for (const body of Object.values(queries)) time(body);
const measured = Object.entries(queries).map(([name, body]) => ({ name, body, ms: time(body) }));
const baseline = measured.find((m) => m.name === "filters only")?.ms as number;
const rows: BenchRow[] = measured.map(({ name, body, ms }) => {
  const result = run(body);
  return {
    query: name,
    "µs per query": Math.round(ms * 1000),
    "× filters only": Number((ms / baseline).toFixed(2)),
    total: result.total,
    count: result.count,
  };
});

const text = fs.readFileSync(CATALOGUE_URL, "utf8");
const loadMs = timePerRun(() => new FmeaCatalogue(parseCatalogue(JSON.parse(text))), 20, 5);
rows.push({
  query: "start-up: parse + check 96 entries + build index",
  "µs per query": Math.round(loadMs * 1000),
});

report("humanoid-fmea-query", rows, { iterations: ITERATIONS });
