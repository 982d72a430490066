/**
 * docs/clinical-trials-data-dictionary.md (shipped as DATA-DICTIONARY.md in the clinical snapshot
 * product) against a real database built by the ingest: every table, column and meta key, the
 * schema version, and every field of a query item (with includeSecondary) must be named there.
 */
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  closeAfterWriting,
  openForReading,
  openForWriting,
  SCHEMA_VERSION,
  type TrialsDatabase,
} from "../../src/operations/clinical-trials-query/database.ts";
import { ingestFromDirectory } from "../../src/operations/clinical-trials-query/ingest.ts";
import { TrialsIndex } from "../../src/operations/clinical-trials-query/query.ts";
import { SAMPLE_DIR } from "../../src/operations/clinical-trials-query/sample.ts";
import { ClinicalTrialsQueryRequest } from "../../src/operations/clinical-trials-query/schema.ts";

const DICTIONARY = fs.readFileSync(
  new URL("../../docs/clinical-trials-data-dictionary.md", import.meta.url),
  "utf8",
);
/** Every identifier written in code spans (`a`, `groups [{ id, title }]`): what the dictionary names. */
const named = new Set(
  [...DICTIONARY.matchAll(/`([^`]+)`/g)].flatMap((span) => (span[1] as string).match(/[A-Za-z_]\w*/g) ?? []),
);
/** The tables the dictionary gives a section to. */
const sections = new Set([...DICTIONARY.matchAll(/^## `(\w+)`/gm)].map((heading) => heading[1]));

let dir: string;
let db: TrialsDatabase;
beforeAll(() => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), "utility402-trials-dictionary-"));
  const file = path.join(dir, "trials.sqlite");
  const writer = openForWriting(file);
  ingestFromDirectory(writer, SAMPLE_DIR);
  closeAfterWriting(writer);
  db = openForReading(file);
});
afterAll(() => {
  db?.close();
  fs.rmSync(dir, { recursive: true, force: true });
});

const missing = (names: Iterable<string>) => [...new Set(names)].filter((name) => !named.has(name)).sort();

describe("the clinical-trials data dictionary", () => {
  it("has a section for every table and names every column", () => {
    const tables = (
      db
        .prepare(
          "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' AND name NOT LIKE 'studies_fts_%'",
        )
        .all() as { name: string }[]
    ).map((row) => row.name);
    expect(tables).toContain("study_more_outcomes");
    expect(tables.filter((table) => !sections.has(table))).toEqual([]);
    const columns = tables.flatMap((table) =>
      (db.prepare(`PRAGMA table_info(${table})`).all() as { name: string }[]).map((column) => column.name),
    );
    expect(columns).toContain("results_first_posted");
    expect(missing(columns)).toEqual([]);
  });

  it("names every meta key the ingest writes", () => {
    const keys = (db.prepare("SELECT key FROM meta").all() as { key: string }[]).map((row) => row.key);
    expect(keys).toEqual(expect.arrayContaining(["source_url", "selection_rule", "rule_counts"]));
    expect(missing(keys)).toEqual([]);
  });

  it("states the schema version the code writes", () => {
    expect(db.pragma("user_version", { simple: true })).toBe(SCHEMA_VERSION);
    expect(DICTIONARY.replace(/\s+/g, " ")).toContain(`currently **${SCHEMA_VERSION}**`);
  });

  it("names every field of a query item, down to analyses and denominators", () => {
    const { items } = new TrialsIndex(db).query(
      ClinicalTrialsQueryRequest.parse({ includeSecondary: true, limit: 50 }),
    );
    expect(items.length).toBe(5);
    const fields = new Set<string>();
    const add = (value: unknown) => {
      if (Array.isArray(value)) for (const entry of value) add(entry);
      else if (value !== null && typeof value === "object") {
        for (const [key, inner] of Object.entries(value)) {
          fields.add(key);
          add(inner);
        }
      }
    };
    add(items);
    for (const field of ["secondaryOutcomes", "classDenominators", "ciNumSides", "pValueRaw", "n"]) {
      expect(fields).toContain(field);
    }
    expect(missing(fields)).toEqual([]);
  });
});
