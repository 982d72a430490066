/**
 * clinical-trials-query latency on a database the size of the full post-2020 snapshot (issue 5):
 * 38,638 SYNTHETIC studies generated from the five real records in data/clinical-trials-sample/
 * (new NCT numbers, titles, conditions, interventions, sponsors, phases, dates; results sections
 * as recorded), built in a temp dir and deleted afterwards. Each query runs as the handler runs
 * it (schema-parsed input → TrialsIndex.query, counting the total and parsing the page's
 * summaries). Target: p50 under 5 ms for a full-text query. Run: npx tsx bench/clinical-trials-query.bench.ts
 * (CLINICAL_TRIALS_BENCH_DB=path keeps the generated database there and reuses it on the next run).
 */
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import {
  closeAfterWriting,
  openForReading,
  openForWriting,
  StudyWriter,
  writeMeta,
} from "../src/operations/clinical-trials-query/database.ts";
import { TrialsIndex } from "../src/operations/clinical-trials-query/query.ts";
import { SAMPLE_DIR } from "../src/operations/clinical-trials-query/sample.ts";
import { ClinicalTrialsQueryRequest } from "../src/operations/clinical-trials-query/schema.ts";
import type { StudyRecord } from "../src/operations/clinical-trials-query/summary.ts";
import { syntheticStudies } from "../test/helpers/synthetic-trials.ts";
import { type BenchRow, report } from "./lib.ts";

const STUDIES = 38_638;
const TARGET_P50_MS = 5;
const RUNS_PER_QUERY = 100;

const templates = fs
  .readdirSync(SAMPLE_DIR)
  .filter((name) => name.endsWith(".json"))
  .map((name) => JSON.parse(fs.readFileSync(path.join(SAMPLE_DIR, name), "utf8")) as StudyRecord);

const kept = process.env.CLINICAL_TRIALS_BENCH_DB;
const dir = kept ? null : fs.mkdtempSync(path.join(os.tmpdir(), "utility402-trials-bench-"));
const file = kept ?? path.join(dir as string, "clinical-trials-synthetic.sqlite");

function build() {
  const buildStart = process.hrtime.bigint();
  const db = openForWriting(file);
  const writer = new StudyWriter(db);
  const batch: StudyRecord[] = [];
  const flush = db.transaction((studies: StudyRecord[]) => {
    for (const study of studies) writer.write(study);
  });
  for (const study of syntheticStudies(templates, STUDIES)) {
    batch.push(study);
    if (batch.length === 1000) flush(batch.splice(0));
  }
  flush(batch.splice(0));
  const meta = writeMeta(db, {
    kind: "sample",
    snapshotDate: new Date().toISOString().slice(0, 10),
    snapshotDateBasis: "ingest-clock",
    source: `SYNTHETIC benchmark data: ${STUDIES} records generated from the five sample records`,
  });
  db.pragma("optimize");
  closeAfterWriting(db);
  const buildSeconds = Number(process.hrtime.bigint() - buildStart) / 1e9;
  const sizeMb = fs.statSync(file).size / 1e6;
  console.log(
    `built ${meta.studies} synthetic studies (${meta.endpoints} endpoints, ${meta.measurements} measurements, ` +
      `${meta.analyses} analyses) in ${buildSeconds.toFixed(1)} s, ${sizeMb.toFixed(0)} MB`,
  );
  return { buildSeconds, sizeMb };
}

try {
  const { buildSeconds, sizeMb } =
    kept && fs.existsSync(kept) ? { buildSeconds: 0, sizeMb: fs.statSync(kept).size / 1e6 } : build();

  const reader = openForReading(file);
  const index = new TrialsIndex(reader);

  const fullText = [
    "semaglutide",
    "type 2 diabetes",
    "pembrolizumab lung cancer",
    "atopic dermatitis dupilumab",
    "heart failure",
    "vaccine",
    "psilocybin depressive",
    "mayo clinic migraine",
    "ulcerative colitis",
    "sickle cell",
  ];
  const workloads: { name: string; inputs: unknown[]; fullText: boolean }[] = [
    {
      name: "full-text, 10 queries (1-3 words)",
      inputs: fullText.map((query) => ({ query })),
      fullText: true,
    },
    {
      name: "full-text + filters (phase, minEnrollment)",
      inputs: fullText.map((query) => ({ query, phase: "PHASE3", minEnrollment: 200 })),
      fullText: true,
    },
    { name: "full-text, very common word (placebo)", inputs: [{ query: "placebo" }], fullText: true },
    {
      name: "condition phrase + started after",
      inputs: [
        { condition: "breast cancer", startedAfter: "2022-01-01" },
        { condition: "asthma" },
        { intervention: "nivolumab", limit: 50 },
      ],
      fullText: false,
    },
    {
      name: "no text: phase + enrollment, newest first",
      inputs: [{ phase: "PHASE2", minEnrollment: 500 }, {}],
      fullText: false,
    },
  ];

  // Second pages: the cursor of each full-text query's first page.
  const secondPages = fullText.map((query) => {
    const first = index.query(ClinicalTrialsQueryRequest.parse({ query }));
    return { query, cursor: first.nextCursor };
  });
  workloads.push({ name: "full-text, second page (cursor)", inputs: secondPages, fullText: true });

  const percentile = (sorted: number[], p: number) =>
    sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)] as number;
  const rows: BenchRow[] = [];
  for (const workload of workloads) {
    const parsed = workload.inputs.map((input) => ClinicalTrialsQueryRequest.parse(input));
    for (const input of parsed) index.query(input); // warm-up: statements prepared, pages cached
    const samples: number[] = [];
    let matches = 0;
    for (let run = 0; run < RUNS_PER_QUERY; run++) {
      for (const input of parsed) {
        const start = process.hrtime.bigint();
        const output = index.query(input);
        samples.push(Number(process.hrtime.bigint() - start) / 1e6);
        if (run === 0) matches += output.total;
      }
    }
    samples.sort((a, b) => a - b);
    rows.push({
      workload: workload.name,
      calls: samples.length,
      "avg matches": Math.round(matches / parsed.length),
      "p50 ms": Number(percentile(samples, 50).toFixed(3)),
      "p99 ms": Number(percentile(samples, 99).toFixed(3)),
      target: workload.fullText ? `p50 < ${TARGET_P50_MS} ms` : "",
    });
  }
  reader.close();
  const meta = index.dataset;
  report("clinical-trials-query", rows, {
    data: `SYNTHETIC: ${meta.studies} studies generated from the five sample records (bench only, never shipped)`,
    dataset: { ...meta, kind: "synthetic" },
    databaseMb: Number(sizeMb.toFixed(1)),
    ...(buildSeconds > 0 ? { buildSeconds: Number(buildSeconds.toFixed(1)) } : {}),
    machine: `${os.cpus().length} × ${os.cpus()[0]?.model ?? "cpu"}`,
    // Other work on the machine inflates the latencies, the p99s most: say how busy it was.
    loadAverageAtEnd: os.loadavg().map((load) => Number(load.toFixed(2))),
  });
} finally {
  if (dir) fs.rmSync(dir, { recursive: true, force: true });
}
