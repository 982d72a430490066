import fs from "node:fs";
import path from "node:path";
import Database from "better-sqlite3";
import type { ArchiveEntry } from "./zip.ts";

/**
 * The clinical-trials-outcomes-post-2020 product: a snapshot of the clinical index built by the
 * ingest (CLINICAL_TRIALS_DB), packaged as the SQLite database, one CSV per table, the data
 * dictionary and a validation report. Only a full ingest is sold: the database's `meta` table says
 * `kind = 'full'`; a sample ingest is refused.
 */

/** The four counts the product promises, as the ingest records them in `meta`. */
export const CLINICAL_COUNTS = ["studies", "endpoints", "measurements", "analyses"] as const;

export type ClinicalBuild =
  | { unbuildable: string }
  | { version: string; entries: ArchiveEntry[]; details: Record<string, unknown> };

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

    const tables = exportableTables(db);
    const rowsOf = new Map(tables.map((t) => [t.name, t.rows]));
    const checks: { check: string; expected: string; actual: string; ok: boolean }[] = [];
    const counts: Record<string, number> = {};
    for (const name of CLINICAL_COUNTS) {
      const recorded = Number(meta[name]);
      counts[name] = recorded;
      const okNumber = Number.isInteger(recorded) && recorded >= 0;
      checks.push({
        check: `meta.${name} is a count`,
        expected: "integer ≥ 0",
        actual: String(meta[name]),
        ok: okNumber,
      });
      const actual = rowsOf.get(name);
      if (actual !== undefined) {
        checks.push({
          check: `rows of table ${name} = meta.${name}`,
          expected: String(recorded),
          actual: String(actual),
          ok: actual === recorded,
        });
      }
    }
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

    const validation = {
      product: "clinical-trials-outcomes-post-2020",
      snapshotDate,
      source: meta.source ?? null,
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
    return { version: snapshotDate, entries, details: { snapshotDate, counts } };
  } finally {
    db.close();
  }
}
