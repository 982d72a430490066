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
  openForWriting,
  type TrialsDatabase,
} from "../../src/operations/clinical-trials-query/database.ts";
import {
  type ApiIngestProgress,
  formatProgress,
  ingestFromApi,
  ingestFromDirectory,
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
      const latestUpdate = rawStudies
        .map((study) => study.protocolSection.statusModule.lastUpdatePostDateStruct.date as string)
        .sort()
        .at(-1);
      expect(metaOf(db)).toEqual({
        kind: "sample",
        snapshot_date: latestUpdate,
        studies: "5",
        endpoints: String(totals.endpoints),
        measurements: String(totals.measurements),
        analyses: String(totals.analyses),
        source: "folder of ClinicalTrials.gov API v2 study records (clinical-trials-sample)",
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
      /loaded 5 studies from 5 files into .*: 5 studies, 63 endpoints, 230 measurements, 41 analyses \(kind sample, snapshot 2022-11-21\)/,
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
      },
    );
    expect(
      parseIngestArguments(["clinical-trials", "--from", "api", "--restart", "--page-size", "50"]),
    ).toEqual({
      from: { kind: "api" },
      db: undefined,
      restart: true,
      pageSize: 50,
    });
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
      const end = offset + pageSize;
      const body: Raw = { studies: rawStudies.slice(offset, end) };
      if (end < rawStudies.length) body.nextPageToken = Buffer.from(`after:${end}`).toString("base64url");
      if (url.searchParams.get("countTotal") === "true") body.totalCount = rawStudies.length;
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
    expect(standIn.requests).toHaveLength(3);
    const [first, second] = standIn.requests;
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
    expect(meta).toMatchObject({
      kind: "full",
      snapshot_date: "2026-03-04",
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
      snapshotDate: "2026-03-04",
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
    expect(standIn.requests).toHaveLength(4);
    // Before pages 2 and 3 the pace wait (just under a second each), the retry back-off, then the retry's pace wait.
    expect(waits).toHaveLength(4);
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
    expect(lines).toHaveLength(4);
    expect(lines[0]).toMatch(
      /page 1: 2\/5 \(40\.0%\) studies, \d+ endpoints, \d+ measurements, \d+ analyses, ETA/,
    );
    expect(lines[2]).toMatch(
      /^\[#{24}\] page 3: 5\/5 \(100\.0%\) studies, 63 endpoints, 230 measurements, 41 analyses, done$/,
    );
    expect(lines[3]).toMatch(
      /^complete: 5 studies, 63 endpoints, 230 measurements, 41 analyses \(snapshot \d{4}-\d{2}-\d{2}\)/,
    );
    expect(dump(file).meta.kind).toBe("full");
  });
});
