import fs from "node:fs";
import { defineOperation } from "../../contract/operation.ts";
import type { OperationEnvironment } from "../../operation-environment.ts";
import { Problem } from "../../problem.ts";
import { openForReading, StaleDatabaseError, type TrialsDatabase } from "./database.ts";
import { describeOperation } from "./dataset.ts";
import { TrialsIndex } from "./query.ts";
import { buildSampleDatabase } from "./sample.ts";
import {
  type ClinicalTrialsQueryInput,
  type ClinicalTrialsQueryOutput,
  ClinicalTrialsQueryRequest,
  ClinicalTrialsQueryResponse,
} from "./schema.ts";

export const clinicalTrialsQuery = defineOperation<
  ClinicalTrialsQueryInput,
  ClinicalTrialsQueryOutput,
  OperationEnvironment
>({
  id: "clinical-trials-query",
  method: "POST",
  path: "/v1/clinical-trials-query",
  priceUsd: "0.05",
  kind: "sync",
  // What a running service says is computed from the database it loaded (see start: `describe`);
  // this is what is said without one (the documents built with no service behind them).
  summary:
    "Query trial-level clinical results summaries (the loaded dataset is named by the running service)",
  description:
    "Full-text search (SQLite FTS5, BM25-ranked) and filters (NCT number, condition, intervention, phase, " +
    "sponsor, start and completion dates, minimum enrollment) over trial-level results summaries of " +
    "ClinicalTrials.gov studies with results, from the database the service loaded: out of the box the " +
    "bundled sample of 5 studies, after a full ingest the registry's studies with results from 2020 on. " +
    "Endpoint, measurement and analysis counts (counted as AACT does), primary outcomes (secondary and " +
    "other outcomes with `includeSecondary`) with the number analysed per group, measurements, units and " +
    'analyses (p-values parsed from text such as "<0.001", raw text kept), adverse-event totals per group ' +
    "and the registry link. Pages of up to 50 with an opaque `nextCursor`. Every response carries the " +
    "dataset's kind, totals, source and snapshot date, counted from the loaded database.",
  tags: ["health"],
  inputFrom: "body",
  input: ClinicalTrialsQueryRequest,
  output: ClinicalTrialsQueryResponse,
  outputContentType: "application/json",
  example: { input: { query: "atopic dermatitis", phase: "PHASE2", limit: 5 } },
  errorResponses: [],
  start: async ({ config, log }) => {
    const file = config.clinicalTrials.dbPath;
    if (!fs.existsSync(file)) {
      buildSampleDatabase(file);
      log.info({ file }, "clinical-trials-query: no database yet; built the sample from the bundled records");
    }
    let db: TrialsDatabase;
    try {
      db = openForReading(file);
    } catch (error) {
      if (!(error instanceof StaleDatabaseError)) throw error;
      if (!isBundledSample(error.meta)) {
        // Rows of an older layout lack what the answers now carry: refused before any payment until rebuilt.
        log.error({ file, err: error }, "clinical-trials-query: the database must be rebuilt");
        return staleDatabase(error.message);
      }
      // The sample the service built itself is rebuilt from the shipped records, as at first start.
      buildSampleDatabase(file);
      log.info({ file }, "clinical-trials-query: rebuilt the bundled sample in the current layout");
      db = openForReading(file);
    }
    const index = new TrialsIndex(db);
    const { dataset } = index;
    log.info({ file, ...dataset }, "clinical-trials-query: database loaded");
    return {
      handle: async (input) => ({ body: index.query(input) }),
      describe: describeOperation(dataset),
      catalogDetails: { dataset },
      probe: async () => `ok (${dataset.kind}: ${dataset.studies} studies, snapshot ${dataset.snapshotDate})`,
      close: async () => {
        db.close();
      },
    };
  },
});

/** A database the service built from the shipped records (an older layout of it is rebuilt, not refused). */
function isBundledSample(meta: Record<string, string>): boolean {
  return meta.kind === "sample" && (meta.source ?? "").endsWith("(clinical-trials-sample)");
}

/** An operation bound to a database it cannot read: every call is a 503 before any payment. */
function staleDatabase(reason: string) {
  const refuse = async (): Promise<never> => {
    throw Problem.of("dataset-unavailable", `${reason}; no payment was taken`);
  };
  return {
    available: false,
    catalogDetails: { dataset: null, unavailable: reason },
    unavailableNow: () => reason,
    describe: {
      summary: "Query trial-level clinical results summaries: not available (the database must be rebuilt)",
    },
    admit: refuse,
    handle: refuse,
    probe: async (): Promise<string> => {
      throw new Error(reason);
    },
  };
}
