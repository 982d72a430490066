/**
 * The SQLite database of trial-level results summaries (docs/clinical-trials-data-dictionary.md
 * describes every table and column). The ingest writes it; the service opens it read-only.
 */
import fs from "node:fs";
import path from "node:path";
import Database from "better-sqlite3";
import { type StudyRecord, searchText, sortableDate, summarizeStudy, type TrialSummary } from "./summary.ts";

export type TrialsDatabase = Database.Database;

/**
 * The layout and the summary JSON's shape, in `PRAGMA user_version`. 0 (unset): the first layout,
 * whose summaries lack denominators, secondary outcomes and the analysis fields. The summaries are
 * derived from records the database does not keep, so an older database cannot be migrated in
 * place: it is rebuilt from its source (see {@link openForWriting} and docs/clinical-trials.md).
 * 2: without each record's version (`record_as_of`, the summaries' `recordVersion`).
 */
export const SCHEMA_VERSION = 3;

const TABLES = [
  "meta",
  "studies",
  "study_summaries",
  "study_more_outcomes",
  "study_phases",
  "studies_fts",
  "ingest_state",
] as const;

const SCHEMA = `
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS studies (
  id INTEGER PRIMARY KEY,
  nct_id TEXT NOT NULL UNIQUE,
  title TEXT NOT NULL,
  sponsor TEXT,
  phases TEXT NOT NULL,
  enrollment INTEGER,
  start_date TEXT,
  start_day TEXT NOT NULL,
  completion_date TEXT,
  completion_day TEXT,
  endpoints INTEGER NOT NULL,
  measurements INTEGER NOT NULL,
  analyses INTEGER NOT NULL,
  last_update_posted TEXT,
  results_first_posted TEXT,
  record_as_of TEXT
);
-- Kept apart so that the filters scan narrow rows: a summary is kilobytes of JSON.
CREATE TABLE IF NOT EXISTS study_summaries (
  study_id INTEGER PRIMARY KEY REFERENCES studies (id) ON DELETE CASCADE,
  summary TEXT NOT NULL
);
-- Secondary and other (pre-specified, post-hoc) outcomes, read only when asked for: most queries
-- parse a page of primary summaries, and these are most of a record's results.
CREATE TABLE IF NOT EXISTS study_more_outcomes (
  study_id INTEGER PRIMARY KEY REFERENCES studies (id) ON DELETE CASCADE,
  secondary TEXT NOT NULL,
  other TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS studies_by_start ON studies (start_day DESC, nct_id);
CREATE INDEX IF NOT EXISTS studies_by_completion ON studies (completion_day);
CREATE INDEX IF NOT EXISTS studies_by_enrollment ON studies (enrollment);
CREATE TABLE IF NOT EXISTS study_phases (
  study_id INTEGER NOT NULL REFERENCES studies (id) ON DELETE CASCADE,
  phase TEXT NOT NULL,
  PRIMARY KEY (phase, study_id)
) WITHOUT ROWID;
CREATE VIRTUAL TABLE IF NOT EXISTS studies_fts USING fts5 (
  title, conditions, interventions, sponsor, outcomes,
  tokenize = "porter unicode61 remove_diacritics 2 tokenchars '\u241e'"
);
CREATE TABLE IF NOT EXISTS ingest_state (
  key TEXT PRIMARY KEY,
  value TEXT NOT NULL
);
`;

/** The keys of `meta` other tools rely on (the outcomes snapshot release reads them). */
export interface DatasetMeta {
  kind: "sample" | "full";
  snapshotDate: string;
  snapshotDateBasis: SnapshotDateBasis;
  studies: number;
  endpoints: number;
  measurements: number;
  analyses: number;
  source: string;
}

/** Provenance kept beside the totals (meta keys source_url, selection_rule, rule_counts, ...). */
export type ProvenanceMeta = Record<string, string>;

/** The schema version of a database, and whether it holds the tables at all. */
function layoutOf(db: TrialsDatabase): { version: number; hasTables: boolean } {
  const version = db.pragma("user_version", { simple: true }) as number;
  const hasTables =
    (db.prepare("SELECT count(*) AS n FROM sqlite_master WHERE name = 'studies'").get() as { n: number }).n >
    0;
  return { version, hasTables };
}

export interface OpenForWritingOptions {
  /** Called when the file held a database of an older schema version, which is emptied to be rebuilt. */
  onRebuild?: (fromVersion: number) => void;
}

/**
 * Opens (or creates) a database to ingest into. One of an older schema version is emptied first:
 * its rows cannot gain what the new layout keeps, so the ingest rebuilds it (an API ingest then
 * starts from the first page).
 */
export function openForWriting(file: string, options: OpenForWritingOptions = {}): TrialsDatabase {
  fs.mkdirSync(path.dirname(path.resolve(file)), { recursive: true });
  const db = new Database(file);
  db.pragma("journal_mode = WAL");
  db.pragma("foreign_keys = ON");
  const { version, hasTables } = layoutOf(db);
  if (hasTables && version !== SCHEMA_VERSION) {
    options.onRebuild?.(version);
    db.transaction(() => {
      for (const table of TABLES) db.exec(`DROP TABLE IF EXISTS ${table}`);
    })();
  }
  db.exec(SCHEMA);
  db.pragma(`user_version = ${SCHEMA_VERSION}`);
  return db;
}

