import { execFile } from "node:child_process";
import fs from "node:fs";
import http from "node:http";
import os from "node:os";
import path from "node:path";
import { promisify } from "node:util";
import Database from "better-sqlite3";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import {
  closeAfterWriting,
  openForReading,
  openForWriting,
  SCHEMA_VERSION,
  StaleDatabaseError,
  type TrialsDatabase,
} from "../../src/operations/clinical-trials-query/database.ts";
import {
  type ApiIngestProgress,
  formatProgress,
  ingestFromApi,
  ingestFromDirectory,
  isRegistryUrl,
  UpstreamError,
} from "../../src/operations/clinical-trials-query/ingest.ts";
import { parseIngestArguments } from "../../src/operations/clinical-trials-query/ingest-command.ts";
import { TrialsIndex } from "../../src/operations/clinical-trials-query/query.ts";
import { SAMPLE_DIR } from "../../src/operations/clinical-trials-query/sample.ts";
import { freePort } from "../helpers/service.ts";

const run = promisify(execFile);

// Raw registry JSON, walked without the ingest's types.
type Raw = any;

const rawStudies: Raw[] = fs
  .readdirSync(SAMPLE_DIR)
  .filter((name) => name.endsWith(".json"))
  .sort()
  .map((name) => JSON.parse(fs.readFileSync(path.join(SAMPLE_DIR, name), "utf8")));

/** Counted here from the raw JSON, independently of the ingest: the AACT rules, by walking the arrays. */
function rawCounts(study: Raw) {
  let endpoints = 0;
  let measurements = 0;
  let analyses = 0;
  for (const outcome of study.resultsSection.outcomeMeasuresModule.outcomeMeasures) {
    endpoints += 1;
    analyses += (outcome.analyses ?? []).length;
    for (const outcomeClass of outcome.classes ?? []) {
      for (const category of outcomeClass.categories ?? [])
        measurements += (category.measurements ?? []).length;
    }
  }
  return { endpoints, measurements, analyses };
}

const tempDirs: string[] = [];
function tempFile(name = "trials.sqlite") {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "utility402-trials-"));
  tempDirs.push(dir);
  return path.join(dir, name);
}
afterAll(() => {
  for (const dir of tempDirs) fs.rmSync(dir, { recursive: true, force: true });
});

const metaOf = (db: TrialsDatabase | Database.Database) =>
  Object.fromEntries(
    (db.prepare("SELECT key, value FROM meta").all() as { key: string; value: string }[]).map((row) => [
      row.key,
      row.value,
    ]),
  );

