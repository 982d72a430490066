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
import { downloadFileName, type ReleaseDescriptor, readDescriptor } from "../../src/products/release.ts";
import { type Spawned, spawnUtility402, waitFor } from "../helpers/processes.ts";
import { freePort } from "../helpers/service.ts";
import { sha256 } from "./helpers.ts";

describe("npm start sells the repository products without an extra step", () => {
  const dirs: string[] = [];
  let serve: Spawned | undefined;
  afterAll(async () => {
    // SIGTERM (SIGKILL only after a grace period): the service stops the local chain it started.
    await serve?.stop();
    for (const dir of dirs) fs.rmSync(dir, { recursive: true, force: true });
  }, 30_000);

  it("serve builds the four missing releases before listening; the clinical one stays unavailable", async () => {
    const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), "utility402-serve-products-"));
    dirs.push(dataDir);
    const port = await freePort();
    serve = spawnUtility402(["serve"], {
      PORT: String(port),
      LOCAL_CHAIN_PORT: String(await freePort()),
      DATA_DIR: dataDir,
    });
    const base = `http://127.0.0.1:${port}`;
    await waitFor(`${base}/healthz`, serve.child, serve.output, 110_000);
    const catalog = await (await fetch(`${base}/catalog.json`)).json();
    for (const slug of REPOSITORY_PRODUCTS) {
      const entry = catalog.products.find((p: { path: string }) => p.path === `/v1/products/${slug}`);
      expect(entry.available, slug).toBe(true);
      const { descriptor } = readDescriptor(path.join(dataDir, "releases"), slug) as {
        descriptor: ReleaseDescriptor;
      };
      expect(entry.release.file).toBe(downloadFileName(descriptor));
      const file = path.join(dataDir, "releases", descriptor.file);
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

    await serve.stop();
    expect(serve.child.exitCode).toBe(0);
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
    // The archive a sold payment may still point to is left in place under its own name.
    expect(rebuilt.descriptor.file).not.toBe(first.descriptor.file);
    expect(fs.existsSync(path.join(settings.releasesDir, first.descriptor.file))).toBe(true);
  });
});
