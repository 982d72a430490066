import { createHash } from "node:crypto";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { clinicalSnapshot } from "./clinical-snapshot.ts";
import { descriptorPath, type ReleaseDescriptor, readDescriptor, releaseFileName } from "./release.ts";
import { type ArchiveEntry, describeEntry, hashFile, writeDeterministicZip } from "./zip.ts";

/**
 * Builds the products' release archives: collects each product's files (from products/<slug>/,
 * generated code, or the clinical database), adds MANIFEST.json, and writes a deterministic ZIP
 * and its descriptor into the release folder. A product whose manifest is unchanged and whose
 * archive is intact is not rewritten (the same manifest gives the same bytes).
 */

export const PROJECT_ROOT = path.resolve(import.meta.dirname, "../..");
export const PRODUCTS_SOURCE_DIR = path.join(PROJECT_ROOT, "products");

/** The product sources that build from this repository alone; the clinical one needs a full ingest. */
export const REPOSITORY_PRODUCTS = [
  "csv-json-quality-toolkit",
  "agent-safe-paid-work-kit",
  "automation-data-toolkit-bundle",
  "engineering-unit-conversion-api",
] as const;
export type RepositoryProduct = (typeof REPOSITORY_PRODUCTS)[number];
export const CLINICAL_PRODUCT = "clinical-trials-outcomes-post-2020";
export const PRODUCT_SLUGS = [...REPOSITORY_PRODUCTS, CLINICAL_PRODUCT] as const;
export type ProductSlug = (typeof PRODUCT_SLUGS)[number];

/** The licence every archive carries as `LICENSE` unless its sources have their own (docs/products.md). */
export const PRODUCT_LICENCE = path.join(import.meta.dirname, "LICENSE.txt");
/** What the catalog and the archive call the licence. */
export const PRODUCT_LICENCE_NAME = "utility402 single-organisation licence 1.0";
/** Archive entries the builder writes itself; a product's sources may not hold them. */
const GENERATED = ["MANIFEST.json", "SHA256SUMS"];

export interface BuildSettings {
  releasesDir: string;
  clinicalDb: string;
  /** The authored data dictionary that ships with the clinical snapshot. */
  clinicalDictionary?: string;
  /** Where product sources live (tests point it at a copy). */
  sourcesDir?: string;
}

/**
 * "prebuilt": the builder's own tools are not installed (a production install, without dev dependencies):
 * the release it was shipped with is served as it is, checked intact, not checked against its inputs.
 */
export type BuildOutcome =
  | { product: ProductSlug; state: "built" | "unchanged" | "prebuilt"; descriptor: ReleaseDescriptor }
  | { product: ProductSlug; state: "unbuildable"; reason: string };

interface Collected {
  version: string;
  entries: ArchiveEntry[];
  details?: Record<string, unknown>;
}

/** Every file under a folder as archive entries under `prefix`, sorted. */
export function folderEntries(dir: string, prefix = ""): ArchiveEntry[] {
  const entries: ArchiveEntry[] = [];
  const walk = (current: string, relative: string) => {
    for (const item of fs.readdirSync(current, { withFileTypes: true })) {
      if (item.name === ".DS_Store" || item.name === "node_modules") continue;
      const full = path.join(current, item.name);
      const archivePath = relative ? `${relative}/${item.name}` : item.name;
      if (item.isDirectory()) walk(full, archivePath);
      else if (item.isFile()) entries.push({ path: prefix + archivePath, data: fs.readFileSync(full) });
    }
  };
  walk(dir, "");
  return entries;
}

/** The version a repository product's package.json states (semver), which names its release. */
export function packageVersion(sourceDir: string): string {
  const file = path.join(sourceDir, "package.json");
  const version = JSON.parse(fs.readFileSync(file, "utf8")).version;
  if (typeof version !== "string" || !/^\d+\.\d+\.\d+(?:-[0-9A-Za-z.-]+)?$/.test(version)) {
    throw new Error(`${file}: "version" ${JSON.stringify(version)} is not a semantic version`);
  }
  return version;
}

const entryText = (entries: readonly ArchiveEntry[], name: string) => {
  const entry = entries.find((candidate) => candidate.path === name);
  return entry && "data" in entry ? entry.data.toString("utf8") : undefined;
};

