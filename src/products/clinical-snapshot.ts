import fs from "node:fs";
import path from "node:path";
import Database from "better-sqlite3";
import { recordsAsOf, SCHEMA_VERSION } from "../operations/clinical-trials-query/database.ts";
import { apiSnapshotDate } from "../operations/clinical-trials-query/ingest.ts";
import type { ArchiveEntry } from "./zip.ts";

/**
 * The clinical-trials-outcomes-post-2020 product: a snapshot of the clinical index built by the
 * ingest (CLINICAL_TRIALS_DB), packaged as the SQLite database, one CSV per table, the data
 * dictionary and a validation report. Only a complete API ingest is sold: `meta.kind = 'full'` is
 * not taken on its word; the ingest's own run record must say that every page of the registry's
 * answer was received, and every count the product states is recounted from the rows.
 */

/** The four counts the product promises, as the ingest records them in `meta`. */
export const CLINICAL_COUNTS = ["studies", "endpoints", "measurements", "analyses"] as const;

/** The first day of the product's subject: studies that started on or after it. */
export const STARTED_ON_OR_AFTER = "2020-01-01";

/** The studies column each ingest selection rule is checked on (meta.selection_rule; none: start-date). */
const RULE_COLUMNS: Record<string, { column: string; says: string }> = {
  "start-date": { column: "start_day", says: "started" },
  "results-first-posted": { column: "results_first_posted", says: "had results first posted" },
};

/**
 * Why the database's source may not be sold, or undefined: only an ingest of the registry itself
 * (meta.source_is_registry), unless the operator said at ingest time that another source may be
 * (`--allow-other-source`, meta.other_source_allowed).
 */
function unsellableSource(meta: Record<string, string>): string | undefined {
  if (meta.source_is_registry === "yes") return undefined;
  if (meta.other_source_allowed === "yes") return undefined;
  if (meta.source_is_registry === undefined) {
    return "the clinical database does not record its source URL (built by an older ingest): rebuild it with utility402 ingest clinical-trials --from api";
  }
  return (
    `the clinical database was ingested from ${meta.source_url || "a folder of records"}, not the ClinicalTrials.gov registry: ` +
    "ingest from the registry, or re-run the ingest with --allow-other-source to sell it from this source explicitly"
  );
}

export type ClinicalBuild =
  | { unbuildable: string }
  | { version: string; entries: ArchiveEntry[]; details: Record<string, unknown>; changes: string[] };

interface Check {
  check: string;
  expected: string;
  actual: string;
  ok: boolean;
}

/** The run record `ingestFromApi` keeps in `ingest_state` (key "api"). */
interface ApiRun {
  source?: string;
  startedAt?: string;
  status?: string;
  nextPageToken?: string | null;
  pages?: number;
  studiesReceived?: number;
  totalCount?: number | null;
}

/**
 * Why a database is not a complete API ingest, or undefined when it is: the run record exists, its
 * status is complete with no page left, the registry's total was received, and meta names the same
 * source and date.
 */
function incompleteIngest(db: Database.Database, meta: Record<string, string>): string | undefined {
  let row: { value: string } | undefined;
  try {
    row = db.prepare("SELECT value FROM ingest_state WHERE key = 'api'").get() as
      | { value: string }
      | undefined;
  } catch {
    row = undefined;
  }
  if (!row) {
    return "the database has no completed API ingest (no run record in ingest_state): a folder or sample load is not sold, whatever meta.kind says";
  }
  let run: ApiRun;
  try {
    run = JSON.parse(row.value) as ApiRun;
  } catch {
    return "the API ingest's run record is not readable";
  }
  const received = run.studiesReceived ?? -1;
  const total = run.totalCount;
  if (run.status !== "complete" || run.nextPageToken) {
    return `the API ingest did not complete (status ${run.status ?? "unknown"} after ${run.pages ?? 0} pages): resume it with utility402 ingest clinical-trials`;
  }
  if (typeof total !== "number" || received < total) {
    return `the API ingest did not complete: received ${received} of ${total ?? "an unknown number of"} studies`;
  }
  if (meta.source !== run.source) return "meta.source does not name the API ingest that completed";
  const expected = apiSnapshotDate(db, run.startedAt?.slice(0, 10) ?? "");
  if (
    meta.snapshot_date !== expected.snapshotDate ||
    meta.snapshot_date_basis !== expected.snapshotDateBasis
  ) {
    return `meta.snapshot_date ${meta.snapshot_date} (${meta.snapshot_date_basis}) is not the date the records and the API ingest's start (${run.startedAt}) give: ${expected.snapshotDate} (${expected.snapshotDateBasis})`;
  }
  return undefined;
}