describe("ingest from a folder of study records", () => {
  it("stores every study with the counts of the raw JSON, and meta totals that add up", () => {
    const db = openForWriting(tempFile());
    try {
      const result = ingestFromDirectory(db, SAMPLE_DIR);
      expect(result).toMatchObject({ files: 5, written: 5, skippedWithoutResults: 0 });
      const rows = db
        .prepare("SELECT nct_id, endpoints, measurements, analyses FROM studies ORDER BY nct_id")
        .all() as { nct_id: string; endpoints: number; measurements: number; analyses: number }[];
      expect(rows).toEqual(
        rawStudies.map((study) => ({
          nct_id: study.protocolSection.identificationModule.nctId,
          ...rawCounts(study),
        })),
      );
      const totals = rawStudies.map(rawCounts).reduce((sum, counts) => ({
        endpoints: sum.endpoints + counts.endpoints,
        measurements: sum.measurements + counts.measurements,
        analyses: sum.analyses + counts.analyses,
      }));
      // The figures as the other tools read them: decimal strings in meta.
      // The folder is as of its oldest registry copy (versionHolder): every record is at least that current.
      const oldestCopy = rawStudies
        .map((study) => study.derivedSection.miscInfoModule.versionHolder as string)
        .sort()[0];
      expect(metaOf(db)).toEqual({
        kind: "sample",
        snapshot_date: oldestCopy,
        snapshot_date_basis: "record-as-of",
        studies: "5",
        endpoints: String(totals.endpoints),
        measurements: String(totals.measurements),
        analyses: String(totals.analyses),
        source: "folder of ClinicalTrials.gov API v2 study records (clinical-trials-sample)",
        source_url: "",
        source_is_registry: "no",
        other_source_allowed: "no",
        selection_rule: "",
        rule_counts: "",
        skipped_records: "0",
      });
      // Loading the same folder again replaces the rows: no duplicates.
      ingestFromDirectory(db, SAMPLE_DIR);
      expect(metaOf(db).studies).toBe("5");
      expect(db.prepare("SELECT count(*) AS n FROM studies_fts").get()).toEqual({ n: 5 });
      expect(db.prepare("SELECT count(*) AS n FROM study_phases").get()).toEqual({
        n: rawStudies.reduce((n, study) => n + (study.protocolSection.designModule.phases ?? []).length, 0),
      });
    } finally {
      closeAfterWriting(db);
    }
  });

  it("skips records without results and reads API pages saved as files", () => {
    const dir = path.dirname(tempFile());
    const [first, second] = rawStudies;
    const withoutResults = {
      protocolSection: { identificationModule: { nctId: "NCT00000002", briefTitle: "No results yet" } },
    };
    fs.writeFileSync(path.join(dir, "page-1.json"), JSON.stringify({ studies: [first, withoutResults] }));
    fs.writeFileSync(path.join(dir, "single.json"), JSON.stringify(second));
    const db = openForWriting(path.join(dir, "db.sqlite"));
    try {
      expect(ingestFromDirectory(db, dir)).toMatchObject({ files: 2, written: 2, skippedWithoutResults: 1 });
    } finally {
      closeAfterWriting(db);
    }
  });

  it("the CLI builds the database at --db and reports the counts on stderr", async () => {
    const file = tempFile();
    const { stderr } = await run(
      process.execPath,
      ["bin/utility402.js", "ingest", "clinical-trials", "--from", "dir", SAMPLE_DIR, "--db", file],
      { env: { PATH: process.env.PATH ?? "", HOME: os.tmpdir(), DATA_DIR: path.dirname(file) } },
    );
    expect(stderr).toMatch(
      /loaded 5 studies from 5 files into .*: 5 studies, 63 endpoints, 230 measurements, 41 analyses \(kind sample, snapshot 2023-11-15\)/,
    );
    const db = new Database(file, { readonly: true });
    try {
      expect(metaOf(db)).toMatchObject({ kind: "sample", studies: "5" });
    } finally {
      db.close();
    }
    expect(fs.existsSync(`${file}-wal`)).toBe(false);
  });

  it("the CLI reads its options, and refuses unknown ones with one config line and exit code 1", async () => {
    expect(parseIngestArguments(["clinical-trials", "--from", "dir", "records", "--db", "x.sqlite"])).toEqual(
      {
        from: { kind: "dir", path: "records" },
        db: "x.sqlite",
        restart: false,
        pageSize: 1000,
        rule: "start-date",
        allowOtherSource: false,
      },
    );
    expect(
      parseIngestArguments(["clinical-trials", "--from", "api", "--restart", "--page-size", "50"]),
    ).toEqual({
      from: { kind: "api" },
      db: undefined,
      restart: true,
      pageSize: 50,
      rule: "start-date",
      allowOtherSource: false,
    });
    expect(
      parseIngestArguments([
        "clinical-trials",
        "--from",
        "api",
        "--rule",
        "results-first-posted",
        "--allow-other-source",
      ]),
    ).toMatchObject({ rule: "results-first-posted", allowOtherSource: true });
    for (const [args, problem] of [
      [["trials"], 'ingest: unknown dataset "trials" (known: clinical-trials)'],
      [["clinical-trials"], "ingest: --from api or --from dir PATH is required"],
      [["clinical-trials", "--from", "ftp"], 'ingest: --from must be "api" or "dir PATH", got "ftp"'],
      [["clinical-trials", "--from", "dir"], "ingest: --from needs a value"],
      [
        ["clinical-trials", "--from", "api", "--page-size", "1001"],
        "ingest: --page-size must be an integer from 1 to 1000",
      ],
      [["clinical-trials", "--from", "api", "--fast"], 'ingest: unknown option "--fast"'],
      [
        ["clinical-trials", "--from", "api", "--rule", "completion-date"],
        'ingest: --rule must be one of start-date, results-first-posted, got "completion-date"',
      ],
    ] as const) {
      expect(() => parseIngestArguments([...args])).toThrow(expect.objectContaining({ problems: [problem] }));
    }
    const failure = await run(
      process.execPath,
      ["bin/utility402.js", "ingest", "clinical-trials", "--from", "ftp"],
      {
        env: { PATH: process.env.PATH ?? "", HOME: os.tmpdir() },
      },
    ).then(
      () => null,
      (error) => error as { code: number; stderr: string },
    );
    expect(failure?.code).toBe(1);
    expect(failure?.stderr).toBe('config error: ingest: --from must be "api" or "dir PATH", got "ftp"\n');
  });
});

