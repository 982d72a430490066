import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import Database from "better-sqlite3";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  closeAfterWriting,
  openForReading,
  openForWriting,
  StudyWriter,
  type TrialsDatabase,
} from "../../src/operations/clinical-trials-query/database.ts";
import { ingestFromDirectory } from "../../src/operations/clinical-trials-query/ingest.ts";
import { TrialsIndex } from "../../src/operations/clinical-trials-query/query.ts";
import { SAMPLE_DIR } from "../../src/operations/clinical-trials-query/sample.ts";
import {
  type ClinicalTrialsQueryOutput,
  ClinicalTrialsQueryRequest,
  ClinicalTrialsQueryResponse,
} from "../../src/operations/clinical-trials-query/schema.ts";
import { sortableDate } from "../../src/operations/clinical-trials-query/summary.ts";
import { syntheticStudies } from "../helpers/synthetic-trials.ts";

// Raw registry JSON, read here to compute the expected answers without the ingest's code.
type Raw = any;

const rawStudies: Raw[] = fs
  .readdirSync(SAMPLE_DIR)
  .filter((name) => name.endsWith(".json"))
  .map((name) => JSON.parse(fs.readFileSync(path.join(SAMPLE_DIR, name), "utf8")));
const idOf = (study: Raw) => study.protocolSection.identificationModule.nctId as string;

const dirs: string[] = [];
const databases: TrialsDatabase[] = [];
afterAll(() => {
  for (const db of databases) db.close();
  for (const dir of dirs) fs.rmSync(dir, { recursive: true, force: true });
});

function buildDatabase(extraStudies: Raw[] = []): { index: TrialsIndex; file: string } {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "utility402-trials-query-"));
  dirs.push(dir);
  const file = path.join(dir, "trials.sqlite");
  const db = openForWriting(file);
  ingestFromDirectory(db, SAMPLE_DIR);
  if (extraStudies.length > 0) {
    const extra = path.join(dir, "extra");
    fs.mkdirSync(extra);
    fs.writeFileSync(path.join(extra, "page.json"), JSON.stringify({ studies: extraStudies }));
    ingestFromDirectory(db, extra);
  }
  closeAfterWriting(db);
  const reader = openForReading(file);
  databases.push(reader);
  return { index: new TrialsIndex(reader), file };
}

const parse = (input: unknown) => ClinicalTrialsQueryRequest.parse(input);
const ids = (output: ClinicalTrialsQueryOutput) => output.items.map((item) => item.nctId);
/** Newest start first, then NCT number: the order of every query without `query`. */
const byStartDesc = (a: Raw, b: Raw) => {
  const day = (s: Raw) => sortableDate(s.protocolSection.statusModule.startDateStruct?.date ?? null) ?? "";
  return day(b).localeCompare(day(a)) || idOf(a).localeCompare(idOf(b));
};
const expectedIds = (keep: (study: Raw) => boolean) => rawStudies.filter(keep).sort(byStartDesc).map(idOf);