/**
 * The licence and changelog every product carries at its root. The licence is the builder's
 * (src/products/LICENSE.txt) unless the sources have a LICENSE of their own. A CHANGELOG.md of
 * the sources must have a section for the version being built; sources without one get a
 * changelog that says only which version this is.
 */
function licenceAndChangelog(
  entries: readonly ArchiveEntry[],
  title: string,
  version: string,
  changes?: string[],
): ArchiveEntry[] {
  const added: ArchiveEntry[] = [];
  if (!entries.some((entry) => entry.path === "LICENSE")) {
    added.push({ path: "LICENSE", data: fs.readFileSync(PRODUCT_LICENCE) });
  }
  const changelog = entryText(entries, "CHANGELOG.md");
  if (changelog === undefined) {
    const lines = changes ?? ["This release; the product's sources keep no changelog of their own yet."];
    added.push({
      path: "CHANGELOG.md",
      data: Buffer.from(
        `# Changelog: ${title}\n\n## ${version}\n\n${lines.map((line) => `- ${line}`).join("\n")}\n`,
      ),
    });
  } else if (!new RegExp(`^## \\[?${version.replaceAll(".", "\\.")}\\b`, "m").test(changelog)) {
    throw new Error(`${title}: CHANGELOG.md has no "## ${version}" section for the version being built`);
  }
  return added;
}

/** A kit's files as its archive holds them (before MANIFEST.json and SHA256SUMS). */
function kitEntries(sources: string, slug: RepositoryProduct, prefix = ""): ArchiveEntry[] {
  const dir = path.join(sources, slug);
  const entries = folderEntries(dir);
  const all = [...entries, ...licenceAndChangelog(entries, slug, packageVersion(dir))];
  return prefix ? all.map((entry) => ({ ...entry, path: prefix + entry.path })) : all;
}

async function collect(
  slug: ProductSlug,
  settings: BuildSettings,
  workDir: string,
): Promise<Collected | { unbuildable: string }> {
  const sources = settings.sourcesDir ?? PRODUCTS_SOURCE_DIR;
  const own = () => folderEntries(path.join(sources, slug));
  switch (slug) {
    case "csv-json-quality-toolkit":
    case "agent-safe-paid-work-kit":
      return { version: packageVersion(path.join(sources, slug)), entries: kitEntries(sources, slug) };
    case "automation-data-toolkit-bundle":
      // Each kit keeps its own folder, licence and changelog, so a kit copied out of the bundle stands alone.
      return {
        version: packageVersion(path.join(sources, slug)),
        entries: [
          ...kitEntries(sources, slug),
          ...kitEntries(sources, "csv-json-quality-toolkit", "csv-json-quality-toolkit/"),
          ...kitEntries(sources, "agent-safe-paid-work-kit", "agent-safe-paid-work-kit/"),
        ],
      };
    case "engineering-unit-conversion-api": {
      const version = packageVersion(path.join(sources, slug));
      // Loaded only when the product is (re)built: TypeScript and esbuild take seconds to load.
      const { unitConversionGeneratedEntries } = await import("./unit-conversion-api.ts");
      return {
        version,
        entries: [...kitEntries(sources, slug), ...(await unitConversionGeneratedEntries(version))],
      };
    }
    case CLINICAL_PRODUCT: {
      const snapshot = clinicalSnapshot(
        settings.clinicalDb,
        workDir,
        settings.clinicalDictionary ?? path.join(PROJECT_ROOT, "docs/clinical-trials-data-dictionary.md"),
      );
      if ("unbuildable" in snapshot) return snapshot;
      const entries = [...own(), ...snapshot.entries];
      return {
        ...snapshot,
        entries: [...entries, ...licenceAndChangelog(entries, slug, snapshot.version, snapshot.changes)],
      };
    }
  }
}

/**
 * `SHA256SUMS` in the format `sha256sum -c` reads (`<hex>  <path>`, one line per file, sorted):
 * every file of the archive, MANIFEST.json included, but not itself.
 */
export function sha256Sums(files: readonly { path: string; sha256: string }[]): Buffer {
  for (const file of files) {
    if (/[\\\n\r]/.test(file.path)) throw new Error(`"${file.path}" cannot be listed in SHA256SUMS`);
  }
  const sorted = [...files].sort((a, b) => Buffer.compare(Buffer.from(a.path), Buffer.from(b.path)));
  return Buffer.from(sorted.map((file) => `${file.sha256}  ${file.path}\n`).join(""));
}

