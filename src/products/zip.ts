import { createHash } from "node:crypto";
import fs from "node:fs";
import { pipeline } from "node:stream/promises";
import yazl from "yazl";

/** One file of an archive: its bytes in memory, or a file on disk (streamed, for large data). */
export type ArchiveEntry = { path: string; data: Buffer } | { path: string; file: string };

export interface ManifestFile {
  path: string;
  size: number;
  sha256: string;
}

/**
 * The timestamp of every entry. DOS times are local wall-clock fields, so the date is built from
 * local fields: the stored bytes are the same in every time zone.
 */
const FIXED_MTIME = new Date(2020, 0, 1, 0, 0, 0);
/** zlib level 9 gives the same bytes for the same input with the same zlib. */
const COMPRESSION_LEVEL = 9;

/** An entry whose content starts with "#!" is an executable script; everything else is plain. */
const modeOf = (head: Buffer) => (head[0] === 0x23 && head[1] === 0x21 ? 0o100755 : 0o100644);

function assertArchivePath(entryPath: string): void {
  if (
    entryPath === "" ||
    entryPath.startsWith("/") ||
    entryPath.includes("\\") ||
    entryPath.split("/").some((part) => part === "" || part === "." || part === "..")
  ) {
    throw new Error(`invalid archive path "${entryPath}"`);
  }
}

/** size and sha256 of an entry, streaming files from disk. */
export async function describeEntry(entry: ArchiveEntry): Promise<ManifestFile> {
  if ("data" in entry) {
    return {
      path: entry.path,
      size: entry.data.length,
      sha256: createHash("sha256").update(entry.data).digest("hex"),
    };
  }
  return { path: entry.path, ...(await hashFile(entry.file)) };
}

export async function hashFile(file: string): Promise<{ size: number; sha256: string }> {
  const hash = createHash("sha256");
  let size = 0;
  for await (const chunk of fs.createReadStream(file, { highWaterMark: 1 << 20 })) {
    hash.update(chunk as Buffer);
    size += (chunk as Buffer).length;
  }
  return { size, sha256: hash.digest("hex") };
}

async function headOf(entry: ArchiveEntry): Promise<Buffer> {
  if ("data" in entry) return entry.data.subarray(0, 2);
  const handle = await fs.promises.open(entry.file, "r");
  try {
    const head = Buffer.alloc(2);
    const { bytesRead } = await handle.read(head, 0, 2, 0);
    return head.subarray(0, bytesRead);
  } finally {
    await handle.close();
  }
}

/**
 * Writes a deterministic ZIP: entries sorted by path (byte order), one fixed timestamp without the
 * extended-time field, fixed permissions, fixed compression. The same entries give the same bytes.
 */
export async function writeDeterministicZip(entries: readonly ArchiveEntry[], target: string): Promise<void> {
  const sorted = [...entries].sort((a, b) => Buffer.compare(Buffer.from(a.path), Buffer.from(b.path)));
  for (let i = 0; i < sorted.length; i++) {
    assertArchivePath((sorted[i] as ArchiveEntry).path);
    if (i > 0 && sorted[i]?.path === sorted[i - 1]?.path)
      throw new Error(`duplicate entry ${sorted[i]?.path}`);
  }
  const zip = new yazl.ZipFile();
  for (const entry of sorted) {
    const options = {
      mtime: FIXED_MTIME,
      forceDosTimestamp: true,
      mode: modeOf(await headOf(entry)),
      compressionLevel: COMPRESSION_LEVEL,
    };
    if ("data" in entry) zip.addBuffer(entry.data, entry.path, options);
    else {
      const { size } = await fs.promises.stat(entry.file);
      const file = entry.file;
      zip.addReadStreamLazy(entry.path, { ...options, size }, (callback) =>
        callback(null, fs.createReadStream(file)),
      );
    }
  }
  zip.end();
  await pipeline(zip.outputStream, fs.createWriteStream(target));
}
