import { spawnSync } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import Database from "better-sqlite3";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  type BuildOutcome,
  buildProduct,
  buildProducts,
  CLINICAL_PRODUCT,
  PRODUCT_SLUGS,
  PRODUCTS_SOURCE_DIR,
  type ProductSlug,
  REPOSITORY_PRODUCTS,
} from "../../src/products/build.ts";
import { writeDeterministicZip } from "../../src/products/zip.ts";
import {
  type ClinicalFixture,
  checkAgainstManifest,
  countsOf,
  createClinicalDb,
  editClinicalDb,
  extractTo,
  INGEST_STARTED,
  readZip,
  SNAPSHOT_DATE,
} from "./helpers.ts";

const temp = (prefix: string) => fs.mkdtempSync(path.join(os.tmpdir(), `utility402-${prefix}-`));
const packageVersion = (slug: string) =>
  JSON.parse(fs.readFileSync(path.join(PRODUCTS_SOURCE_DIR, slug, "package.json"), "utf8")).version as string;

describe("product builds", () => {
  const dirs: string[] = [];
  let first: BuildOutcome[];
  let second: BuildOutcome[];
  let releasesA: string;
  let releasesB: string;
  let clinicalDb: string;

  beforeAll(async () => {
    releasesA = temp("releases-a");
    releasesB = temp("releases-b");
    const dataDir = temp("clinical");
    dirs.push(releasesA, releasesB, dataDir);
    clinicalDb = path.join(dataDir, "clinical-trials.sqlite");
    await createClinicalDb(clinicalDb);
    first = await buildProducts({ releasesDir: releasesA, clinicalDb });
    second = await buildProducts({ releasesDir: releasesB, clinicalDb });
  }, 180_000);
  afterAll(() => {
    for (const dir of dirs) fs.rmSync(dir, { recursive: true, force: true });
  });

  const archive = (slug: ProductSlug, dir = releasesA) => {
    const outcome = first.find((o) => o.product === slug);
    if (!outcome || outcome.state === "unbuildable") throw new Error(`${slug} was not built`);
    return path.join(dir, outcome.descriptor.file);
  };

  it("builds all five products, each versioned by its package.json (the clinical one by its snapshot date)", () => {
    expect(first.map((o) => [o.product, o.state])).toEqual(PRODUCT_SLUGS.map((slug) => [slug, "built"]));
    // Archive names hold the version and a digest prefix, so a rebuild never replaces a sold archive.
    expect(fs.readdirSync(releasesA).sort()).toEqual(
      [
        ...first.map((o) =>
          o.state === "unbuildable"
            ? ""
            : `${o.product}-${o.descriptor.version}-${o.descriptor.sha256.slice(0, 16)}.zip`,
        ),
        ...PRODUCT_SLUGS.map((slug) => `${slug}.json`),
      ].sort(),
    );
    expect(first.map((o) => (o.state === "unbuildable" ? "" : o.descriptor.version))).toEqual([
      ...REPOSITORY_PRODUCTS.map(packageVersion),
      SNAPSHOT_DATE,
    ]);
  });

  it("two builds are byte-identical, and a rebuild leaves an identical release alone", async () => {
    for (const slug of PRODUCT_SLUGS) {
      expect(fs.readFileSync(archive(slug)).equals(fs.readFileSync(archive(slug, releasesB))), slug).toBe(
        true,
      );
    }
    expect(first.map((o) => o.state !== "unbuildable" && o.descriptor)).toEqual(
      second.map((o) => o.state !== "unbuildable" && o.descriptor),
    );
    const again = await buildProduct("csv-json-quality-toolkit", { releasesDir: releasesA, clinicalDb });
    expect(again.state).toBe("unchanged");
  });

  it("every archive matches its MANIFEST and SHA256SUMS, with sorted entries, one fixed timestamp and fixed permissions", async () => {
    for (const slug of PRODUCT_SLUGS) {
      const { manifest, entries } = await checkAgainstManifest(archive(slug), slug);
      expect(manifest.version).toBe(slug === CLINICAL_PRODUCT ? SNAPSHOT_DATE : packageVersion(slug));
      const paths = entries.map((entry) => entry.path);
      expect(paths).toEqual([...paths].sort((a, b) => Buffer.compare(Buffer.from(a), Buffer.from(b))));
      expect(new Set(entries.map((entry) => `${entry.dosDate}:${entry.dosTime}`)).size).toBe(1);
      for (const entry of entries) {
        const executable = entry.data.subarray(0, 2).toString() === "#!";
        expect(entry.mode, entry.path).toBe(executable ? 0o100755 : 0o100644);
        expect(entry.compressionMethod).toBe(8);
      }
    }
  });

  it("every archive carries a LICENSE, a CHANGELOG for its version, and a SHA256SUMS that `sha256sum -c` accepts", async () => {
    for (const slug of PRODUCT_SLUGS) {
      const entries = await readZip(archive(slug));
      const text = (name: string) => entries.find((e) => e.path === name)?.data.toString("utf8") ?? "";
      expect(text("LICENSE"), slug).toMatch(/single organisation/);
      const version = slug === CLINICAL_PRODUCT ? SNAPSHOT_DATE : packageVersion(slug);
      expect(text("CHANGELOG.md"), slug).toContain(`## ${version}`);
      const dir = await extractTo(archive(slug));
      dirs.push(dir);
      const check = spawnSync("sha256sum", ["--strict", "-c", "SHA256SUMS"], { cwd: dir, encoding: "utf8" });
      expect(check.status, check.stdout + check.stderr).toBe(0);
      expect(check.stdout.trim().split("\n")).toHaveLength(entries.length - 1);
      expect(check.stdout).toContain("MANIFEST.json: OK");
    }
  });

  it("the manifest check catches a file that differs from its MANIFEST line", async () => {
    const entries = await readZip(archive("agent-safe-paid-work-kit"));
    const tampered = entries.map((entry) =>
      entry.path === "README.md"
        ? { path: entry.path, data: Buffer.concat([entry.data, Buffer.from("!")]) }
        : entry,
    );
    const target = path.join(releasesB, "tampered.zip");
    await writeDeterministicZip(tampered, target);
    await expect(checkAgainstManifest(target, "agent-safe-paid-work-kit")).rejects.toThrow(
      "README.md does not match its manifest line",
    );
  });

  it("the bundle holds both kits unchanged (with their licence and changelog), with an index", async () => {
    const bundle = await readZip(archive("automation-data-toolkit-bundle"));
    for (const kit of ["csv-json-quality-toolkit", "agent-safe-paid-work-kit"] as const) {
      const own = (await readZip(archive(kit))).filter(
        (e) => e.path !== "MANIFEST.json" && e.path !== "SHA256SUMS",
      );
      expect(own.map((e) => e.path)).toEqual(expect.arrayContaining(["LICENSE", "CHANGELOG.md"]));
      for (const entry of own) {
        expect(
          bundle.find((e) => e.path === `${kit}/${entry.path}`)?.data.equals(entry.data),
          entry.path,
        ).toBe(true);
      }
    }
    expect(bundle.map((e) => e.path)).toEqual(
      expect.arrayContaining(["INDEX.md", "README.md", "package.json", "LICENSE", "CHANGELOG.md"]),
    );
  });

  it("the bundle's paid job pins the x402 client this project runs: the same versions and checksums as package-lock.json", async () => {
    const bundle = await readZip(archive("automation-data-toolkit-bundle"));
    const json = (name: string) =>
      JSON.parse(bundle.find((e) => e.path === name)?.data.toString("utf8") ?? "null");
    const template = json("automation/package-lock.json");
    const project = JSON.parse(fs.readFileSync("package-lock.json", "utf8"));
    const pinned = Object.entries(
      template.packages as Record<string, { version: string; integrity: string }>,
    ).filter(([at]) => at !== "");
    expect(pinned.map(([at]) => at)).toEqual(
      expect.arrayContaining([
        "node_modules/@x402/fetch",
        "node_modules/@x402/evm",
        "node_modules/@x402/extensions",
        "node_modules/viem",
      ]),
    );
    // Each pinned package is one the project runs, at the same version and checksum; npm may hoist it
    // elsewhere in the project's tree (zod 3 for the x402 packages sits below them beside the project's zod 4).
    const nameOf = (at: string) => at.slice(at.lastIndexOf("node_modules/") + "node_modules/".length);
    const projectCopies = Object.entries(
      project.packages as Record<string, { version: string; integrity: string }>,
    ).map(([at, entry]) => `${nameOf(at)}@${entry.version} ${entry.integrity}`);
    for (const [at, entry] of pinned) {
      expect(projectCopies, at).toContain(`${nameOf(at)}@${entry.version} ${entry.integrity}`);
    }
    expect(json("automation/package.json").dependencies).toEqual(template.packages[""].dependencies);
  });

  it("the unit-conversion API is generated from the service's own unit-convert module and table", async () => {
    const entries = await readZip(archive("engineering-unit-conversion-api"));
    const file = (name: string) => entries.find((e) => e.path === name)?.data.toString("utf8") ?? "";
    expect(file("data/units.json")).toBe(fs.readFileSync("data/units.json", "utf8"));
    for (const module of ["convert", "rational", "units", "schema", "index"]) {
      expect(file(`src/operations/unit-convert/${module}.js`)).toContain(
        `Generated from utility402's src/operations/unit-convert/${module}.ts`,
      );
    }
    // A function of the service's source appears verbatim (modulo types) in the product.
    expect(file("src/operations/unit-convert/convert.js")).toContain(
      "return from.scale.mul(value).add(from.offset).sub(to.offset).div(to.scale);",
    );
    const contract = JSON.parse(file("openapi.json"));
    expect(contract.openapi).toBe("3.1.0");
    expect(Object.keys(contract.paths)).toEqual([
      "/v1/unit-convert",
      "/v1/units",
      "/healthz",
      "/openapi.json",
    ]);
  });

  it("the unit-conversion API's contract speaks as the buyer's own service: no price, no payment words", async () => {
    const entries = await readZip(archive("engineering-unit-conversion-api"));
    const contract = entries.find((e) => e.path === "openapi.json")?.data.toString("utf8") ?? "";
    for (const word of [/never charged/i, /\(free\)/i, /\bcharged\b/i, /\bpaying\b/i, /\bpaid\b/i, /x402/i]) {
      expect(contract).not.toMatch(word);
    }
  });

  it("the unit-conversion API ships on a supported Node.js LTS, with tests that run the same on Node 20, 22 and 24", async () => {
    const entries = await readZip(archive("engineering-unit-conversion-api"));
    const text = (name: string) => entries.find((e) => e.path === name)?.data.toString("utf8") ?? "";
    const from = /^FROM node:(\d+)/m.exec(text("Dockerfile"));
    // Node 20 reached end of life on 2026-04-30; 22 and 24 are LTS lines.
    expect(Number(from?.[1])).toBeGreaterThanOrEqual(22);
    expect(text("Dockerfile")).toMatch(/^RUN node --test\s*$/m);
    const pkg = JSON.parse(text("package.json"));
    // `node --test <directory>` runs nothing on Node 22 and 24 (a directory is no longer searched).
    expect(pkg.scripts.test).toBe("node --test");
    expect(pkg.dependencies).toBeUndefined();
    expect(pkg.devDependencies).toBeUndefined();
    // Every module it runs imports only node: built-ins and its own files.
    for (const entry of entries.filter((e) => /\.(m?js)$/.test(e.path) && !e.path.startsWith("vendor/"))) {
      for (const [, specifier] of entry.data
        .toString("utf8")
        .matchAll(/^(?:import|export)\b[^;"]*?(?:from\s*|import\s*)"([^"]+)"/gm)) {
        expect(
          specifier?.startsWith(".") || specifier?.startsWith("node:"),
          `${entry.path} imports ${specifier}`,
        ).toBe(true);
      }
    }
  });
});

describe("the clinical snapshot product", () => {
  const dirs: string[] = [];
  const setup = async (kind: ClinicalFixture, studies?: number) => {
    const dir = temp("clinical");
    dirs.push(dir);
    const clinicalDb = path.join(dir, "index.sqlite");
    const meta = await createClinicalDb(clinicalDb, kind, studies);
    return { releasesDir: path.join(dir, "releases"), clinicalDb, meta };
  };
  afterAll(() => {
    for (const dir of dirs) fs.rmSync(dir, { recursive: true, force: true });
  });

  it("exports the database, one CSV per real table (no FTS tables) and a validation report reconciled with the rows", async () => {
    const settings = await setup("full", 12);
    const outcome = await buildProduct(CLINICAL_PRODUCT, settings);
    if (outcome.state === "unbuildable") throw new Error(outcome.reason);
    const counts = countsOf(settings.meta);
    expect(counts.studies).toBe(12);
    expect(outcome.descriptor.details).toMatchObject({ snapshotDate: SNAPSHOT_DATE, counts });
    const { entries } = await checkAgainstManifest(
      path.join(settings.releasesDir, outcome.descriptor.file),
      CLINICAL_PRODUCT,
    );
    const csvs = entries.filter((e) => e.path.startsWith("data/csv/")).map((e) => e.path);
    expect(csvs).toEqual(
      ["ingest_state", "meta", "studies", "study_more_outcomes", "study_phases", "study_summaries"].map(
        (t) => `data/csv/${t}.csv`,
      ),
    );
    const text = (name: string) => entries.find((e) => e.path === name)?.data.toString("utf8") ?? "";
    expect(text("data/csv/studies.csv").split("\r\n")[0]).toBe(
      "id,nct_id,title,sponsor,phases,enrollment,start_date,start_day,completion_date,completion_day,endpoints,measurements,analyses,last_update_posted,results_first_posted,record_as_of",
    );
    // 12 studies + the header + the final line end.
    expect(text("data/csv/studies.csv").split("\r\n")).toHaveLength(14);
    const validation = JSON.parse(text("validation.json"));
    expect(validation.counts).toEqual(counts);
    expect(validation.checks.every((c: { ok: boolean }) => c.ok)).toBe(true);
    const checked = validation.checks.map((c: { check: string }) => c.check).join("\n");
    for (const expected of [
      "meta.studies = rows of studies",
      "meta.studies = rows of study_summaries",
      "meta.studies = rows of studies_fts",
      "meta.endpoints = sum of studies.endpoints",
      "meta.endpoints = sum of the summaries' endpoints",
      "meta.measurements = sum of studies.measurements",
      "meta.analyses = sum of studies.analyses",
      "the API ingest completed",
      "every study started on or after 2020-01-01",
    ]) {
      expect(checked).toContain(expected);
    }
    expect(text("VALIDATION.md")).toContain(`| measurements | ${counts.measurements} |`);
    // The ingest started on INGEST_STARTED, but its records are the registry's copies of the day
    // before: the snapshot is sold as of the older date, the start is kept beside it.
    expect(validation.snapshotDate).toBe(SNAPSHOT_DATE);
    expect(validation.recordsAsOf).toEqual({ oldest: SNAPSHOT_DATE, newest: SNAPSHOT_DATE });
    expect(validation.provenance.ingestStartedAt).toBe(`${INGEST_STARTED}T00:30:00.000Z`);
    // What the date is based on, and how old the records' copies are, are stated, not left implied.
    expect(validation.snapshotDateBasis).toBe(settings.meta.snapshot_date_basis);
    expect(validation).toHaveProperty("recordsAsOf");
    expect(text("VALIDATION.md")).toContain(`Snapshot date basis: ${settings.meta.snapshot_date_basis}`);
    expect(text("CHANGELOG.md")).toContain(`Date basis: ${settings.meta.snapshot_date_basis}`);
    expect(text("CHANGELOG.md")).toContain(`## ${SNAPSHOT_DATE}`);
    const snapshot = path.join(temp("snapshot"), "db.sqlite");
    fs.writeFileSync(snapshot, entries.find((e) => e.path === "data/clinical-trials.sqlite")?.data as Buffer);
    const db = new Database(snapshot, { readonly: true });
    expect(db.prepare("SELECT count(*) AS n FROM studies").get()).toEqual({ n: 12 });
    db.close();
  });

  it("a database of an older layout (PRAGMA user_version) is not built: the service would refuse to query it", async () => {
    const settings = await setup("full");
    editClinicalDb(settings.clinicalDb, "PRAGMA user_version = 2");
    const outcome = await buildProduct(CLINICAL_PRODUCT, settings);
    expect(outcome).toMatchObject({
      state: "unbuildable",
      reason: expect.stringContaining("has schema 2"),
    });
  });

  it("a sample ingest is not built", async () => {
    const outcome = await buildProduct(CLINICAL_PRODUCT, await setup("sample"));
    expect(outcome).toMatchObject({
      state: "unbuildable",
      reason: expect.stringContaining("only from a full ingest"),
    });
  });

  it("the five-study sample whose meta flag was edited to 'full' is refused", async () => {
    const outcome = await buildProduct(CLINICAL_PRODUCT, await setup("sample-flagged-full"));
    expect(outcome).toMatchObject({
      state: "unbuildable",
      reason: expect.stringContaining("no completed API ingest"),
    });
  });

  it("an API ingest stopped after its first page, flagged 'full', is refused", async () => {
    const settings = await setup("partial-flagged-full");
    expect(settings.meta.kind).toBe("full");
    const outcome = await buildProduct(CLINICAL_PRODUCT, settings);
    expect(outcome).toMatchObject({
      state: "unbuildable",
      reason: expect.stringContaining("did not complete"),
    });
  });

  it("no database at CLINICAL_TRIALS_DB is not built", async () => {
    const outcome = await buildProduct(CLINICAL_PRODUCT, {
      releasesDir: temp("r"),
      clinicalDb: "/nonexistent/db.sqlite",
    });
    expect(outcome).toMatchObject({
      state: "unbuildable",
      reason: expect.stringContaining("no clinical database"),
    });
  });

  it("a count that disagrees with the rows stops the build", async () => {
    const settings = await setup("full");
    editClinicalDb(settings.clinicalDb, "UPDATE meta SET value = value + 1 WHERE key = 'measurements'");
    await expect(buildProduct(CLINICAL_PRODUCT, settings)).rejects.toThrow(
      "meta.measurements = sum of studies.measurements",
    );
  });

  it("a study without its summary or its search row stops the build", async () => {
    const settings = await setup("full");
    editClinicalDb(
      settings.clinicalDb,
      "DELETE FROM study_summaries WHERE study_id = (SELECT max(id) FROM studies)",
    );
    await expect(buildProduct(CLINICAL_PRODUCT, settings)).rejects.toThrow(
      "meta.studies = rows of study_summaries",
    );
  });

  it("a study that started before 2020 stops the build", async () => {
    const settings = await setup("full");
    editClinicalDb(settings.clinicalDb, "UPDATE studies SET start_day = '2019-12-31' WHERE id = 1");
    await expect(buildProduct(CLINICAL_PRODUCT, settings)).rejects.toThrow(
      "every study started on or after 2020-01-01",
    );
  });
});
