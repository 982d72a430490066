/**
 * Issue 37: every answer names the version of each record it was built from, and the dataset's
 * "as of" date comes from the records themselves (never a date that understates their age).
 * The expected values are read from the raw registry JSON here, without the ingest's code.
 */
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  closeAfterWriting,
  openForReading,
  openForWriting,
  type TrialsDatabase,
} from "../../src/operations/clinical-trials-query/database.ts";
import { ingestFromDirectory } from "../../src/operations/clinical-trials-query/ingest.ts";
import { TrialsIndex } from "../../src/operations/clinical-trials-query/query.ts";
import { SAMPLE_DIR } from "../../src/operations/clinical-trials-query/sample.ts";
import {
  ClinicalTrialsQueryRequest,
  ClinicalTrialsQueryResponse,
} from "../../src/operations/clinical-trials-query/schema.ts";

// Raw registry JSON.
type Raw = any;
const readFolder = (dir: string): Raw[] =>
  fs
    .readdirSync(dir)
    .filter((name) => name.endsWith(".json"))
    .map((name) => JSON.parse(fs.readFileSync(path.join(dir, name), "utf8")));
const sample = readFolder(SAMPLE_DIR);

const versionHolder = (study: Raw) => study.derivedSection.miscInfoModule.versionHolder as string;

const dirs: string[] = [];
const databases: TrialsDatabase[] = [];
afterAll(() => {
  for (const db of databases) db.close();
  for (const dir of dirs) fs.rmSync(dir, { recursive: true, force: true });
});

function indexOf(studies: Raw[]): TrialsIndex {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "utility402-trials-version-"));
  dirs.push(dir);
  const records = path.join(dir, "records");
  fs.mkdirSync(records);
  fs.writeFileSync(path.join(records, "page.json"), JSON.stringify({ studies }));
  const file = path.join(dir, "trials.sqlite");
  const db = openForWriting(file);
  ingestFromDirectory(db, records, { now: () => new Date("2030-01-01T00:00:00Z") });
  closeAfterWriting(db);
  const reader = openForReading(file);
  databases.push(reader);
  return new TrialsIndex(reader);
}

