import fs from "node:fs";
import path from "node:path";
import { z } from "zod";
import type { FileBody } from "../contract/operation.ts";
import { Problem } from "../problem.ts";
import { hashFile } from "./zip.ts";

/** What the builder writes beside each archive (`<slug>.json`): the release a download serves. */
export const ReleaseDescriptor = z.object({
  product: z.string(),
  version: z.string(),
  /**
   * The archive's file name inside the release folder: `<slug>-<version>-<sha256 prefix>.zip`. The
   * content is in the name, so a rebuild never overwrites an archive a sold payment still points to.
   */
  file: z.string().regex(/^[A-Za-z0-9._-]+\.zip$/),
  size: z.number().int().min(0),
  sha256: z.string().regex(/^[0-9a-f]{64}$/),
  /** sha256 of the archive's MANIFEST.json: equal manifests give byte-identical archives. */
  manifestSha256: z.string().regex(/^[0-9a-f]{64}$/),
  /** sha256 of what a repository product is built from: unchanged inputs need no rebuild. */
  inputsSha256: z
    .string()
    .regex(/^[0-9a-f]{64}$/)
    .optional(),
  /** Facts the catalog shows (the clinical snapshot's date and counts). */
  details: z.record(z.string(), z.unknown()).optional(),
});
export type ReleaseDescriptor = z.infer<typeof ReleaseDescriptor>;

export const releaseFileName = (slug: string, version: string, sha256: string) =>
  `${slug}-${version}-${sha256.slice(0, 16)}.zip`;
/** The name a buyer's download is saved under (Content-Disposition): `<slug>-<version>.zip`. */
export const downloadFileName = (descriptor: Pick<ReleaseDescriptor, "product" | "version">) =>
  `${descriptor.product}-${descriptor.version}.zip`;
export const descriptorPath = (releasesDir: string, slug: string) => path.join(releasesDir, `${slug}.json`);

/** The descriptor of a product's current release, or why there is none. */
export function readDescriptor(
  releasesDir: string,
  slug: string,
): { descriptor: ReleaseDescriptor } | { missing: string } {
  let text: string;
  try {
    text = fs.readFileSync(descriptorPath(releasesDir, slug), "utf8");
  } catch {
    return { missing: "no release has been built" };
  }
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch {
    return { missing: "the release descriptor is invalid" };
  }
  const parsed = ReleaseDescriptor.safeParse(json);
  if (!parsed.success || parsed.data.product !== slug)
    return { missing: "the release descriptor is invalid" };
  return { descriptor: parsed.data };
}

const unavailable = (slug: string, reason: string) =>
  Problem.of("release-unavailable", `${slug}: ${reason}; no payment was taken`, {
    headers: { "retry-after": "300" },
  });

/**
 * The release folder as downloads see it. Before a payment is settled, `intact` checks that the
 * product's archive is there and that its bytes still have the recorded sha256. Hashing a large
 * archive on every download would cost seconds, so a verified digest is remembered with the
 * file's identity (inode, size, mtime, ctime): any write to the file changes ctime, so a changed
 * file is hashed again before it is sold.
 */
export class ReleaseShelf {
  private readonly verified = new Map<string, { identity: string; ok: Promise<boolean> }>();

  constructor(readonly releasesDir: string) {}

  /** The archive of a product's current release, checked; a 503 Problem when it cannot be sold now. */
  async intact(slug: string): Promise<FileBody & { descriptor: ReleaseDescriptor }> {
    const found = readDescriptor(this.releasesDir, slug);
    if ("missing" in found) throw unavailable(slug, found.missing);
    const { descriptor } = found;
    const file = path.join(this.releasesDir, descriptor.file);
    let stat: fs.Stats;
    try {
      stat = await fs.promises.stat(file);
    } catch {
      throw unavailable(slug, `the release file ${descriptor.file} is missing`);
    }
    if (stat.size !== descriptor.size) {
      throw unavailable(slug, `the release file ${descriptor.file} has the wrong size`);
    }
    const identity = `${stat.ino}:${stat.size}:${stat.mtimeMs}:${stat.ctimeMs}:${descriptor.sha256}`;
    let check = this.verified.get(file);
    if (check?.identity !== identity) {
      check = {
        identity,
        ok: hashFile(file).then(
          (actual) => actual.sha256 === descriptor.sha256,
          () => false,
        ),
      };
      this.verified.set(file, check);
    }
    if (!(await check.ok)) {
      throw unavailable(slug, `the release file ${descriptor.file} does not match its recorded sha256`);
    }
    return { path: file, size: descriptor.size, sha256: descriptor.sha256, descriptor };
  }
}
