import { createHash } from "node:crypto";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import Database from "better-sqlite3";
import yauzl from "yauzl";
import {
  closeAfterWriting,
  openForWriting,
  readMeta,
} from "../../src/operations/clinical-trials-query/database.ts";
import { ingestFromApi } from "../../src/operations/clinical-trials-query/ingest.ts";
import { buildSampleDatabase, SAMPLE_DIR } from "../../src/operations/clinical-trials-query/sample.ts";
import type { StudyRecord } from "../../src/operations/clinical-trials-query/summary.ts";
import { syntheticStudies } from "../helpers/synthetic-trials.ts";

export interface ZipEntryInfo {
  path: string;
  data: Buffer;
  mode: number;
  dosDate: number;
  dosTime: number;
  compressionMethod: number;
}

/** Every entry of a ZIP (archive or bytes) with its content, in archive order. */
export function readZip(source: string | Buffer): Promise<ZipEntryInfo[]> {
  return new Promise((resolve, reject) => {
    const onOpen = (error: Error | null, zip?: yauzl.ZipFile) => {
      if (error || !zip) return reject(error);
      const entries: ZipEntryInfo[] = [];
      zip.on("error", reject);
      zip.on("end", () => resolve(entries));
      zip.on("entry", (entry: yauzl.Entry) => {
        zip.openReadStream(entry, (streamError, stream) => {
          if (streamError || !stream) return reject(streamError);
          const chunks: Buffer[] = [];
          stream.on("data", (chunk: Buffer) => chunks.push(chunk));
          stream.on("error", reject);
          stream.on("end", () => {
            entries.push({
              path: entry.fileName,
              data: Buffer.concat(chunks),
              mode: entry.externalFileAttributes >>> 16,
              dosDate: entry.lastModFileDate,
              dosTime: entry.lastModFileTime,
              compressionMethod: entry.compressionMethod,
            });
            zip.readEntry();
          });
        });
      });
      zip.readEntry();
    };
    if (typeof source === "string") yauzl.open(source, { lazyEntries: true }, onOpen);
    else yauzl.fromBuffer(source, { lazyEntries: true }, onOpen);
  });
}

export const sha256 = (data: Buffer) => createHash("sha256").update(data).digest("hex");

/** Checks an archive against its MANIFEST.json; returns the manifest. Throws with the first difference. */
export async function checkAgainstManifest(source: string | Buffer, product: string) {
  const entries = await readZip(source);
  const manifestEntry = entries.find((entry) => entry.path === "MANIFEST.json");
  if (!manifestEntry) throw new Error("no MANIFEST.json at the archive root");
  const manifest = JSON.parse(manifestEntry.data.toString("utf8")) as {
    product: string;
    version: string;
    files: { path: string; size: number; sha256: string }[];
  };
  if (manifest.product !== product) throw new Error(`manifest names ${manifest.product}`);
  const others = entries.filter((entry) => entry.path !== "MANIFEST.json" && entry.path !== "SHA256SUMS");
  const listed = manifest.files.map((file) => file.path);
  const present = others.map((entry) => entry.path).sort();
  if (JSON.stringify([...listed].sort()) !== JSON.stringify(present)) {
    throw new Error(`manifest lists ${listed.length} files, the archive holds ${present.length}`);
  }
  for (const file of manifest.files) {
    const entry = others.find((candidate) => candidate.path === file.path) as ZipEntryInfo;
    if (entry.data.length !== file.size || sha256(entry.data) !== file.sha256) {
      throw new Error(`${file.path} does not match its manifest line`);
    }
  }
  if (!others.some((entry) => entry.path === "README.md")) throw new Error("no README.md");
  // SHA256SUMS (what `sha256sum -c` reads) lists every other file, MANIFEST.json included.
  const sums = entries.find((entry) => entry.path === "SHA256SUMS");
  if (!sums) throw new Error("no SHA256SUMS");
  const lines = sums.data.toString("utf8").split("\n").filter(Boolean);
  const summed = lines.map((line) => {
    const match = /^([0-9a-f]{64}) {2}(.+)$/.exec(line);
    if (!match) throw new Error(`SHA256SUMS line "${line}" is not "<sha256>  <path>"`);
    const entry = entries.find((candidate) => candidate.path === match[2]);
    if (!entry || sha256(entry.data) !== match[1])
      throw new Error(`${match[2]} does not match its SHA256SUMS line`);
    return match[2] as string;
  });
  const expected = entries.map((entry) => entry.path).filter((name) => name !== "SHA256SUMS");
  if (JSON.stringify([...summed].sort()) !== JSON.stringify(expected.sort())) {
    throw new Error(`SHA256SUMS lists ${summed.length} files, the archive holds ${expected.length} others`);
  }
  return { manifest, entries };
}