export class StaleDatabaseError extends Error {
  constructor(
    readonly file: string,
    readonly version: number,
    readonly meta: Record<string, string>,
  ) {
    super(
      `${file} was built by an older version of the ingest (schema ${version}, this service reads ${SCHEMA_VERSION}): ` +
        "rebuild it with utility402 ingest clinical-trials --from api (or --from dir PATH)",
    );
  }
}

/** Leaves one self-contained file (no -wal beside it): what ships, and what a read-only opener needs. */
export function closeAfterWriting(db: TrialsDatabase): void {
  db.pragma("journal_mode = DELETE");
  db.close();
}

export function openForReading(file: string): TrialsDatabase {
  const db = new Database(file, { readonly: true, fileMustExist: true });
  const tables = db
    .prepare(
      "SELECT name FROM sqlite_master WHERE name IN ('meta', 'studies', 'study_summaries', 'studies_fts', 'study_phases')",
    )
    .all();
  if (tables.length !== 5) {
    db.close();
    throw new Error(`${file} is not a clinical-trials database (run: utility402 ingest clinical-trials)`);
  }
  const { version } = layoutOf(db);
  if (version !== SCHEMA_VERSION) {
    const meta = readMeta(db);
    db.close();
    throw new StaleDatabaseError(file, version, meta);
  }
  return db;
}

/** Writes studies; one record replaces an earlier one with the same NCT number (an ingest may see a study twice). */
export class StudyWriter {
  private readonly findRowid;
  private readonly deleteStudy;
  private readonly deleteText;
  private readonly insertStudy;
  private readonly insertText;
  private readonly insertPhase;
  private readonly insertSummary;
  private readonly insertMoreOutcomes;

  constructor(db: TrialsDatabase) {
    this.findRowid = db.prepare<[string], { id: number }>("SELECT id FROM studies WHERE nct_id = ?");
    this.deleteStudy = db.prepare("DELETE FROM studies WHERE id = ?");
    this.deleteText = db.prepare("DELETE FROM studies_fts WHERE rowid = ?");
    this.insertStudy = db.prepare(
      `INSERT INTO studies (nct_id, title, sponsor, phases, enrollment, start_date, start_day, completion_date,
         completion_day, endpoints, measurements, analyses, last_update_posted, results_first_posted, record_as_of)
       VALUES (@nctId, @title, @sponsor, @phases, @enrollment, @startDate, @startDay, @completionDate,
         @completionDay, @endpoints, @measurements, @analyses, @lastUpdatePosted, @resultsFirstPosted, @recordAsOf)`,
    );
    this.insertSummary = db.prepare("INSERT INTO study_summaries (study_id, summary) VALUES (?, ?)");
    this.insertMoreOutcomes = db.prepare(
      "INSERT INTO study_more_outcomes (study_id, secondary, other) VALUES (?, ?, ?)",
    );
    this.insertText = db.prepare(
      "INSERT INTO studies_fts (rowid, title, conditions, interventions, sponsor, outcomes) VALUES (?, ?, ?, ?, ?, ?)",
    );
    this.insertPhase = db.prepare("INSERT OR IGNORE INTO study_phases (study_id, phase) VALUES (?, ?)");
  }

  /** Call inside a transaction. */
  write(study: StudyRecord): TrialSummary {
    const summary = summarizeStudy(study);
    const existing = this.findRowid.get(summary.nctId);
    if (existing) {
      this.deleteText.run(existing.id);
      this.deleteStudy.run(existing.id);
    }
    const { lastInsertRowid } = this.insertStudy.run({
      nctId: summary.nctId,
      title: summary.title,
      sponsor: summary.sponsor,
      phases: JSON.stringify(summary.phases),
      enrollment: summary.enrollment,
      startDate: summary.startDate,
      // Unknown start dates sort last in the newest-first order.
      startDay: sortableDate(summary.startDate) ?? "",
      completionDate: summary.completionDate,
      completionDay: sortableDate(summary.completionDate),
      endpoints: summary.counts.endpoints,
      measurements: summary.counts.measurements,
      analyses: summary.counts.analyses,
      lastUpdatePosted: study.protocolSection?.statusModule?.lastUpdatePostDateStruct?.date ?? null,
      resultsFirstPosted: summary.resultsFirstPosted,
      recordAsOf: summary.recordVersion.asOf,
    });
    const { secondaryOutcomes, otherOutcomes, ...primary } = summary;
    this.insertSummary.run(lastInsertRowid, JSON.stringify(primary));
    this.insertMoreOutcomes.run(
      lastInsertRowid,
      JSON.stringify(secondaryOutcomes),
      JSON.stringify(otherOutcomes),
    );
    const words = searchText(study, summary);
    this.insertText.run(
      lastInsertRowid,
      words.title,
      words.conditions,
      words.interventions,
      words.sponsor,
      words.outcomes,
    );
    for (const phase of summary.phases) this.insertPhase.run(lastInsertRowid, phase);
    return summary;
  }
}

