import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { buildProducts, type ProductSlug } from "../../src/products/build.ts";
import { products } from "../../src/products/index.ts";
import type { ReleaseDescriptor } from "../../src/products/release.ts";

/** One product's release built into a fresh temporary folder, with the operation that sells it. */
export async function buildOneRelease(slug: ProductSlug, tmpPrefix: string) {
  const work = fs.mkdtempSync(path.join(os.tmpdir(), tmpPrefix));
  const releasesDir = path.join(work, "releases");
  const [outcome] = await buildProducts(
    { releasesDir, clinicalDb: path.join(work, "unused-clinical.sqlite") },
    [slug],
  );
  if (outcome?.state !== "built") throw new Error(`${slug} not built: ${JSON.stringify(outcome)}`);
  const product = products.find((operation) => operation.path === `/v1/products/${slug}`);
  if (!product) throw new Error(`no operation for ${slug}`);
  const descriptor: ReleaseDescriptor = outcome.descriptor;
  return { work, releasesDir, descriptor, product };
}
