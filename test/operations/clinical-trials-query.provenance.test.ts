/**
 * Issue 23: where a clinical database came from decides whether it is sold as the $99 snapshot,
 * and what the operation says (and does) when the loaded database is of an older layout.
 */
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import pino from "pino";
import { afterAll, describe, expect, it } from "vitest";
import type { Config } from "../../src/config.ts";
import { closeAfterWriting, openForWriting } from "../../src/operations/clinical-trials-query/database.ts";
import { clinicalTrialsQuery } from "../../src/operations/clinical-trials-query/index.ts";
import { type ApiIngestOptions, ingestFromApi } from "../../src/operations/clinical-trials-query/ingest.ts";
import { buildSampleDatabase, SAMPLE_DIR } from "../../src/operations/clinical-trials-query/sample.ts";
import type { StudyRecord } from "../../src/operations/clinical-trials-query/summary.ts";
import { Problem } from "../../src/problem.ts";
import { clinicalSnapshot } from "../../src/products/clinical-snapshot.ts";
import { syntheticStudies } from "../helpers/synthetic-trials.ts";

const dirs: string[] = [];
const temp = () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "utility402-trials-provenance-"));
  dirs.push(dir);
  return dir;
};
afterAll(() => {
  for (const dir of dirs) fs.rmSync(dir, { recursive: true, force: true });
});

const records: StudyRecord[] = fs
  .readdirSync(SAMPLE_DIR)
  .filter((name) => name.endsWith(".json"))
  .sort()
  .map((name) => JSON.parse(fs.readFileSync(path.join(SAMPLE_DIR, name), "utf8")) as StudyRecord);

/** A registry stand-in as a fetch: every study on one page, and the count for the count requests. */
const serving = (studies: StudyRecord[]) =>
  (async () => Response.json({ studies, totalCount: studies.length })) as unknown as typeof fetch;

async function fullIngest(studies: StudyRecord[], options: Partial<ApiIngestOptions>): Promise<string> {
  const file = path.join(temp(), "trials.sqlite");
  const db = openForWriting(file);
  try {
    await ingestFromApi(db, {
      apiUrl: "http://registry.test/api/v2/studies",
      pageSize: 1000,
      intervalMs: 0,
      retries: 0,
      fetch: serving(studies),
      now: () => new Date("2026-11-01T08:00:00Z"),
      ...options,
    });
  } finally {
    closeAfterWriting(db);
  }
  return file;
}

const build = (file: string) => clinicalSnapshot(file, temp(), path.join(temp(), "no-dictionary.md"));
const validationOf = (result: ReturnType<typeof clinicalSnapshot>) => {
  if ("unbuildable" in result) throw new Error(result.unbuildable);
  const entry = result.entries.find((e) => e.path === "validation.json");
  return JSON.parse(String(entry && "data" in entry ? entry.data : "{}"));
};

describe("the clinical snapshot product and its source", () => {
  const started2020 = [
    ...syntheticStudies(
      records.filter((r) => r.resultsSection),
      6,
      7,
    ),
  ];

  it("a complete ingest from a URL that is not the registry is not sold", async () => {
    const file = await fullIngest(started2020, {});
    const result = build(file);
    expect(result).toEqual({
      unbuildable:
        "the clinical database was ingested from http://registry.test/api/v2/studies, not the ClinicalTrials.gov registry: " +
        "ingest from the registry, or re-run the ingest with --allow-other-source to sell it from this source explicitly",
    });
  });

  it("it is sold when the operator said so at ingest time, and the validation report says so", async () => {
    const file = await fullIngest(started2020, { allowOtherSource: true });
    const validation = validationOf(build(file));
    expect(validation.provenance).toEqual({
      sourceUrl: "http://registry.test/api/v2/studies",
      registry: false,
      otherSourceAllowedByOperator: true,
      selectionRule: "start-date",
      ruleCounts: { "start-date": 6, "results-first-posted": 6 },
      skippedRecords: 0,
      ingestStartedAt: expect.stringMatching(/^\d{4}-\d{2}-\d{2}T/),
    });
  });

  it("an ingest of the registry's URL is sold without a word from the operator", async () => {
    const file = await fullIngest(started2020, { apiUrl: "https://clinicaltrials.gov/api/v2/studies" });
    expect(validationOf(build(file)).provenance).toMatchObject({
      sourceUrl: "https://clinicaltrials.gov/api/v2/studies",
      registry: true,
      otherSourceAllowedByOperator: false,
    });
  });

  it("the product checks the rule the ingest used: results first posted from 2020 on, whatever the start", async () => {
    const posted = records.filter(
      (r) => (r.protocolSection?.statusModule?.resultsFirstPostDateStruct?.date ?? "") >= "2020",
    );
    expect(posted).toHaveLength(4);
    const file = await fullIngest(posted, {
      apiUrl: "https://clinicaltrials.gov/api/v2/studies",
      rule: "results-first-posted",
    });
    const validation = validationOf(build(file));
    expect(validation.checks).toContainEqual({
      check: "every study had results first posted on or after 2020-01-01 (rule results-first-posted)",
      expected: "0 studies before",
      actual: "0 studies before",
      ok: true,
    });
    // The same records under the start-date rule fail that rule's check: none started in 2020 or later.
    const byStart = await fullIngest(posted, { apiUrl: "https://clinicaltrials.gov/api/v2/studies" });
    expect(() => build(byStart)).toThrow(/every study started on or after 2020-01-01 \(rule start-date\)/);
  });
});

describe("the operation on a database of an older layout", () => {
  const log = pino({ level: "silent" });
  const start = (file: string) =>
    // biome-ignore lint/style/noNonNullAssertion: the operation declares start.
    clinicalTrialsQuery.start!({
      config: { clinicalTrials: { dbPath: file } } as Config,
      log,
      now: () => new Date(),
      store: undefined as never,
    });

  const makeStale = (file: string) => {
    const db = openForWriting(file);
    db.pragma("user_version = 0");
    closeAfterWriting(db);
  };

  it("the bundled sample it built itself is rebuilt in the current layout", async () => {
    const file = path.join(temp(), "trials.sqlite");
    buildSampleDatabase(file);
    makeStale(file);
    const started = await start(file);
    try {
      expect(started.available).not.toBe(false);
      const { body } = await started.handle(
        { nctId: "NCT03064438", includeSecondary: false, limit: 1 } as never,
        {} as never,
      );
      expect(
        (body as { items: { primaryOutcomes: { denominators: unknown[] }[] }[] }).items[0]?.primaryOutcomes[0]
          ?.denominators,
      ).toHaveLength(2);
    } finally {
      await started.close?.();
    }
  });

  it("any other database is refused with a 503 before payment, and every description says so", async () => {
    const file = await fullIngest(records.slice(1, 2), {
      apiUrl: "https://clinicaltrials.gov/api/v2/studies",
    });
    makeStale(file);
    const started = await start(file);
    expect(started.available).toBe(false);
    expect(started.unavailableNow?.()).toMatch(
      /older version of the ingest \(schema 0, this service reads 3\): rebuild it/,
    );
    expect(started.describe?.summary).toMatch(/not available \(the database must be rebuilt\)/);
    const refused = await started.admit?.().catch((error: unknown) => error);
    expect(refused).toBeInstanceOf(Problem);
    expect((refused as Problem).status).toBe(503);
    await expect(started.handle({} as never, {} as never)).rejects.toBeInstanceOf(Problem);
  });
});