/** Every count the product states, recounted from the rows; and the facts the product promises. */
function reconcile(
  db: Database.Database,
  meta: Record<string, string>,
  tables: readonly TableInfo[],
): Check[] {
  const checks: Check[] = [];
  const add = (check: string, expected: unknown, actual: unknown) =>
    checks.push({
      check,
      expected: String(expected),
      actual: String(actual),
      ok: String(expected) === String(actual),
    });
  const rowsOf = (table: string) =>
    (db.prepare(`SELECT count(*) AS n FROM ${id(table)}`).get() as { n: number }).n;
  const names = new Set(tables.map((t) => t.name));
  for (const table of ["studies", "study_summaries", "study_phases"]) {
    if (!names.has(table)) add(`table ${table} exists`, "yes", "no");
  }
  if (checks.length > 0) return checks;

  for (const name of CLINICAL_COUNTS) {
    const recorded = Number(meta[name]);
    add(
      `meta.${name} is a count`,
      "integer ≥ 0",
      Number.isInteger(recorded) && recorded >= 0 ? "integer ≥ 0" : meta[name],
    );
  }
  add("meta.studies = rows of studies", meta.studies, rowsOf("studies"));
  add("meta.studies = rows of study_summaries", meta.studies, rowsOf("study_summaries"));
  add("meta.studies = rows of studies_fts", meta.studies, rowsOf("studies_fts"));
  const sums = db
    .prepare(
      `SELECT coalesce(sum(endpoints), 0) AS endpoints, coalesce(sum(measurements), 0) AS measurements,
         coalesce(sum(analyses), 0) AS analyses FROM studies`,
    )
    .get() as Record<string, number>;
  const fromSummaries = db
    .prepare(
      `SELECT coalesce(sum(json_extract(summary, '$.counts.endpoints')), 0) AS endpoints,
         coalesce(sum(json_extract(summary, '$.counts.measurements')), 0) AS measurements,
         coalesce(sum(json_extract(summary, '$.counts.analyses')), 0) AS analyses FROM study_summaries`,
    )
    .get() as Record<string, number>;
  for (const name of ["endpoints", "measurements", "analyses"] as const) {
    add(`meta.${name} = sum of studies.${name}`, meta[name], sums[name]);
    add(`meta.${name} = sum of the summaries' ${name}`, meta[name], fromSummaries[name]);
  }
  const orphans = db
    .prepare(
      `SELECT (SELECT count(*) FROM study_summaries WHERE study_id NOT IN (SELECT id FROM studies)) +
         (SELECT count(*) FROM study_phases WHERE study_id NOT IN (SELECT id FROM studies)) AS n`,
    )
    .get() as { n: number };
  add("summaries and phases belong to a study", 0, orphans.n);
  if (names.has("study_more_outcomes")) {
    add("meta.studies = rows of study_more_outcomes", meta.studies, rowsOf("study_more_outcomes"));
  }
  const rule = RULE_COLUMNS[meta.selection_rule || "start-date"];
  if (!rule) {
    add("meta.selection_rule is known", Object.keys(RULE_COLUMNS).join(" or "), meta.selection_rule);
  } else {
    const early = db
      .prepare(
        `SELECT count(*) AS n FROM studies WHERE ${rule.column} IS NULL OR ${rule.column} = '' OR ${rule.column} < ?`,
      )
      .get(STARTED_ON_OR_AFTER) as { n: number };
    add(
      `every study ${rule.says} on or after ${STARTED_ON_OR_AFTER} (rule ${meta.selection_rule || "start-date"})`,
      "0 studies before",
      `${early.n} studies before`,
    );
  }
  const duplicates = db.prepare("SELECT count(*) - count(DISTINCT nct_id) AS n FROM studies").get() as {
    n: number;
  };
  add("one row per NCT number", 0, duplicates.n);
  return checks;
}

