import { createHash } from "node:crypto";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import Database from "better-sqlite3";
import yauzl from "yauzl";

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
  const others = entries.filter((entry) => entry.path !== "MANIFEST.json");
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

export const CLINICAL_COUNTS = { studies: 3, endpoints: 4, measurements: 6, analyses: 2 };

/**
 * A small clinical index shaped like the ingest's: the four tables, a WITHOUT ROWID table, an FTS5
 * index (virtual, with shadow tables that must not be exported) and the meta table.
 */
export function createClinicalDb(
  file: string,
  kind: "full" | "sample" = "full",
  counts = CLINICAL_COUNTS,
): void {
  const db = new Database(file);
  db.exec(`
    CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT);
    CREATE TABLE studies (nct_id TEXT PRIMARY KEY, title TEXT NOT NULL, start_date TEXT, enrollment INTEGER);
    CREATE TABLE endpoints (id INTEGER PRIMARY KEY, nct_id TEXT NOT NULL REFERENCES studies(nct_id), title TEXT, kind TEXT);
    CREATE TABLE measurements (id INTEGER PRIMARY KEY, endpoint_id INTEGER NOT NULL REFERENCES endpoints(id), arm TEXT, value REAL, unit TEXT);
    CREATE TABLE analyses (id INTEGER PRIMARY KEY, endpoint_id INTEGER NOT NULL REFERENCES endpoints(id), method TEXT, p_value REAL);
    CREATE TABLE conditions (nct_id TEXT NOT NULL, condition TEXT NOT NULL, PRIMARY KEY (condition, nct_id)) WITHOUT ROWID;
    CREATE VIRTUAL TABLE studies_fts USING fts5(title, content='studies');
  `);
  const study = db.prepare("INSERT INTO studies VALUES (?, ?, ?, ?)");
  study.run("NCT04000001", "Drug A versus placebo in adults, phase 3", "2020-03-01", 420);
  study.run("NCT04000002", 'A "quoted" title, with a comma\nand a newline', "2021-07-15", null);
  study.run("NCT04000003", "Device B for knee pain", "2022-01-10", 80);
  const endpoint = db.prepare("INSERT INTO endpoints VALUES (?, ?, ?, ?)");
  endpoint.run(1, "NCT04000001", "Change in HbA1c at week 26", "primary");
  endpoint.run(2, "NCT04000001", "Body weight", "secondary");
  endpoint.run(3, "NCT04000002", "Overall survival", "primary");
  endpoint.run(4, "NCT04000003", "Pain score (VAS)", "primary");
  const measurement = db.prepare("INSERT INTO measurements VALUES (?, ?, ?, ?, ?)");
  [
    [1, 1, "Drug A", -1.1, "%"],
    [2, 1, "Placebo", -0.2, "%"],
    [3, 2, "Drug A", -2.5, "kg"],
    [4, 3, "Drug A", 14.2, "months"],
    [5, 4, "Device B", 3.1, "cm"],
    [6, 4, "Sham", 5.4, "cm"],
  ].forEach((row) => {
    measurement.run(...row);
  });
  db.prepare("INSERT INTO analyses VALUES (?, ?, ?, ?)").run(1, 1, "ANCOVA", 0.0001);
  db.prepare("INSERT INTO analyses VALUES (?, ?, ?, ?)").run(2, 4, "t-test", 0.03);
  db.prepare("INSERT INTO conditions VALUES (?, ?)").run("NCT04000003", "Osteoarthritis, Knee");
  db.prepare("INSERT INTO conditions VALUES (?, ?)").run("NCT04000001", "Diabetes Mellitus, Type 2");
  db.exec("INSERT INTO studies_fts(studies_fts) VALUES ('rebuild')");
  const meta = db.prepare("INSERT INTO meta VALUES (?, ?)");
  meta.run("kind", kind);
  meta.run("snapshot_date", "2026-11-01");
  meta.run("source", "ClinicalTrials.gov API v2 (test fixture)");
  for (const [key, value] of Object.entries(counts)) meta.run(key, String(value));
  db.close();
}