export interface DatasetTotals {
  studies: number;
  endpoints: number;
  measurements: number;
  analyses: number;
}

/** Counted from the rows, never taken from anywhere else. */
export function countTotals(db: TrialsDatabase): DatasetTotals {
  const row = db
    .prepare(
      `SELECT count(*) AS studies, coalesce(sum(endpoints), 0) AS endpoints,
         coalesce(sum(measurements), 0) AS measurements, coalesce(sum(analyses), 0) AS analyses FROM studies`,
    )
    .get() as DatasetTotals;
  return row;
}

export function readMeta(db: TrialsDatabase): Record<string, string> {
  const rows = db.prepare("SELECT key, value FROM meta").all() as { key: string; value: string }[];
  return Object.fromEntries(rows.map((row) => [row.key, row.value]));
}

/** Recounts the totals from the rows and records them with the kind, snapshot date (and its basis) and source. */
export function writeMeta(
  db: TrialsDatabase,
  fields: {
    kind: DatasetMeta["kind"];
    snapshotDate: string;
    snapshotDateBasis: SnapshotDateBasis;
    source: string;
  },
  provenance: ProvenanceMeta = {},
): DatasetMeta {
  const totals = countTotals(db);
  const meta: DatasetMeta = { ...fields, ...totals };
  const upsert = db.prepare(
    "INSERT INTO meta (key, value) VALUES (?, ?) ON CONFLICT (key) DO UPDATE SET value = excluded.value",
  );
  db.transaction(() => {
    upsert.run("kind", meta.kind);
    upsert.run("snapshot_date", meta.snapshotDate);
    upsert.run("snapshot_date_basis", meta.snapshotDateBasis);
    upsert.run("studies", String(meta.studies));
    upsert.run("endpoints", String(meta.endpoints));
    upsert.run("measurements", String(meta.measurements));
    upsert.run("analyses", String(meta.analyses));
    upsert.run("source", meta.source);
    for (const [key, value] of Object.entries(provenance)) upsert.run(key, value);
  })();
  return meta;
}

/**
 * What the dataset's "as of" date is based on (meta.snapshot_date_basis). The date is a guarantee:
 * every loaded record is at least that current.
 *  - record-as-of: the oldest registry copy among the records (their versionHolder);
 *  - last-update-posted: the oldest last update posted among records without a copy date (their
 *    copy is at least that new), when it is older than every copy date;
 *  - ingest-start: an API ingest whose undated records bound the date: the day it started reading;
 *  - ingest-clock: records with neither date: the day they were loaded.
 */
export type SnapshotDateBasis = "record-as-of" | "last-update-posted" | "ingest-start" | "ingest-clock";

/** The oldest and newest registry copy dates among the loaded records (null: none states one). */
export function recordsAsOf(db: TrialsDatabase): { oldest: string; newest: string } | null {
  const row = db
    .prepare("SELECT min(record_as_of) AS oldest, max(record_as_of) AS newest FROM studies")
    .get() as { oldest: string | null; newest: string | null };
  return row.oldest && row.newest ? { oldest: row.oldest, newest: row.newest } : null;
}

/** How many loaded records state no registry copy date (record_as_of). */
export function undatedRecords(db: TrialsDatabase): number {
  return (db.prepare("SELECT count(*) AS n FROM studies WHERE record_as_of IS NULL").get() as { n: number })
    .n;
}

/**
 * The date every loaded record is at least as current as: the oldest registry copy, and for a record
 * that states none, a lower bound of its copy: the day an API ingest started reading (`undatedFrom`),
 * or in a folder its last update posted. An undated record can make the data look older, never
 * newer; the headline is never the newest copy, which most records may be older than.
 */
export function snapshotDateOf(
  db: TrialsDatabase,
  undatedFrom?: string,
): { date: string; basis: SnapshotDateBasis } | null {
  const row = db
    .prepare(
      `SELECT min(record_as_of) AS copied, count(*) FILTER (WHERE record_as_of IS NULL) AS undated,
         min(CASE WHEN record_as_of IS NULL AND last_update_posted GLOB '[0-9][0-9][0-9][0-9]-[0-9][0-9]-[0-9][0-9]'
           THEN last_update_posted END) AS posted
       FROM studies`,
    )
    .get() as { copied: string | null; undated: number; posted: string | null };
  const bounds: { date: string; basis: SnapshotDateBasis }[] = [];
  if (row.copied) bounds.push({ date: row.copied, basis: "record-as-of" });
  if (row.undated > 0 && undatedFrom !== undefined) bounds.push({ date: undatedFrom, basis: "ingest-start" });
  else if (row.undated > 0 && row.posted) bounds.push({ date: row.posted, basis: "last-update-posted" });
  return bounds.reduce<{ date: string; basis: SnapshotDateBasis } | null>(
    (low, b) => (!low || b.date < low.date ? b : low),
    null,
  );
}