interface TableInfo {
  name: string;
  sql: string;
  rows: number;
  columns: { name: string; type: string; notnull: boolean; pk: number }[];
  withoutRowid: boolean;
}

/** Quotes an SQL identifier. */
const id = (name: string) => `"${name.replaceAll('"', '""')}"`;

/** One CSV field (RFC 4180): NULL is empty, text is quoted when it must be, blobs are hex. */
function csvField(value: unknown): string {
  if (value === null || value === undefined) return "";
  if (Buffer.isBuffer(value)) return value.toString("hex");
  const text = typeof value === "bigint" ? value.toString() : String(value);
  return /[",\r\n]/.test(text) || text !== text.trim() ? `"${text.replaceAll('"', '""')}"` : text;
}

/** Tables to export: real tables only, not SQLite's own, not virtual (FTS) tables nor their shadow tables. */
function exportableTables(db: Database.Database): TableInfo[] {
  const all = db.prepare("SELECT name, sql FROM sqlite_master WHERE type = 'table' ORDER BY name").all() as {
    name: string;
    sql: string | null;
  }[];
  const virtual = all.filter((t) => /^CREATE\s+VIRTUAL\s+TABLE/i.test(t.sql ?? "")).map((t) => t.name);
  return all
    .filter(
      (t) =>
        !t.name.startsWith("sqlite_") &&
        !virtual.includes(t.name) &&
        !virtual.some((name) => t.name.startsWith(`${name}_`)),
    )
    .map((t) => {
      const columns = (
        db.prepare(`PRAGMA table_info(${id(t.name)})`).all() as {
          name: string;
          type: string;
          notnull: number;
          pk: number;
        }[]
      ).map((c) => ({ name: c.name, type: c.type, notnull: c.notnull === 1, pk: c.pk }));
      const { rows } = db.prepare(`SELECT count(*) AS rows FROM ${id(t.name)}`).get() as { rows: number };
      return {
        name: t.name,
        sql: t.sql ?? "",
        rows,
        columns,
        withoutRowid: /\)\s*WITHOUT\s+ROWID\s*;?\s*$/i.test(t.sql ?? ""),
      };
    });
}

/** Streams a table to a CSV file in a stable order (rowid, or the primary key), never holding it whole. */
function exportCsv(db: Database.Database, table: TableInfo, target: string): void {
  const pk = table.columns.filter((c) => c.pk > 0).sort((a, b) => a.pk - b.pk);
  const order = table.withoutRowid ? pk.map((c) => id(c.name)).join(", ") : "rowid";
  const statement = db.prepare(`SELECT * FROM ${id(table.name)} ORDER BY ${order}`).raw(true);
  const fd = fs.openSync(target, "w");
  try {
    let buffer = `${table.columns.map((c) => csvField(c.name)).join(",")}\r\n`;
    for (const row of statement.iterate() as Iterable<unknown[]>) {
      buffer += `${row.map(csvField).join(",")}\r\n`;
      if (buffer.length > 1 << 20) {
        fs.writeSync(fd, buffer);
        buffer = "";
      }
    }
    fs.writeSync(fd, buffer);
  } finally {
    fs.closeSync(fd);
  }
}