/**
 * A stand-in for GET /api/v2/studies: the five records in NCT order, `pageSize` at a time, with
 * opaque page tokens; it can fail a page's first request, as an upstream hiccup does.
 */
class StandIn {
  readonly requests: URL[] = [];
  private failOnceAtPage: number | null = null;
  /** Apply `filter.advanced` (AREA[StartDate] / AREA[ResultsFirstPostDate] RANGE[day,MAX]) and `fields=NCTId` as the API does. */
  honourFilters = false;
  private failed = false;
  private server?: http.Server;
  url = "";

  async start() {
    const port = await freePort();
    this.server = http.createServer((request, response) => {
      const url = new URL(request.url ?? "/", `http://127.0.0.1:${port}`);
      this.requests.push(url);
      const pageSize = Number(url.searchParams.get("pageSize"));
      const token = url.searchParams.get("pageToken");
      const offset = token ? Number(Buffer.from(token, "base64url").toString().replace("after:", "")) : 0;
      const page = Math.floor(offset / pageSize) + 1;
      if (url.pathname !== "/api/v2/studies" || !Number.isInteger(offset) || pageSize < 1) {
        response.writeHead(400).end();
        return;
      }
      if (this.failOnceAtPage === page && !this.failed) {
        this.failed = true;
        response.writeHead(503, { "content-type": "text/plain" }).end("upstream busy");
        return;
      }
      const selected = this.honourFilters ? applyFilter(rawStudies, url) : rawStudies;
      const end = offset + pageSize;
      const body: Raw = { studies: selected.slice(offset, end) };
      if (this.honourFilters && url.searchParams.get("fields") === "NCTId") {
        body.studies = body.studies.map((study: Raw) => ({
          protocolSection: {
            identificationModule: { nctId: study.protocolSection.identificationModule.nctId },
          },
        }));
      }
      if (end < selected.length) body.nextPageToken = Buffer.from(`after:${end}`).toString("base64url");
      if (url.searchParams.get("countTotal") === "true") body.totalCount = selected.length;
      response.writeHead(200, { "content-type": "application/json" }).end(JSON.stringify(body));
    });
    await new Promise<void>((resolve) => this.server?.listen(port, "127.0.0.1", resolve));
    this.url = `http://127.0.0.1:${port}/api/v2/studies`;
  }

  /** The next request for `page` (1-based) is answered 503, once. */
  failOnce(page: number | null) {
    this.failOnceAtPage = page;
    this.failed = false;
  }

  async stop() {
    await new Promise<void>((resolve) => (this.server ? this.server.close(() => resolve()) : resolve()));
  }
}