describe("clinical-trials-query filters (the five sample records)", () => {
  let index: TrialsIndex;
  const query = (input: unknown) => index.query(parse(input));

  beforeAll(() => {
    index = buildDatabase().index;
  });

  it("no filter: every study, newest start first, with the dataset totals", () => {
    const output = query({});
    expect(ids(output)).toEqual(expectedIds(() => true));
    expect(output).toMatchObject({ count: 5, total: 5, nextCursor: null });
    expect(output.dataset).toEqual({
      kind: "sample",
      sample: true,
      snapshotDate: "2023-11-15",
      snapshotDateBasis: "record-as-of",
      snapshotDateMeaning:
        "the oldest registry copy among the loaded records (ClinicalTrials.gov versionHolder): every record is at least this current; each study's recordVersion.asOf is the day of the registry's data its copy reflects (here 2023-11-15 to 2024-06-10)",
      recordsAsOf: { oldest: "2023-11-15", newest: "2024-06-10" },
      studies: 5,
      endpoints: 63,
      measurements: 230,
      analyses: 41,
      source: "folder of ClinicalTrials.gov API v2 study records (clinical-trials-sample)",
      sourceUrl: null,
      registry: false,
      selectionRule: null,
      ruleCounts: null,
      skippedRecords: 0,
      description:
        "a sample of 5 studies (63 endpoints, 230 measurements, 41 analyses; a sample loaded from a folder of study records, not the full index), as of 2023-11-15 (registry copies of 2023-11-15 to 2024-06-10)",
    });
  });

  it("nctId", () => {
    expect(ids(query({ nctId: "NCT03064438" }))).toEqual(["NCT03064438"]);
    expect(query({ nctId: "NCT99999999" })).toMatchObject({
      count: 0,
      total: 0,
      items: [],
      nextCursor: null,
    });
  });

  it("condition: the words as a phrase in a condition or keyword, any case", () => {
    expect(ids(query({ condition: "atopic dermatitis" }))).toEqual(["NCT02210780"]);
    expect(ids(query({ condition: "DERMATITIS" }))).toEqual(["NCT02210780"]);
    expect(ids(query({ condition: "dermatitis atopic" }))).toEqual([]);
    // "Lung function" is a keyword of NCT00763412, not a condition.
    expect(ids(query({ condition: "lung function" }))).toEqual(["NCT00763412"]);
    expect(ids(query({ condition: "spondyloarthritis" }))).toEqual(["NCT02552212"]);
  });

  it("condition and intervention phrases stay within one condition or one name (issue 23)", () => {
    // NCT02552212's conditions: "Axial Spondyloarthritis", "Nonradiographic Axial Spondyloarthritis", "Nr-axSpA".
    expect(ids(query({ condition: "nonradiographic axial spondyloarthritis" }))).toEqual(["NCT02552212"]);
    expect(ids(query({ condition: "spondyloarthritis nonradiographic" }))).toEqual([]);
    expect(ids(query({ condition: "spondyloarthritis nr axspa" }))).toEqual([]);
    expect(ids(query({ condition: "nr axspa" }))).toEqual(["NCT02552212"]);
    // Its interventions: "Certolizumab Pegol", then "Placebo".
    expect(ids(query({ intervention: "certolizumab pegol" }))).toEqual(["NCT02552212"]);
    expect(ids(query({ intervention: "pegol placebo" }))).toEqual([]);
    // Free text still finds every word anywhere.
    expect(ids(query({ query: "spondyloarthritis nonradiographic" }))).toEqual(["NCT02552212"]);
  });

  it("nctId in any case; secondary outcomes only on request, with N per group (issue 23)", () => {
    const output = query({ nctId: "nct03064438" });
    expect(ids(output)).toEqual(["NCT03064438"]);
    const [item] = output.items;
    expect(item?.secondaryOutcomes).toBeUndefined();
    expect(item?.otherOutcomes).toBeUndefined();
    expect(item?.primaryOutcomes[0]?.denominators.map((d) => d.n)).toEqual([26, 11]);
    expect(item?.primaryOutcomes[0]?.analyses[0]).toMatchObject({
      dispersionType: "STANDARD_ERROR_OF_MEAN",
      dispersionValue: "1.95",
      ciNumSides: "TWO_SIDED",
    });
    const [full] = query({ nctId: "NCT03064438", includeSecondary: true }).items;
    expect(full?.secondaryOutcomes).toHaveLength(7);
    expect(full?.otherOutcomes).toHaveLength(2);
    expect(full?.secondaryOutcomes?.[0]?.denominators.map((d) => d.n)).toEqual([27, 13]);
    // The answer is what the response schema says it is.
    expect(ClinicalTrialsQueryResponse.safeParse(query({ includeSecondary: true, limit: 50 })).success).toBe(
      true,
    );
    expect(ClinicalTrialsQueryResponse.safeParse(query({ limit: 50 })).success).toBe(true);
  });

  it("intervention: names and other names", () => {
    const named = (word: string) => (study: Raw) =>
      (study.protocolSection.armsInterventionsModule.interventions as Raw[]).some((intervention) =>
        [intervention.name, ...(intervention.otherNames ?? [])].some((name: string) =>
          name.toLowerCase().split(/\W+/).includes(word),
        ),
      );
    expect(ids(query({ intervention: "placebo" }))).toEqual(expectedIds(named("placebo")));
    expect(ids(query({ intervention: "Dupixent" }))).toEqual(["NCT02210780"]);
    expect(ids(query({ intervention: "certolizumab pegol" }))).toEqual(["NCT02552212"]);
  });

  it("phase: every registry value and the usual spellings", () => {
    for (const phase of ["EARLY_PHASE1", "PHASE1", "PHASE2", "PHASE3", "PHASE4", "NA"]) {
      expect(ids(query({ phase }))).toEqual(
        expectedIds((study) => (study.protocolSection.designModule.phases ?? []).includes(phase)),
      );
    }
    expect(ids(query({ phase: "Phase 2" }))).toEqual(ids(query({ phase: "PHASE2" })));
    expect(ids(query({ phase: "ii" }))).toEqual(ids(query({ phase: "PHASE2" })));
    expect(ids(query({ phase: "phase-3" }))).toEqual(["NCT02552212"]);
    expect(ids(query({ phase: "N/A" }))).toEqual(["NCT00763412"]);
    // NCT05594173 registers no phase: no phase filter finds it.
    expect(ids(query({ phase: "PHASE2" }))).not.toContain("NCT05594173");
  });

  it("sponsor: words of the lead sponsor", () => {
    expect(ids(query({ sponsor: "Regeneron" }))).toEqual(["NCT02210780"]);
    expect(ids(query({ sponsor: "university health network" }))).toEqual(["NCT05594173"]);
    // Sanofi collaborates on NCT02210780 but does not lead it.
    expect(ids(query({ sponsor: "sanofi" }))).toEqual([]);
  });

  it("startedAfter and completedBefore: inclusive, a month-only date as its first day", () => {
    const startDay = (study: Raw) => sortableDate(study.protocolSection.statusModule.startDateStruct?.date);
    const endDay = (study: Raw) =>
      sortableDate(study.protocolSection.statusModule.completionDateStruct?.date);
    for (const day of ["2000-01-01", "2014-08-05", "2014-08-06", "2015-09-01", "2019-09-13", "2025-01-01"]) {
      expect(ids(query({ startedAfter: day }))).toEqual(expectedIds((s) => (startDay(s) ?? "") >= day));
      expect(ids(query({ completedBefore: day }))).toEqual(
        expectedIds((s) => endDay(s) !== null && (endDay(s) as string) <= day),
      );
    }
    // NCT02552212 started "2015-09": on or after 2015-09-01, not after 2015-09-02.
    expect(ids(query({ startedAfter: "2015-09-01" }))).toContain("NCT02552212");
    expect(ids(query({ startedAfter: "2015-09-02" }))).not.toContain("NCT02552212");
  });

  it("minEnrollment", () => {
    for (const min of [0, 20, 21, 40, 100, 194, 195, 10_000]) {
      expect(ids(query({ minEnrollment: min }))).toEqual(
        expectedIds((s) => s.protocolSection.designModule.enrollmentInfo.count >= min),
      );
    }
  });

  it("query: every word must match, any column, ranked by BM25", () => {
    expect(ids(query({ query: "dupilumab tetanus" }))).toEqual(["NCT02210780"]);
    expect(ids(query({ query: "dupilumab rosacea" }))).toEqual([]);
    expect(ids(query({ query: "certolizumab" }))).toEqual(["NCT02552212"]);
    // Porter stemming: "lesions" finds "Lesion".
    expect(ids(query({ query: "lesions" }))).toContain("NCT03064438");
    // A word in the title outranks the same word only in outcome titles.
    const diabetes = ids(query({ query: "diabetes" }));
    expect(diabetes[0]).toBe("NCT00763412");
    // Text that looks like FTS5 syntax is read as words.
    expect(ids(query({ query: 'dupilumab" OR NEAR(x*' }))).toEqual([]);
    expect(ids(query({ query: "(placebo)" }))).toEqual(ids(query({ query: "placebo" })));
  });

  it("filters combine with AND", () => {
    expect(query({ query: "placebo", phase: "PHASE3" })).toMatchObject({ total: 1, count: 1 });
    expect(ids(query({ query: "placebo", phase: "PHASE3" }))).toEqual(["NCT02552212"]);
    expect(query({ query: "placebo", phase: "PHASE4" })).toMatchObject({ total: 0, count: 0, items: [] });
    expect(ids(query({ intervention: "placebo", minEnrollment: 100, startedAfter: "2015-01-01" }))).toEqual([
      "NCT02552212",
    ]);
    expect(ids(query({ condition: "dysphagia", sponsor: "regeneron" }))).toEqual([]);
  });

  it("each item is the summary record with its registry link", () => {
    const [item] = query({ nctId: "NCT02210780" }).items;
    expect(item).toMatchObject({
      nctId: "NCT02210780",
      phases: ["PHASE2"],
      enrollment: 194,
      sponsor: "Regeneron Pharmaceuticals",
      startDate: "2014-08-05",
      counts: { endpoints: 11, measurements: 28, analyses: 7 },
      sourceUrl: "https://clinicaltrials.gov/study/NCT02210780",
    });
    expect(item?.adverseEvents?.groups).toHaveLength(2);
  });
});