function schemaMarkdown(tables: readonly TableInfo[]): string {
  const lines = ["# Schema", "", "Every table of the snapshot, as exported to `csv/<table>.csv`.", ""];
  for (const table of tables) {
    lines.push(
      `## ${table.name} (${table.rows} rows)`,
      "",
      "| column | type | not null | primary key |",
      "|---|---|---|---|",
    );
    for (const c of table.columns) {
      lines.push(
        `| ${c.name} | ${c.type || "(any)"} | ${c.notnull ? "yes" : "no"} | ${c.pk > 0 ? c.pk : ""} |`,
      );
    }
    lines.push("");
  }
  return lines.join("\n");
}

/**
 * Builds the clinical product's entries from a full ingest, in `workDir` (large files are written
 * there and streamed into the archive). The validation must pass, or the product is not built.
 */
export function clinicalSnapshot(dbPath: string, workDir: string, dictionaryPath: string): ClinicalBuild {
  if (!fs.existsSync(dbPath))
    return { unbuildable: `no clinical database at CLINICAL_TRIALS_DB (${dbPath})` };
  const db = new Database(dbPath, { readonly: true, fileMustExist: true });
  try {
    // An older layout is one the service refuses to query: the product does not sell it either.
    const layout = db.pragma("user_version", { simple: true }) as number;
    if (layout !== SCHEMA_VERSION) {
      return {
        unbuildable: `the clinical database has schema ${layout}, this build reads ${SCHEMA_VERSION}: rebuild it with utility402 ingest clinical-trials`,
      };
    }
    let meta: Record<string, string>;
    try {
      meta = Object.fromEntries(
        (db.prepare("SELECT key, value FROM meta").all() as { key: string; value: string }[]).map((r) => [
          r.key,
          r.value,
        ]),
      );
    } catch {
      return { unbuildable: "the clinical database has no meta table (not built by the ingest)" };
    }
    if (meta.kind !== "full") {
      return {
        unbuildable: `the clinical database holds a ${meta.kind ?? "unknown"} ingest; the product is built only from a full ingest`,
      };
    }
    const snapshotDate = meta.snapshot_date ?? "";
    if (!/^\d{4}-\d{2}-\d{2}$/.test(snapshotDate)) {
      throw new Error(`meta.snapshot_date "${snapshotDate}" is not a date (YYYY-MM-DD)`);
    }

    const incomplete = incompleteIngest(db, meta);
    if (incomplete) return { unbuildable: incomplete };
    const unsellable = unsellableSource(meta);
    if (unsellable) return { unbuildable: unsellable };

    const tables = exportableTables(db);
    const checks = reconcile(db, meta, tables);
    checks.push({
      check: "the API ingest completed",
      expected: "every page received",
      actual: "every page received",
      ok: true,
    });
    const counts = Object.fromEntries(CLINICAL_COUNTS.map((name) => [name, Number(meta[name])])) as Record<
      (typeof CLINICAL_COUNTS)[number],
      number
    >;
    const integrity = (db.pragma("integrity_check") as { integrity_check: string }[]).map(
      (r) => r.integrity_check,
    );
    checks.push({
      check: "PRAGMA integrity_check",
      expected: "ok",
      actual: integrity.join("; "),
      ok: integrity.join() === "ok",
    });
    const foreignKeys = db.pragma("foreign_key_check") as unknown[];
    checks.push({
      check: "PRAGMA foreign_key_check",
      expected: "0 violations",
      actual: `${foreignKeys.length} violations`,
      ok: foreignKeys.length === 0,
    });
    const failed = checks.filter((c) => !c.ok);
    if (failed.length > 0) {
      throw new Error(
        `the clinical snapshot fails validation: ${failed.map((c) => `${c.check} (expected ${c.expected}, got ${c.actual})`).join("; ")}`,
      );
    }

    fs.mkdirSync(path.join(workDir, "csv"), { recursive: true });
    const snapshot = path.join(workDir, "clinical-trials.sqlite");
    fs.rmSync(snapshot, { force: true });
    // VACUUM INTO writes a consistent, compacted copy even while the ingest's WAL holds pages.
    db.prepare("VACUUM INTO ?").run(snapshot);
    const entries: ArchiveEntry[] = [{ path: "data/clinical-trials.sqlite", file: snapshot }];
    for (const table of tables) {
      const target = path.join(workDir, "csv", `${table.name}.csv`);
      exportCsv(db, table, target);
      entries.push({ path: `data/csv/${table.name}.csv`, file: target });
    }

    const provenance = {
      sourceUrl: meta.source_url || null,
      registry: meta.source_is_registry === "yes",
      otherSourceAllowedByOperator: meta.other_source_allowed === "yes",
      selectionRule: meta.selection_rule || "start-date",
      ruleCounts: meta.rule_counts ? (JSON.parse(meta.rule_counts) as Record<string, number | null>) : null,
      skippedRecords: Number(meta.skipped_records ?? 0),
      ingestStartedAt: meta.ingest_started_at ?? null,
    };
    const dateBasis = meta.snapshot_date_basis ?? null;
    const copies = recordsAsOf(db);
    const copiesText = copies
      ? `the records' registry copies (record_as_of) range from ${copies.oldest} to ${copies.newest}`
      : "no record states its registry copy date";
    const validation = {
      product: "clinical-trials-outcomes-post-2020",
      snapshotDate,
      snapshotDateBasis: dateBasis,
      recordsAsOf: copies,
      source: meta.source ?? null,
      provenance,
      counts,
      tables: Object.fromEntries(tables.map((t) => [t.name, t.rows])),
      checks,
      valid: true,
    };
    const report = [
      "# Validation report",
      "",
      `Snapshot of ${snapshotDate}${meta.source ? ` from ${meta.source}` : ""}.`,
      "",
      `Snapshot date basis: ${dateBasis ?? "not recorded"}; ${copiesText}.`,
      "",
      `Source URL: ${provenance.sourceUrl ?? "none recorded"} (${provenance.registry ? "the ClinicalTrials.gov registry" : "NOT the ClinicalTrials.gov registry; sold by the operator's explicit --allow-other-source"}).`,
      `Selection rule: ${provenance.selectionRule}; each rule's count when the ingest started: ${
        provenance.ruleCounts
          ? Object.entries(provenance.ruleCounts)
              .map(([name, count]) => `${name} ${count ?? "not given"}`)
              .join(", ")
          : "not recorded"
      }. Records skipped for want of an NCT number: ${provenance.skippedRecords}.`,
      "",
      "| count | value |",
      "|---|---|",
      ...CLINICAL_COUNTS.map((name) => `| ${name} | ${counts[name]} |`),
      "",
      "| check | expected | actual | result |",
      "|---|---|---|---|",
      ...checks.map((c) => `| ${c.check} | ${c.expected} | ${c.actual} | ${c.ok ? "pass" : "FAIL"} |`),
      "",
      "| table | rows |",
      "|---|---|",
      ...tables.map((t) => `| ${t.name} | ${t.rows} |`),
      "",
    ].join("\n");
    entries.push(
      { path: "VALIDATION.md", data: Buffer.from(report) },
      { path: "validation.json", data: Buffer.from(`${JSON.stringify(validation, null, 2)}\n`) },
      { path: "data/schema.sql", data: Buffer.from(`${tables.map((t) => `${t.sql};`).join("\n\n")}\n`) },
      { path: "SCHEMA.md", data: Buffer.from(schemaMarkdown(tables)) },
    );
    if (fs.existsSync(dictionaryPath)) {
      entries.push({ path: "DATA-DICTIONARY.md", data: fs.readFileSync(dictionaryPath) });
    }
    const changes = [
      `Snapshot of ${snapshotDate}: ${counts.studies} studies, ${counts.endpoints} endpoints, ` +
        `${counts.measurements} measurements and ${counts.analyses} analyses, each count reconciled with the rows (VALIDATION.md).`,
      `Source: ${meta.source ?? "the ClinicalTrials.gov API v2"}.`,
      `Date basis: ${dateBasis ?? "not recorded"}; ${copiesText}.`,
    ];
    return { version: snapshotDate, entries, details: { snapshotDate, counts }, changes };
  } finally {
    db.close();
  }
}
