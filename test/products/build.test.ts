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
  type ProductSlug,
  REPOSITORY_PRODUCTS,
} from "../../src/products/build.ts";
import { writeDeterministicZip } from "../../src/products/zip.ts";
import { CLINICAL_COUNTS, checkAgainstManifest, createClinicalDb, extractTo, readZip } from "./helpers.ts";

const temp = (prefix: string) => fs.mkdtempSync(path.join(os.tmpdir(), `utility402-${prefix}-`));

/** `node --test` in a folder with no network configured; returns its TAP totals. */
function runNodeTests(cwd: string, args: string[] = []) {
  const result = spawnSync(process.execPath, ["--test", ...args], {
    cwd,
    encoding: "utf8",
    // No proxy, no inherited module paths: the product stands alone.
    env: { PATH: process.env.PATH ?? "", HOME: cwd, NO_COLOR: "1" },
    timeout: 120_000,
  });
  const count = (name: string) =>
    Number(new RegExp(`^# ${name} (\\d+)$`, "m").exec(result.stdout)?.[1] ?? -1);
  return {
    status: result.status,
    tests: count("tests"),
    pass: count("pass"),
    fail: count("fail"),
    output: result.stdout + result.stderr,
  };
}

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
    createClinicalDb(clinicalDb);
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

  it("builds all five products with versioned file names", () => {
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
      ...REPOSITORY_PRODUCTS.map(() => "1.0.0"),
      "2026-11-01",
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

  it("every archive matches its MANIFEST, with sorted entries, one fixed timestamp and fixed permissions", async () => {
    for (const slug of PRODUCT_SLUGS) {
      const { manifest, entries } = await checkAgainstManifest(archive(slug), slug);
      expect(manifest.version).toBe(slug === CLINICAL_PRODUCT ? "2026-11-01" : "1.0.0");
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

  it("the bundle holds both kits unchanged, with an index", async () => {
    const bundle = await readZip(archive("automation-data-toolkit-bundle"));
    for (const kit of ["csv-json-quality-toolkit", "agent-safe-paid-work-kit"] as const) {
      const own = (await readZip(archive(kit))).filter((e) => e.path !== "MANIFEST.json");
      for (const entry of own) {
        expect(
          bundle.find((e) => e.path === `${kit}/${entry.path}`)?.data.equals(entry.data),
          entry.path,
        ).toBe(true);
      }
    }
    expect(bundle.map((e) => e.path)).toEqual(
      expect.arrayContaining(["INDEX.md", "README.md", "package.json"]),
    );
  });

  it("the two kits' scripts pass their own tests (from the bundle, in an empty folder)", async () => {
    const dir = await extractTo(archive("automation-data-toolkit-bundle"));
    dirs.push(dir);
    const run = runNodeTests(dir, ["csv-json-quality-toolkit/test/", "agent-safe-paid-work-kit/test/"]);
    expect(run.fail, run.output).toBe(0);
    expect(run.pass).toBe(run.tests);
    expect(run.tests).toBeGreaterThanOrEqual(40);
  });

  it("the unit-conversion API extracted to an empty folder passes its ≥ 75 tests offline", async () => {
    const dir = await extractTo(archive("engineering-unit-conversion-api"));
    dirs.push(dir);
    expect(fs.existsSync(path.join(dir, "node_modules"))).toBe(false);
    const run = runNodeTests(dir, ["test/"]);
    expect(run.fail, run.output).toBe(0);
    expect(run.pass).toBe(run.tests);
    expect(run.tests).toBeGreaterThanOrEqual(75);
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
});

describe("the clinical snapshot product", () => {
  const dirs: string[] = [];
  const setup = (kind: "full" | "sample", counts?: typeof CLINICAL_COUNTS) => {
    const dir = temp("clinical");
    dirs.push(dir);
    const clinicalDb = path.join(dir, "index.sqlite");
    createClinicalDb(clinicalDb, kind, counts);
    return { releasesDir: path.join(dir, "releases"), clinicalDb };
  };
  afterAll(() => {
    for (const dir of dirs) fs.rmSync(dir, { recursive: true, force: true });
  });

  it("exports the database, one CSV per real table (no FTS tables) and the validation report", async () => {
    const settings = setup("full");
    const outcome = await buildProduct(CLINICAL_PRODUCT, settings);
    if (outcome.state === "unbuildable") throw new Error(outcome.reason);
    expect(outcome.descriptor.details).toEqual({ snapshotDate: "2026-11-01", counts: CLINICAL_COUNTS });
    const { entries } = await checkAgainstManifest(
      path.join(settings.releasesDir, outcome.descriptor.file),
      CLINICAL_PRODUCT,
    );
    const csvs = entries.filter((e) => e.path.startsWith("data/csv/")).map((e) => e.path);
    expect(csvs).toEqual(
      ["analyses", "conditions", "endpoints", "measurements", "meta", "studies"].map(
        (t) => `data/csv/${t}.csv`,
      ),
    );
    const text = (name: string) => entries.find((e) => e.path === name)?.data.toString("utf8") ?? "";
    expect(text("data/csv/studies.csv")).toBe(
      "nct_id,title,start_date,enrollment\r\n" +
        'NCT04000001,"Drug A versus placebo in adults, phase 3",2020-03-01,420\r\n' +
        'NCT04000002,"A ""quoted"" title, with a comma\nand a newline",2021-07-15,\r\n' +
        "NCT04000003,Device B for knee pain,2022-01-10,80\r\n",
    );
    // A WITHOUT ROWID table comes out in primary-key order.
    expect(text("data/csv/conditions.csv").split("\r\n")[1]).toBe('NCT04000001,"Diabetes Mellitus, Type 2"');
    const validation = JSON.parse(text("validation.json"));
    expect(validation.counts).toEqual(CLINICAL_COUNTS);
    expect(validation.checks.every((c: { ok: boolean }) => c.ok)).toBe(true);
    expect(text("VALIDATION.md")).toContain("| measurements | 6 |");
    const snapshot = path.join(temp("snapshot"), "db.sqlite");
    fs.writeFileSync(snapshot, entries.find((e) => e.path === "data/clinical-trials.sqlite")?.data as Buffer);
    const db = new Database(snapshot, { readonly: true });
    expect(db.prepare("SELECT count(*) AS n FROM measurements").get()).toEqual({ n: 6 });
    expect(db.prepare("SELECT rowid FROM studies_fts WHERE studies_fts MATCH 'knee'").all()).toEqual([
      { rowid: 3 },
    ]);
    db.close();
  });

  it("a sample ingest is not built", async () => {
    const outcome = await buildProduct(CLINICAL_PRODUCT, setup("sample"));
    expect(outcome).toMatchObject({
      state: "unbuildable",
      reason: expect.stringContaining("only from a full ingest"),
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

  it("counts that disagree with the tables stop the build", async () => {
    await expect(
      buildProduct(CLINICAL_PRODUCT, setup("full", { ...CLINICAL_COUNTS, measurements: 7 })),
    ).rejects.toThrow("rows of table measurements = meta.measurements (expected 7, got 6)");
  });
});