describe("clinical-trials-query: the record version of every study, and the dataset's date", () => {
  let index: TrialsIndex;
  beforeAll(() => {
    index = indexOf(sample);
  });

  it("each recorded study states the registry version it was copied from (derivedSection.miscInfoModule.versionHolder)", () => {
    expect(sample.length).toBe(5);
    for (const study of sample) expect(versionHolder(study)).toMatch(/^\d{4}-\d{2}-\d{2}$/);
  });

  it("each item carries its record's version: the registry's copy date and its last update", () => {
    const output = ClinicalTrialsQueryResponse.parse(
      index.query(ClinicalTrialsQueryRequest.parse({ limit: 50 })),
    );
    expect(output.items).toHaveLength(5);
    for (const item of output.items) {
      const raw = sample.find((s) => s.protocolSection.identificationModule.nctId === item.nctId);
      const status = raw.protocolSection.statusModule;
      expect(item.recordVersion).toEqual({
        asOf: versionHolder(raw),
        lastUpdatePosted: status.lastUpdatePostDateStruct.date,
        lastUpdateSubmitted: status.lastUpdateSubmitDate,
      });
    }
  });

  it("the sample's date is its oldest record copy (2023-11-15): every record is at least that current", () => {
    const { dataset } = index;
    const copies = sample.map(versionHolder).sort();
    expect(copies[0]).toBe("2023-11-15");
    expect(dataset.snapshotDate).toBe(copies[0]);
    expect(dataset.snapshotDateBasis).toBe("record-as-of");
    expect(dataset.recordsAsOf).toEqual({ oldest: "2023-11-15", newest: "2024-06-10" });
    expect(dataset.snapshotDateMeaning).toContain("oldest");
    expect(dataset.description).toContain("as of 2023-11-15");
    expect(dataset.description).toContain("2024-06-10");
    expect(dataset.description).not.toContain("2022-11-21");
  });

  it("for every subset of the sample, with any of its records undated, the date is the oldest bound any record gives", () => {
    // 3^5 - 1 cases: each record left out, loaded with its copy date, or loaded without one (then
    // its last update posted bounds its copy). The expected date is computed from the raw JSON.
    const updated = (study: Raw) =>
      study.protocolSection.statusModule.lastUpdatePostDateStruct.date as string;
    for (let code = 1; code < 3 ** sample.length; code++) {
      const states = sample.map((_, i) => Math.floor(code / 3 ** i) % 3);
      const chosen = sample.flatMap((study, i) => {
        if (states[i] === 0) return [];
        if (states[i] === 1) return [study];
        const { derivedSection: _, ...undated } = study;
        return [undated];
      });
      const bounds = sample.flatMap((study, i) =>
        states[i] === 0
          ? []
          : [{ date: states[i] === 1 ? versionHolder(study) : updated(study), dated: states[i] === 1 }],
      );
      const low = bounds.reduce((a, b) => (b.date < a.date || (b.date === a.date && b.dated) ? b : a));
      const copies = bounds
        .filter((b) => b.dated)
        .map((b) => b.date)
        .sort();
      const undated = bounds.length - copies.length;
      const { dataset } = indexOf(chosen);
      expect(dataset.snapshotDate, `case ${code}`).toBe(low.date);
      expect(dataset.snapshotDateBasis, `case ${code}`).toBe(
        low.dated ? "record-as-of" : "last-update-posted",
      );
      expect(dataset.recordsAsOf, `case ${code}`).toEqual(
        copies.length ? { oldest: copies[0], newest: copies.at(-1) } : null,
      );
      if (copies.length && undated) {
        expect(dataset.description, `case ${code}`).toContain(
          `${undated} ${undated === 1 ? "study states" : "studies state"} no copy date`,
        );
      }
    }
  });

  it("records without a registry version fall back to their oldest update, and say so", () => {
    const stripped = sample.map((study) => {
      const { derivedSection: _, ...rest } = study;
      return rest;
    });
    const { dataset } = indexOf(stripped);
    const updates = sample.map((s) => s.protocolSection.statusModule.lastUpdatePostDateStruct.date).sort();
    expect(dataset.snapshotDate).toBe(updates[0]);
    expect(dataset.recordsAsOf).toBeNull();
    expect(dataset.snapshotDateMeaning).toMatch(/last update posted/i);
    expect(dataset.description).toContain("no study states its registry copy date");
    const item = indexOf(stripped).query(ClinicalTrialsQueryRequest.parse({ limit: 1 })).items[0];
    expect(item?.recordVersion.asOf).toBeNull();
  });

  it("a record without a copy date never makes a folder look newer", () => {
    // One record keeps its copy date (2023-11-15); another, undated, was updated later than that.
    const dated = sample.find((s) => versionHolder(s) === "2023-11-15");
    const undated = structuredClone(sample.find((s) => versionHolder(s) === "2024-06-10"));
    delete undated.derivedSection;
    undated.protocolSection.statusModule.lastUpdatePostDateStruct.date = "2024-02-01";
    const { dataset } = indexOf([dated, undated]);
    expect(dataset.snapshotDate).toBe("2023-11-15");
    expect(dataset.snapshotDateBasis).toBe("record-as-of");
    expect(dataset.recordsAsOf).toEqual({ oldest: "2023-11-15", newest: "2023-11-15" });
    // The undated record updated before the dated copy: only its update bounds it.
    undated.protocolSection.statusModule.lastUpdatePostDateStruct.date = "2023-01-01";
    expect(indexOf([dated, undated]).dataset).toMatchObject({
      snapshotDate: "2023-01-01",
      snapshotDateBasis: "last-update-posted",
    });
  });
});
