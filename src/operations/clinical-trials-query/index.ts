import fs from "node:fs";
import { defineOperation } from "../../catalog/operation.ts";
import { openForReading } from "./database.ts";
import { TrialsIndex } from "./query.ts";
import { buildSampleDatabase } from "./sample.ts";
import {
  type ClinicalTrialsQueryInput,
  type ClinicalTrialsQueryOutput,
  ClinicalTrialsQueryRequest,
  ClinicalTrialsQueryResponse,
} from "./schema.ts";

export const clinicalTrialsQuery = defineOperation<ClinicalTrialsQueryInput, ClinicalTrialsQueryOutput>({
  id: "clinical-trials-query",
  method: "POST",
  path: "/v1/clinical-trials-query",
  priceUsd: "0.05",
  kind: "sync",
  summary: "Query trial-level clinical results summaries",
  description:
    "Full-text search (SQLite FTS5, BM25-ranked) and filters (NCT number, condition, intervention, phase, " +
    "sponsor, start and completion dates, minimum enrollment) over trial-level results summaries of " +
    "ClinicalTrials.gov studies with results started on or after 2020-01-01: endpoint, measurement and " +
    "analysis counts (counted as AACT does), primary outcomes with measurements, units and analyses " +
    '(p-values parsed from text such as "<0.001", raw text kept), adverse-event totals per group and the ' +
    "registry link. Pages of up to 50 with an opaque `nextCursor`. Every response carries the dataset's " +
    "totals and snapshot date, counted from the loaded database, and says whether it is the bundled sample.",
  tags: ["health"],
  inputFrom: "body",
  input: ClinicalTrialsQueryRequest,
  output: ClinicalTrialsQueryResponse,
  outputContentType: "application/json",
  example: { input: { query: "atopic dermatitis", phase: "PHASE2", limit: 5 } },
  errorResponses: [],
  start: async ({ config, log }) => {
    const file = config.clinicalTrialsDb;
    if (!fs.existsSync(file)) {
      buildSampleDatabase(file);
      log.info({ file }, "clinical-trials-query: no database yet; built the sample from the bundled records");
    }
    const db = openForReading(file);
    const index = new TrialsIndex(db);
    const { dataset } = index;
    log.info({ file, ...dataset }, "clinical-trials-query: database loaded");
    return {
      handle: async (input) => ({ body: index.query(input) }),
      catalogDetails: { dataset },
      probe: async () => `ok (${dataset.kind}: ${dataset.studies} studies, snapshot ${dataset.snapshotDate})`,
      close: async () => {
        db.close();
      },
    };
  },
});
