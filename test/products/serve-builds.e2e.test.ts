import { type ChildProcess, spawn } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { devPrivateKey } from "../../src/chain/dev-accounts.ts";
import { createPayer } from "../../src/client/paying-fetch.ts";
import {
  buildProduct,
  CLINICAL_PRODUCT,
  PRODUCTS_SOURCE_DIR,
  REPOSITORY_PRODUCTS,
} from "../../src/products/build.ts";
import { freePort } from "../helpers/service.ts";
import { sha256 } from "./helpers.ts";

const BIN = path.resolve("bin/utility402.js");

describe("npm start sells the repository products without an extra step", () => {
  const dirs: string[] = [];
  let child: ChildProcess | undefined;
  afterAll(() => {
    if (child && child.exitCode === null) child.kill("SIGKILL");
    for (const dir of dirs) fs.rmSync(dir, { recursive: true, force: true });
  });

  it("serve builds the four missing releases before listening; the clinical one stays unavailable", async () => {
    const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), "utility402-serve-products-"));
    dirs.push(dataDir);
    const port = await freePort();
    const env = {
      PATH: process.env.PATH ?? "",
      HOME: process.env.HOME ?? os.tmpdir(),
      PORT: String(port),
      LOCAL_CHAIN_PORT: String(await freePort()),
      DATA_DIR: dataDir,
    };
    child = spawn(process.execPath, [BIN, "serve"], { env, stdio: ["ignore", "pipe", "pipe"] });
    let output = "";
    child.stdout?.on("data", (chunk) => (output += chunk));
    child.stderr?.on("data", (chunk) => (output += chunk));
    const base = `http://127.0.0.1:${port}`;
    const deadline = Date.now() + 110_000;
    for (;;) {
      if (child.exitCode !== null) throw new Error(`serve exited:\n${output}`);
      if (Date.now() > deadline) throw new Error(`serve did not answer:\n${output}`);
      const ok = await fetch(`${base}/healthz`).then(
        (response) => response.ok,
        () => false,
      );
      if (ok) break;
      await new Promise((resolve) => setTimeout(resolve, 200));
    }
    const catalog = await (await fetch(`${base}/catalog.json`)).json();
    for (const slug of REPOSITORY_PRODUCTS) {
      const entry = catalog.products.find((p: { path: string }) => p.path === `/v1/products/${slug}`);
      expect(entry.available, slug).toBe(true);
      const file = path.join(dataDir, "releases", entry.release.file);
      expect(sha256(fs.readFileSync(file))).toBe(entry.release.sha256);
      expect(fs.statSync(file).size).toBe(entry.release.size);
    }
    const clinical = catalog.products.find((p: { path: string }) => p.path.endsWith(CLINICAL_PRODUCT));
    expect(clinical.available).toBe(false);

    const response = await createPayer(devPrivateKey(6)).fetch(
      `${base}/v1/products/csv-json-quality-toolkit`,
    );
    expect(response.status).toBe(200);
    const entry = catalog.products.find((p: { path: string }) => p.path.endsWith("csv-json-quality-toolkit"));
    expect(sha256(Buffer.from(await response.arrayBuffer()))).toBe(entry.release.sha256);

    const exited = new Promise<number | null>((resolve) => child?.once("exit", (code) => resolve(code)));
    child.kill("SIGTERM");
    expect(await exited).toBe(0);
  }, 150_000);

  it("a changed source is rebuilt; unchanged inputs are not", async () => {
    const work = fs.mkdtempSync(path.join(os.tmpdir(), "utility402-sources-"));
    dirs.push(work);
    const sourcesDir = path.join(work, "products");
    fs.cpSync(PRODUCTS_SOURCE_DIR, sourcesDir, { recursive: true });
    const settings = {
      releasesDir: path.join(work, "releases"),
      clinicalDb: path.join(work, "none.sqlite"),
      sourcesDir,
    };
    const first = await buildProduct("agent-safe-paid-work-kit", settings);
    expect(first.state).toBe("built");
    expect((await buildProduct("agent-safe-paid-work-kit", settings)).state).toBe("unchanged");
    fs.appendFileSync(path.join(sourcesDir, "agent-safe-paid-work-kit/README.md"), "\nChanged.\n");
    const rebuilt = await buildProduct("agent-safe-paid-work-kit", settings);
    expect(rebuilt.state).toBe("built");
    if (first.state === "unbuildable" || rebuilt.state === "unbuildable") throw new Error("not built");
    expect(rebuilt.descriptor.sha256).not.toBe(first.descriptor.sha256);
  });
});