/**
 * What a repository product is built from (paths under the project root; folders walked): its
 * sources, the builder, and the versions of the tools whose output lands in the archive. Broad on
 * purpose: a false "changed" only costs a rebuild that gives the same bytes.
 */
function buildInputs(slug: RepositoryProduct, sourcesDir: string): string[] {
  // The builder's own modules: src/products from the sources, dist/products in a built install (npm run build).
  const builder = [path.relative(PROJECT_ROOT, import.meta.dirname), "node_modules/yazl/package.json"];
  const folder = (name: string) => path.join(sourcesDir, name);
  switch (slug) {
    case "csv-json-quality-toolkit":
    case "agent-safe-paid-work-kit":
      return [folder(slug), ...builder];
    case "automation-data-toolkit-bundle":
      return [
        folder(slug),
        folder("csv-json-quality-toolkit"),
        folder("agent-safe-paid-work-kit"),
        ...builder,
      ];
    case "engineering-unit-conversion-api":
      return [
        folder(slug),
        ...builder,
        "src/operations/unit-convert",
        "src/problem.ts",
        "src/contract",
        "data/units.json",
        "node_modules/zod/package.json",
        "node_modules/typescript/package.json",
        "node_modules/esbuild/package.json",
      ];
  }
}

/**
 * The packages among a product's build inputs that are not installed: the builder's tools (TypeScript is a
 * dev dependency) are missing from a production install, which serves the releases it was shipped with.
 */
function missingBuilderTools(slug: RepositoryProduct): string[] {
  return buildInputs(slug, PRODUCTS_SOURCE_DIR)
    .filter((input) => input.startsWith("node_modules/") && !fs.existsSync(path.resolve(PROJECT_ROOT, input)))
    .map((input) => path.dirname(input.slice("node_modules/".length)));
}

/** sha256 over the inputs' paths and bytes, and zlib's version (compressed bytes depend on it). */
function inputsFingerprint(slug: RepositoryProduct, sourcesDir = PRODUCTS_SOURCE_DIR): string {
  const hash = createHash("sha256").update(`zlib ${process.versions.zlib}\n`);
  const add = (file: string) => {
    const stat = fs.statSync(file);
    if (stat.isDirectory()) {
      for (const name of fs.readdirSync(file).sort()) add(path.join(file, name));
    } else {
      hash.update(`${path.relative(PROJECT_ROOT, file)}\n`).update(fs.readFileSync(file));
    }
  };
  for (const input of buildInputs(slug, sourcesDir)) add(path.resolve(PROJECT_ROOT, input));
  return hash.digest("hex");
}

const isRepositoryProduct = (slug: ProductSlug): slug is RepositoryProduct =>
  (REPOSITORY_PRODUCTS as readonly string[]).includes(slug);