describe("the request schema", () => {
  const errors = (input: unknown) =>
    ClinicalTrialsQueryRequest.safeParse(input).error?.issues.map((issue) => ({
      path: issue.path.join("/"),
      message: issue.message,
    }));

  it("refuses unknown phases listing the valid ones, and text without a word", () => {
    expect(errors({ phase: "Phase 5" })).toEqual([
      {
        path: "phase",
        message: 'unknown phase "Phase 5"; use one of: EARLY_PHASE1, PHASE1, PHASE2, PHASE3, PHASE4, NA',
      },
    ]);
    expect(errors({ query: "?!" })).toEqual([
      { path: "query", message: "query must contain a letter or a digit" },
    ]);
    expect(errors({ limit: 51 })?.[0]?.path).toBe("limit");
    expect(errors({ startedAfter: "2020-13-01" })?.[0]?.path).toBe("startedAfter");
    expect(errors({ nctId: "NCT123" })?.[0]?.path).toBe("nctId");
    expect(errors({ nctId: "nct0123456x" })?.[0]?.path).toBe("nctId");
    expect(errors({ includeSecondary: "yes" })?.[0]?.path).toBe("includeSecondary");
    expect(errors({ extra: 1 })?.[0]?.message).toMatch(/extra/);
  });
});

describe("cursor paging", () => {
  let index: TrialsIndex;
  let file: string;
  const dupilumab = rawStudies.find((study) => idOf(study) === "NCT02210780");
  // Six copies of one record under other NCT numbers, with a title word no other record has:
  // equal on every sort key (BM25 score, start day).
  const twins = [1, 2, 3, 4, 5, 6].map((n) => ({
    ...dupilumab,
    protocolSection: {
      ...dupilumab.protocolSection,
      identificationModule: {
        nctId: `NCT8000000${n}`,
        briefTitle: "Twin of the dupilumab immune response study",
      },
    },
  }));
  const family = ["NCT02210780", ...twins.map(idOf)];
  const familyWindow = {
    condition: "atopic dermatitis",
    startedAfter: "2014-08-05",
    completedBefore: "2015-09-15",
  };

  beforeAll(() => {
    ({ index, file } = buildDatabase([...twins, ...syntheticStudies(rawStudies, 400, 7)]));
  });

  function allPages(input: Record<string, unknown>, limit: number) {
    const seen: string[] = [];
    let cursor: string | undefined;
    let pages = 0;
    let total = -1;
    do {
      const page = index.query(parse({ ...input, limit, ...(cursor ? { cursor } : {}) }));
      expect(page.count).toBe(page.items.length);
      expect(page.count).toBeLessThanOrEqual(limit);
      // Every page reports the same total, counted with the first page's query or without it.
      if (total !== -1) expect(page.total).toBe(total);
      total = page.total;
      seen.push(...ids(page));
      cursor = page.nextCursor ?? undefined;
      pages++;
    } while (cursor && pages < 1000);
    return { seen, total, pages };
  }

  /** The same order straight from SQLite, without keyset paging: the reference. */
  function reference(sql: string, ...params: unknown[]) {
    const db = new Database(file, { readonly: true });
    try {
      return (db.prepare(sql).all(...params) as { nct_id: string }[]).map((row) => row.nct_id);
    } finally {
      db.close();
    }
  }

  it("walks every match exactly once, in order, for ranked and unranked queries with filters", () => {
    const cases: [Record<string, unknown>, string[]][] = [
      [{}, reference("SELECT nct_id FROM studies ORDER BY start_day DESC, nct_id")],
      [
        { phase: "PHASE2" },
        reference(
          "SELECT s.nct_id FROM studies s JOIN study_phases p ON p.study_id = s.id WHERE p.phase = 'PHASE2' ORDER BY start_day DESC, nct_id",
        ),
      ],
      [
        { query: "placebo" },
        reference(
          "SELECT s.nct_id FROM studies_fts f JOIN studies s ON s.id = f.rowid WHERE studies_fts MATCH '\"placebo\"' ORDER BY bm25(studies_fts, 10.0, 6.0, 6.0, 2.0, 1.0), s.nct_id",
        ),
      ],
      [
        { query: "diabetes", minEnrollment: 100 },
        reference(
          "SELECT s.nct_id FROM studies_fts f JOIN studies s ON s.id = f.rowid WHERE studies_fts MATCH '\"diabetes\"' AND s.enrollment >= 100 ORDER BY bm25(studies_fts, 10.0, 6.0, 6.0, 2.0, 1.0), s.nct_id",
        ),
      ],
    ];
    for (const [input, expected] of cases) {
      expect(expected.length).toBeGreaterThan(20);
      for (const limit of [1, 7, 50]) {
        const { seen, total } = allPages(input, limit);
        expect(total).toBe(expected.length);
        expect(seen).toEqual(expected);
      }
    }
  });

  it("rows equal on the sort key are neither skipped nor repeated (tie broken by NCT number)", () => {
    const ranked = allPages({ query: "twin dupilumab" }, 1);
    expect(ranked.seen).toEqual(twins.map(idOf));
    expect(ranked.pages).toBe(6);
    const unranked = allPages(familyWindow, 2);
    expect(unranked.seen).toEqual(family);
  });

  it("a cursor stays correct while rows are added before it", () => {
    const first = index.query(parse({ ...familyWindow, limit: 3 }));
    expect(ids(first)).toEqual(["NCT02210780", "NCT80000001", "NCT80000002"]);
    const writer = openForWriting(file);
    try {
      writer.transaction(() =>
        new StudyWriter(writer).write({
          ...twins[0],
          protocolSection: { ...twins[0].protocolSection, identificationModule: { nctId: "NCT00000003" } },
        }),
      )();
    } finally {
      writer.close();
    }
    const second = index.query(parse({ ...familyWindow, limit: 3, cursor: first.nextCursor }));
    expect(ids(second)).toEqual(["NCT80000003", "NCT80000004", "NCT80000005"]);
    expect(second.total).toBe(8);
  });

  it("a malformed cursor, or one from other filters, is refused at /cursor", () => {
    const page = index.query(parse({ query: "placebo", limit: 2 }));
    const cursor = page.nextCursor as string;
    const issues = (input: unknown) =>
      ClinicalTrialsQueryRequest.safeParse(input).error?.issues.map((issue) => [
        issue.path.join("/"),
        issue.message,
      ]);
    const malformed = ["cursor", "malformed cursor: pass a nextCursor as it was given"];
    expect(issues({ query: "placebo", cursor: "not a cursor" })).toEqual([malformed]);
    expect(issues({ query: "placebo", cursor: Buffer.from("[1,2,3]").toString("base64url") })).toEqual([
      malformed,
    ]);
    expect(issues({ query: "placebo", cursor: `${cursor.slice(0, -4)}AAAA` })).toEqual([malformed]);
    // A ranked cursor carries a score: it cannot continue a listing by start date.
    expect(issues({ cursor })).toEqual([malformed]);
    expect(issues({ query: "placebo", phase: "PHASE2", cursor })).toEqual([
      ["cursor", "this cursor belongs to a query with other filters: repeat the filters of the first page"],
    ]);
    // The page size may change from page to page.
    expect(issues({ query: "placebo", limit: 9, cursor })).toBeUndefined();
  });
});