/** The registry's date filters, on the recorded records: a month-only date counts from its first day. */
function applyFilter(studies: Raw[], url: URL): Raw[] {
  const filter = url.searchParams.get("filter.advanced");
  if (!filter) return studies;
  const match = /^AREA\[(StartDate|ResultsFirstPostDate)\]RANGE\[(\d{4}-\d{2}-\d{2}),MAX\]$/.exec(filter);
  if (!match) throw new Error(`the stand-in does not know the filter ${filter}`);
  const field = match[1] === "StartDate" ? "startDateStruct" : "resultsFirstPostDateStruct";
  return studies.filter((study) => {
    const date: string | undefined = study.protocolSection.statusModule[field]?.date;
    return date !== undefined && `${date}-01-01`.slice(0, 10) >= (match[2] as string);
  });
}

const dump = (file: string) => {
  const db = new Database(file, { readonly: true });
  try {
    return {
      studies: db
        .prepare(
          "SELECT s.nct_id, m.summary FROM studies s JOIN study_summaries m ON m.study_id = s.id ORDER BY nct_id",
        )
        .all(),
      text: db
        .prepare("SELECT title, conditions, interventions, sponsor, outcomes FROM studies_fts ORDER BY title")
        .all(),
      phases: db
        .prepare(
          "SELECT s.nct_id, p.phase FROM study_phases p JOIN studies s ON s.id = p.study_id ORDER BY 1, 2",
        )
        .all(),
      meta: metaOf(db),
    };
  } finally {
    db.close();
  }
};