/** Writes an archive's files into a fresh empty folder under the OS temp dir. */
export async function extractTo(source: string | Buffer): Promise<string> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "utility402-product-"));
  for (const entry of await readZip(source)) {
    const target = path.join(dir, entry.path);
    fs.mkdirSync(path.dirname(target), { recursive: true });
    fs.writeFileSync(target, entry.data, { mode: entry.mode & 0o777 });
  }
  return dir;
}

/**
 * The fixture ingest starts on INGEST_STARTED, early in the UTC day, and the registry's records it
 * receives are its copies of the day before (SNAPSHOT_DATE): the date the snapshot is sold as.
 */
export const INGEST_STARTED = "2026-11-01";
export const SNAPSHOT_DATE = "2026-10-31";

/** The real study records the repository ships that have results (the templates of synthetic studies). */
function templateStudies(): StudyRecord[] {
  return fs
    .readdirSync(SAMPLE_DIR)
    .filter((name) => name.endsWith(".json"))
    .sort()
    .map((name) => JSON.parse(fs.readFileSync(path.join(SAMPLE_DIR, name), "utf8")) as StudyRecord)
    .filter((study) => study.resultsSection !== undefined);
}

export type ClinicalFixture = "full" | "sample" | "sample-flagged-full" | "partial-flagged-full";

/**
 * A clinical database as the ingest writes it: "full" runs the real API ingest against a local
 * stand-in of the registry serving `studies` synthetic studies (started 2020 or later) in pages of
 * 5; "sample" is the five shipped records; "sample-flagged-full" is that sample with its meta
 * flag edited to "full"; "partial-flagged-full" is an API ingest stopped after its first page,
 * flagged "full". Returns the meta the database records.
 */
export async function createClinicalDb(
  file: string,
  kind: ClinicalFixture = "full",
  studies = 12,
): Promise<Record<string, string>> {
  if (kind === "sample" || kind === "sample-flagged-full") {
    buildSampleDatabase(file);
  } else {
    const all = [...syntheticStudies(templateStudies(), studies, 11, SNAPSHOT_DATE)];
    const pageSize = 5;
    const fakeRegistry = (async (input: URL | RequestInfo) => {
      const url = new URL(String(input));
      const from = Number(url.searchParams.get("pageToken") ?? 0);
      if (kind === "partial-flagged-full" && from > 0) return new Response("unavailable", { status: 400 });
      const next = from + pageSize < all.length ? String(from + pageSize) : undefined;
      const page = { studies: all.slice(from, from + pageSize), totalCount: all.length, nextPageToken: next };
      return Response.json(page);
    }) as typeof fetch;
    const db = openForWriting(file);
    try {
      await ingestFromApi(db, {
        apiUrl: "http://registry.test/api/v2/studies",
        // A stand-in of the registry: the operator's explicit word that it may be sold as the snapshot.
        allowOtherSource: true,
        pageSize,
        intervalMs: 0,
        retries: 0,
        fetch: fakeRegistry,
        now: () => new Date(`${INGEST_STARTED}T00:30:00Z`),
      }).catch((error) => {
        if (kind !== "partial-flagged-full") throw error;
      });
    } finally {
      closeAfterWriting(db);
    }
  }
  if (kind.endsWith("flagged-full"))
    editClinicalDb(file, "UPDATE meta SET value = 'full' WHERE key = 'kind'");
  const db = new Database(file, { readonly: true });
  try {
    return readMeta(db);
  } finally {
    db.close();
  }
}

/** Runs SQL on a clinical database (to break it the way a test needs). */
export function editClinicalDb(file: string, sql: string): void {
  const db = new Database(file);
  try {
    db.exec(sql);
  } finally {
    db.close();
  }
}

/** The four counts a clinical meta states, as numbers. */
export const countsOf = (meta: Record<string, string>) => ({
  studies: Number(meta.studies),
  endpoints: Number(meta.endpoints),
  measurements: Number(meta.measurements),
  analyses: Number(meta.analyses),
});