/** Builds one product's release (or leaves an identical one in place). */
export async function buildProduct(slug: ProductSlug, settings: BuildSettings): Promise<BuildOutcome> {
  const existing = readDescriptor(settings.releasesDir, slug);
  const missingTools = isRepositoryProduct(slug) ? missingBuilderTools(slug) : [];
  if (missingTools.length > 0) return shippedRelease(slug, settings, existing, missingTools);
  // Quick path (every start of the service): nothing the product is built from has changed.
  const inputsSha256 = isRepositoryProduct(slug) ? inputsFingerprint(slug, settings.sourcesDir) : undefined;
  if (inputsSha256 && "descriptor" in existing && existing.descriptor.inputsSha256 === inputsSha256) {
    const actual = await hashFile(path.join(settings.releasesDir, existing.descriptor.file)).catch(
      () => undefined,
    );
    if (actual?.sha256 === existing.descriptor.sha256) {
      return { product: slug, state: "unchanged", descriptor: existing.descriptor };
    }
  }
  const workDir = fs.mkdtempSync(path.join(os.tmpdir(), `utility402-build-${slug}-`));
  try {
    const collected = await collect(slug, settings, workDir);
    if ("unbuildable" in collected)
      return { product: slug, state: "unbuildable", reason: collected.unbuildable };
    const { version, entries, details } = collected;
    if (!entries.some((entry) => entry.path === "README.md")) throw new Error(`${slug} has no README.md`);
    for (const name of GENERATED) {
      if (entries.some((entry) => entry.path === name)) throw new Error(`${slug}: ${name} is generated`);
    }
    const files = await Promise.all(entries.map(describeEntry));
    files.sort((a, b) => Buffer.compare(Buffer.from(a.path), Buffer.from(b.path)));
    const manifest = Buffer.from(`${JSON.stringify({ product: slug, version, files }, null, 2)}\n`);
    const manifestSha256 = createHash("sha256").update(manifest).digest("hex");

    if (
      "descriptor" in existing &&
      existing.descriptor.version === version &&
      existing.descriptor.manifestSha256 === manifestSha256
    ) {
      const actual = await hashFile(path.join(settings.releasesDir, existing.descriptor.file)).catch(
        () => undefined,
      );
      if (actual?.sha256 === existing.descriptor.sha256) {
        const descriptor = { ...existing.descriptor, ...(inputsSha256 ? { inputsSha256 } : {}) };
        writeDescriptor(settings.releasesDir, descriptor);
        return { product: slug, state: "unchanged", descriptor };
      }
    }

    fs.mkdirSync(settings.releasesDir, { recursive: true });
    // Written aside and renamed into place under a name that holds its digest: a download never sees a
    // half-written archive, and an archive already sold is never replaced (replays still find it).
    const partial = path.join(settings.releasesDir, `${slug}.${process.pid}.partial`);
    const sums = sha256Sums([...files, { path: "MANIFEST.json", sha256: manifestSha256 }]);
    await writeDeterministicZip(
      [...entries, { path: "MANIFEST.json", data: manifest }, { path: "SHA256SUMS", data: sums }],
      partial,
    );
    const { size, sha256 } = await hashFile(partial);
    const file = releaseFileName(slug, version, sha256);
    fs.renameSync(partial, path.join(settings.releasesDir, file));
    const descriptor: ReleaseDescriptor = {
      product: slug,
      version,
      file,
      size,
      sha256,
      manifestSha256,
      ...(inputsSha256 ? { inputsSha256 } : {}),
      ...(details ? { details } : {}),
    };
    writeDescriptor(settings.releasesDir, descriptor);
    return { product: slug, state: "built", descriptor };
  } finally {
    fs.rmSync(workDir, { recursive: true, force: true });
  }
}

/** Without the builder's tools: the shipped release when it is intact, else unbuildable here (why, and where to build). */
async function shippedRelease(
  slug: ProductSlug,
  settings: BuildSettings,
  existing: ReturnType<typeof readDescriptor>,
  missingTools: readonly string[],
): Promise<BuildOutcome> {
  if ("descriptor" in existing) {
    const actual = await hashFile(path.join(settings.releasesDir, existing.descriptor.file)).catch(
      () => undefined,
    );
    if (actual?.sha256 === existing.descriptor.sha256) {
      return { product: slug, state: "prebuilt", descriptor: existing.descriptor };
    }
  }
  return {
    product: slug,
    state: "unbuildable",
    reason: `no intact release in RELEASES_DIR, and its builder needs ${missingTools.join(", ")} (dev dependencies, not installed here): build it where they are (utility402 build-products; the image's build stage does)`,
  };
}

function writeDescriptor(releasesDir: string, descriptor: ReleaseDescriptor): void {
  const file = descriptorPath(releasesDir, descriptor.product);
  fs.writeFileSync(`${file}.partial`, `${JSON.stringify(descriptor, null, 2)}\n`);
  fs.renameSync(`${file}.partial`, file);
}

/** Builds the given products (all by default), one after another. */
export async function buildProducts(
  settings: BuildSettings,
  slugs: readonly ProductSlug[] = PRODUCT_SLUGS,
): Promise<BuildOutcome[]> {
  const outcomes: BuildOutcome[] = [];
  for (const slug of slugs) outcomes.push(await buildProduct(slug, settings));
  return outcomes;
}

export const describeOutcome = (outcome: BuildOutcome) =>
  outcome.state === "unbuildable"
    ? `${outcome.product}: not built: ${outcome.reason}`
    : `${outcome.product}: ${outcome.state} ${outcome.descriptor.file} (${outcome.descriptor.size} bytes, sha256 ${outcome.descriptor.sha256})`;