describe("ingest from the API v2 (a stand-in on 127.0.0.1)", () => {
  const standIn = new StandIn();
  const noWait = async () => {};
  const clock = () => new Date("2026-03-04T05:06:07Z");

  beforeAll(() => standIn.start());
  afterAll(() => standIn.stop());
  afterEach(() => {
    standIn.requests.length = 0;
    standIn.failOnce(null);
  });

  async function ingestInto(file: string, options: Partial<Parameters<typeof ingestFromApi>[1]> = {}) {
    const db = openForWriting(file);
    try {
      return await ingestFromApi(db, {
        apiUrl: standIn.url,
        pageSize: 2,
        intervalMs: 0,
        retries: 0,
        now: clock,
        sleep: noWait,
        ...options,
      });
    } finally {
      closeAfterWriting(db);
    }
  }

  it("asks for studies with results started since 2020-01-01, page by page, and marks a complete run full", async () => {
    const file = tempFile();
    const progress: ApiIngestProgress[] = [];
    const result = await ingestInto(file, { onProgress: (p) => progress.push(p) });
    expect(result).toMatchObject({ status: "complete", pagesThisRun: 3, resumed: false });
    // Two count requests (one per selection rule), then the three pages.
    expect(standIn.requests).toHaveLength(5);
    const [, , first, second] = standIn.requests;
    expect(Object.fromEntries(first?.searchParams ?? [])).toEqual({
      format: "json",
      aggFilters: "results:with",
      "filter.advanced": "AREA[StartDate]RANGE[2020-01-01,MAX]",
      pageSize: "2",
      countTotal: "true",
    });
    expect(second?.searchParams.get("pageToken")).toBe(Buffer.from("after:2").toString("base64url"));
    expect(second?.searchParams.get("filter.advanced")).toBe("AREA[StartDate]RANGE[2020-01-01,MAX]");
    expect(progress.map((p) => [p.page, p.studiesReceived, p.totalCount])).toEqual([
      [1, 2, 5],
      [2, 4, 5],
      [3, 5, 5],
    ]);
    expect(progress.at(-1)).toMatchObject({ endpoints: 63, measurements: 230, analyses: 41, etaMs: 0 });
    expect(formatProgress({ ...(progress[0] as ApiIngestProgress), etaMs: 125_000 })).toMatch(
      /^\[#{10}\.{14}\] page 1: 2\/5 \(40\.0%\) studies, \d+ endpoints, \d+ measurements, \d+ analyses, ETA 2m 05s$/,
    );
    const { meta } = dump(file);
    // The run started 2026-03-04, but its records are the registry's copies of 2023-11-15 to
    // 2024-06-10: the date is the oldest copy, the start is kept apart.
    expect(meta).toMatchObject({
      kind: "full",
      snapshot_date: "2023-11-15",
      snapshot_date_basis: "record-as-of",
      ingest_started_at: expect.stringMatching(/^2026-03-04T/),
      studies: "5",
      endpoints: "63",
      measurements: "230",
      analyses: "41",
    });
    expect(meta.source).toContain(standIn.url);
    // The service reads it as the full dataset.
    const index = new TrialsIndex(new Database(file, { readonly: true }));
    expect(index.dataset).toMatchObject({
      kind: "full",
      sample: false,
      studies: 5,
      snapshotDate: "2023-11-15",
    });
  });

  it("a run that fails mid-way resumes from the saved page token and ends equal to a clean run", async () => {
    const clean = tempFile();
    await ingestInto(clean);
    standIn.requests.length = 0;

    const file = tempFile();
    standIn.failOnce(2);
    await expect(ingestInto(file)).rejects.toThrow(UpstreamError);
    const interrupted = dump(file);
    expect(interrupted.studies).toHaveLength(2);
    expect(interrupted.meta).toMatchObject({ kind: "sample", studies: "2" });
    const savedToken = Buffer.from("after:2").toString("base64url");
    const state = new Database(file, { readonly: true });
    expect(
      JSON.parse((state.prepare("SELECT value FROM ingest_state").get() as { value: string }).value),
    ).toMatchObject({
      status: "running",
      nextPageToken: savedToken,
      pages: 1,
    });
    state.close();

    standIn.requests.length = 0;
    const progress: ApiIngestProgress[] = [];
    const resumed = await ingestInto(file, { onProgress: (p) => progress.push(p) });
    expect(resumed).toMatchObject({ status: "complete", pagesThisRun: 2, resumed: true });
    // The first request of the second run is for the page that failed, not the first page again.
    expect(standIn.requests[0]?.searchParams.get("pageToken")).toBe(savedToken);
    expect(progress.map((p) => p.page)).toEqual([2, 3]);

    const after = dump(file);
    const reference = dump(clean);
    expect(after.studies).toHaveLength(5);
    expect(after.studies).toEqual(reference.studies);
    expect(after.text).toEqual(reference.text);
    expect(after.phases).toEqual(reference.phases);
    expect(after.meta).toEqual(reference.meta);
  });

  it("with retries, one failed request is absorbed within the run; requests are paced by the interval", async () => {
    standIn.failOnce(3);
    const waits: number[] = [];
    const result = await ingestInto(tempFile(), {
      retries: 2,
      retryDelayMs: 5000,
      intervalMs: 1000,
      sleep: async (ms) => {
        waits.push(ms);
      },
    });
    expect(result).toMatchObject({ status: "complete", pagesThisRun: 3 });
    expect(standIn.requests).toHaveLength(6);
    // Between the two count requests, before pages 1, 2 and 3 the pace wait (just under a second
    // each), the retry back-off, then the retry's pace wait.
    expect(waits).toHaveLength(6);
    expect(waits).toContain(5000);
    for (const wait of waits.filter((ms) => ms !== 5000)) {
      expect(wait).toBeGreaterThan(500);
      expect(wait).toBeLessThanOrEqual(1000);
    }
  });

  it("a 4xx answer is not retried: the request itself is wrong", async () => {
    const waits: number[] = [];
    await expect(
      ingestInto(tempFile(), {
        apiUrl: standIn.url.replace("/studies", "/nowhere"),
        retries: 3,
        sleep: async (ms) => {
          waits.push(ms);
        },
      }),
    ).rejects.toThrow(/answered 400/);
    expect(standIn.requests).toHaveLength(1);
    expect(standIn.requests[0]?.searchParams.get("fields")).toBe("NCTId");
    expect(waits).toEqual([]);
  });

  it("a complete database is left alone unless restarted; a restart replaces every row", async () => {
    const file = tempFile();
    await ingestInto(file);
    standIn.requests.length = 0;
    expect(await ingestInto(file)).toMatchObject({ status: "already-complete" });
    expect(standIn.requests).toHaveLength(0);
    expect(await ingestInto(file, { restart: true, pageSize: 3 })).toMatchObject({
      status: "complete",
      pagesThisRun: 2,
    });
    expect(dump(file).studies).toHaveLength(5);
  });

  it("an API ingest into a sample database replaces the sample", async () => {
    const file = tempFile();
    const db = openForWriting(file);
    ingestFromDirectory(db, SAMPLE_DIR);
    db.prepare("UPDATE studies SET title = 'stale' WHERE nct_id = 'NCT00763412'").run();
    closeAfterWriting(db);
    await ingestInto(file);
    expect(dump(file).studies.map((row) => (row as { nct_id: string }).nct_id)).toHaveLength(5);
    const check = new Database(file, { readonly: true });
    expect(check.prepare("SELECT count(*) AS n FROM studies WHERE title = 'stale'").get()).toEqual({ n: 0 });
    check.close();
  });

  it("the CLI runs against CLINICAL_TRIALS_API_URL with a progress line per page on stderr", async () => {
    const file = tempFile();
    const { stderr } = await run(
      process.execPath,
      ["bin/utility402.js", "ingest", "clinical-trials", "--from", "api", "--page-size", "2"],
      {
        env: {
          PATH: process.env.PATH ?? "",
          HOME: os.tmpdir(),
          CLINICAL_TRIALS_API_URL: standIn.url,
          CLINICAL_TRIALS_DB: file,
        },
      },
    );
    const lines = stderr.trim().split("\n");
    expect(lines).toHaveLength(8);
    expect(lines[0]).toMatch(
      /is not the ClinicalTrials.gov registry; .* refused \(pass --allow-other-source/,
    );
    expect(lines.slice(1, 4)).toEqual([
      `studies with results on ${standIn.url}, by selection rule:`,
      "  start-date (studies with results started on or after 2020-01-01): 5",
      "  results-first-posted (studies with results first posted on or after 2020-01-01): 5",
    ]);
    expect(lines[4]).toMatch(
      /page 1: 2\/5 \(40\.0%\) studies, \d+ endpoints, \d+ measurements, \d+ analyses, ETA/,
    );
    expect(lines[6]).toMatch(
      /^\[#{24}\] page 3: 5\/5 \(100\.0%\) studies, 63 endpoints, 230 measurements, 41 analyses, done$/,
    );
    expect(lines[7]).toMatch(
      /^complete: 5 studies, 63 endpoints, 230 measurements, 41 analyses \(snapshot \d{4}-\d{2}-\d{2}, rule start-date\)/,
    );
    expect(dump(file).meta.kind).toBe("full");
  });
});

describe("the selection rule, provenance and skipped records (issue 23)", () => {
  const standIn = new StandIn();
  const clock = () => new Date("2026-03-04T05:06:07Z");
  beforeAll(async () => {
    await standIn.start();
    standIn.honourFilters = true;
  });
  afterAll(() => standIn.stop());
  afterEach(() => {
    standIn.requests.length = 0;
  });

  const ingestInto = async (file: string, options: Partial<Parameters<typeof ingestFromApi>[1]> = {}) => {
    const db = openForWriting(file);
    try {
      return await ingestFromApi(db, {
        apiUrl: standIn.url,
        pageSize: 2,
        intervalMs: 0,
        retries: 0,
        now: clock,
        sleep: async () => {},
        ...options,
      });
    } finally {
      closeAfterWriting(db);
    }
  };

  it("asks the API for each rule's count first, records them, and ingests by the chosen rule", async () => {
    const file = tempFile();
    const result = await ingestInto(file, { rule: "results-first-posted" });
    // The recorded records: none started in 2020 or later; four had results first posted since.
    expect(result.ruleCounts).toEqual({ "start-date": 0, "results-first-posted": 4 });
    const [countStart, countPosted, firstPage] = standIn.requests;
    expect(Object.fromEntries(countStart?.searchParams ?? [])).toEqual({
      format: "json",
      aggFilters: "results:with",
      "filter.advanced": "AREA[StartDate]RANGE[2020-01-01,MAX]",
      fields: "NCTId",
      pageSize: "1",
      countTotal: "true",
    });
    expect(countPosted?.searchParams.get("filter.advanced")).toBe(
      "AREA[ResultsFirstPostDate]RANGE[2020-01-01,MAX]",
    );
    expect(firstPage?.searchParams.get("filter.advanced")).toBe(
      "AREA[ResultsFirstPostDate]RANGE[2020-01-01,MAX]",
    );
    const { meta, studies } = dump(file);
    expect(studies.map((row) => (row as { nct_id: string }).nct_id)).toEqual([
      "NCT02210780",
      "NCT02552212",
      "NCT03064438",
      "NCT05594173",
    ]);
    expect(meta).toMatchObject({
      kind: "full",
      studies: "4",
      selection_rule: "results-first-posted",
      rule_counts: JSON.stringify({ "start-date": 0, "results-first-posted": 4 }),
      source_url: standIn.url,
      source_is_registry: "no",
      other_source_allowed: "no",
      skipped_records: "0",
    });
    expect(meta.source).toBe(
      `an API v2 stand-in, not the ClinicalTrials.gov registry: ${standIn.url} (studies with results first posted on or after 2020-01-01)`,
    );
    // What the service then says it holds.
    const index = new TrialsIndex(new Database(file, { readonly: true }));
    expect(index.dataset).toMatchObject({
      kind: "full",
      registry: false,
      sourceUrl: standIn.url,
      selectionRule: "results-first-posted",
      ruleCounts: { "start-date": 0, "results-first-posted": 4 },
    });
    const selected = rawStudies.filter(
      (study) => study.protocolSection.identificationModule.nctId !== "NCT00763412",
    );
    const sum = (field: "endpoints" | "measurements" | "analyses") =>
      selected.reduce((n, study) => n + rawCounts(study)[field], 0);
    expect(index.dataset.description).toBe(
      `4 studies with results first posted on or after 2020-01-01 (${sum("endpoints")} endpoints, ${sum("measurements")} measurements, ${sum("analyses")} analyses), a complete ingest of ${standIn.url} (not the ClinicalTrials.gov registry) as of 2023-11-15 (registry copies of 2023-11-15 to 2024-06-10)`,
    );
  });

  it("the default rule (start date) on the recorded records selects none of them", async () => {
    const file = tempFile();
    const result = await ingestInto(file);
    expect(result.ruleCounts).toEqual({ "start-date": 0, "results-first-posted": 4 });
    expect(dump(file).meta).toMatchObject({ kind: "full", studies: "0", selection_rule: "start-date" });
  });

  it("only https://clinicaltrials.gov is the registry", () => {
    expect(isRegistryUrl("https://clinicaltrials.gov/api/v2/studies")).toBe(true);
    expect(isRegistryUrl("https://www.ClinicalTrials.gov/api/v2/studies")).toBe(true);
    expect(isRegistryUrl("http://clinicaltrials.gov/api/v2/studies")).toBe(false);
    expect(isRegistryUrl("https://clinicaltrials.gov.example/api/v2/studies")).toBe(false);
    expect(isRegistryUrl(standIn.url)).toBe(false);
  });

  it("a folder with one record without an NCT number loads the rest and reports it; nct01234567 is read as NCT01234567", () => {
    const dir = path.dirname(tempFile());
    const [first, second, third] = rawStudies;
    const lower = structuredClone(third);
    lower.protocolSection.identificationModule.nctId =
      lower.protocolSection.identificationModule.nctId.toLowerCase();
    const noNumber = structuredClone(second);
    delete noNumber.protocolSection.identificationModule.nctId;
    fs.writeFileSync(path.join(dir, "page-1.json"), JSON.stringify({ studies: [first, noNumber] }));
    fs.writeFileSync(path.join(dir, "single.json"), JSON.stringify(lower));
    fs.writeFileSync(
      path.join(dir, "zz-bad.json"),
      JSON.stringify({ protocolSection: { identificationModule: { nctId: "12345" } } }),
    );
    const db = openForWriting(path.join(dir, "db.sqlite"));
    try {
      const result = ingestFromDirectory(db, dir);
      expect(result).toMatchObject({ files: 3, written: 2 });
      expect(result.skipped).toEqual([
        {
          where: "page-1.json /studies/1",
          reason: "protocolSection.identificationModule.nctId is null, not an NCT number",
        },
        {
          where: "zz-bad.json",
          reason: 'protocolSection.identificationModule.nctId is "12345", not an NCT number',
        },
      ]);
      expect(db.prepare("SELECT nct_id FROM studies ORDER BY nct_id").all()).toEqual([
        { nct_id: first.protocolSection.identificationModule.nctId },
        { nct_id: third.protocolSection.identificationModule.nctId },
      ]);
      expect(metaOf(db).skipped_records).toBe("2");
    } finally {
      closeAfterWriting(db);
    }
  });

  it("an API page with a record without an NCT number: the rest is stored, the record reported", async () => {
    const file = tempFile();
    const broken = structuredClone(rawStudies[1]);
    broken.protocolSection.identificationModule.nctId = "";
    let served = false;
    const fakeFetch = (async (input: URL | RequestInfo) => {
      const url = new URL(String(input));
      if (url.searchParams.get("fields") === "NCTId") return Response.json({ studies: [], totalCount: 3 });
      served = true;
      return Response.json({ studies: [rawStudies[0], broken, rawStudies[2]], totalCount: 3 });
    }) as typeof fetch;
    const result = await ingestInto(file, {
      fetch: fakeFetch,
      apiUrl: "https://clinicaltrials.gov/api/v2/studies",
    });
    expect(served).toBe(true);
    expect(result.skipped).toEqual([
      {
        where: "page 1 /studies/1",
        reason: 'protocolSection.identificationModule.nctId is "", not an NCT number',
      },
    ]);
    expect(dump(file).meta).toMatchObject({ studies: "2", skipped_records: "1", source_is_registry: "yes" });
  });
});

describe("the database's schema version (rebuild rule)", () => {
  it("a database of the first layout is refused for reading, and emptied to be rebuilt by an ingest", () => {
    const file = tempFile();
    const db = openForWriting(file);
    ingestFromDirectory(db, SAMPLE_DIR);
    db.pragma("user_version = 0");
    closeAfterWriting(db);
    expect(() => openForReading(file)).toThrow(StaleDatabaseError);
    expect(() => openForReading(file)).toThrow(
      /older version of the ingest \(schema 0, this service reads 3\)/,
    );
    const rebuilt: number[] = [];
    const again = openForWriting(file, { onRebuild: (version) => rebuilt.push(version) });
    try {
      expect(rebuilt).toEqual([0]);
      expect(again.prepare("SELECT count(*) AS n FROM studies").get()).toEqual({ n: 0 });
      expect(again.pragma("user_version", { simple: true })).toBe(SCHEMA_VERSION);
      ingestFromDirectory(again, SAMPLE_DIR);
    } finally {
      closeAfterWriting(again);
    }
    openForReading(file).close();
  });
});
