import fs from "node:fs";
import { fileURLToPath } from "node:url";
import { closeAfterWriting, openForWriting } from "./database.ts";
import { ingestFromDirectory } from "./ingest.ts";

/** The five real study records the repository ships (ClinicalTrials.gov records are US public domain). */
export const SAMPLE_DIR = fileURLToPath(new URL("../../../data/clinical-trials-sample/", import.meta.url));

/**
 * Builds the sample database at `file` from the shipped records, so the operation answers out of
 * the box (every response says `sample: true`). Written beside the target and renamed into place,
 * so a reader never opens a half-built file.
 */
export function buildSampleDatabase(file: string): void {
  const partial = `${file}.${process.pid}.${Date.now()}.partial`;
  try {
    const db = openForWriting(partial);
    try {
      ingestFromDirectory(db, SAMPLE_DIR);
    } finally {
      closeAfterWriting(db);
    }
    fs.renameSync(partial, file);
  } finally {
    fs.rmSync(partial, { force: true });
  }
}
