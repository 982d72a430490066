import { randomBytes } from "node:crypto";
import { z } from "zod";
import { defineOperation, type StartedOperation } from "../contract/operation.ts";
import type { OperationEnvironment } from "../operation-environment.ts";
import { DOWNLOAD_TOKEN_HEADER } from "../payments/headers.ts";
import { Problem } from "../problem.ts";
import type { ProductSlug } from "./build.ts";
import { downloadFileName, ReleaseShelf, readDescriptor } from "./release.ts";

/** "<slug>: <reason>; no payment was taken" → "<reason>". */
const reasonOf = (problem: Problem) =>
  problem.detail.replace(/^[^:]*: /, "").replace(/; no payment was taken$/, "");

const NoInput = z.strictObject({});
const ZipArchive = z.string().meta({ format: "binary", description: "A ZIP archive." });

interface ProductSpec {
  slug: ProductSlug;
  priceUsd: string;
  title: string;
  description: string;
}

/** SPEC.md's five downloadable products; their sources are in products/<slug>/ (see docs/products.md). */
const PRODUCTS: ProductSpec[] = [
  {
    slug: "csv-json-quality-toolkit",
    priceUsd: "9.00",
    title: "CSV/JSON quality toolkit",
    description:
      "Local scripts, checks, runbooks, schemas, acceptance gates and templates for CSV/JSON data quality.",
  },
  {
    slug: "agent-safe-paid-work-kit",
    priceUsd: "15.00",
    title: "Agent-safe paid work kit",
    description:
      "Scripts, checks, runbooks, schemas, acceptance gates and templates for agents doing paid work safely.",
  },
  {
    slug: "automation-data-toolkit-bundle",
    priceUsd: "24.00",
    title: "Automation data toolkit bundle",
    description: "The data-quality and paid-work toolkits together, with automation templates.",
  },
  {
    slug: "engineering-unit-conversion-api",
    priceUsd: "19.00",
    title: "Engineering unit conversion API",
    description:
      "Service source code (node:http, no runtime dependencies) generated from this service's own unit-convert " +
      "module, with a Dockerfile, an OpenAPI 3.1 contract and more than 75 tests.",
  },
  {
    slug: "clinical-trials-outcomes-post-2020",
    priceUsd: "99.00",
    title: "Clinical trials outcomes snapshot (post-2020)",
    description:
      "A validated outcomes snapshot of ClinicalTrials.gov studies with results since 2020-01-01 (selected by start " +
      "date, or by results first posted: the release's validation report names the rule and both counts): " +
      "the SQLite database, one CSV per table, a data dictionary and a validation report.",
  },
];

/**
 * A download: the release must be present and intact before a 402 is even sent, and again before
 * the payment is settled (else 503 with Retry-After, nothing asked for, nothing charged); the app
 * then streams the file. The release is looked up per request, so a release built while the
 * service runs is sold at once; the catalog shows the release found at start, and marks the
 * product unavailable while the last check found none.
 */
async function startProduct(
  slug: ProductSlug,
  releasesDir: string,
): Promise<StartedOperation<unknown, unknown>> {
  const shelf = new ReleaseShelf(releasesDir);
  const found = readDescriptor(releasesDir, slug);
  const missing = "missing" in found ? found.missing : undefined;
  const release =
    "descriptor" in found
      ? {
          version: found.descriptor.version,
          // The name the download carries (Content-Disposition), not the name on the shelf.
          file: downloadFileName(found.descriptor),
          size: found.descriptor.size,
          sha256: found.descriptor.sha256,
          ...found.descriptor.details,
        }
      : null;
  // What the last check found (no I/O when the catalog asks): a missing release at start, then
  // the outcome of every admit() and handle().
  let unavailable: string | undefined = missing;
  const check = async () => {
    try {
      const file = await shelf.intact(slug);
      unavailable = undefined;
      return file;
    } catch (error) {
      unavailable = error instanceof Problem ? reasonOf(error) : (error as Error).message;
      throw error;
    }
  };
  return {
    available: release !== null,
    catalogDetails: release ? { release } : { release: null, unavailable: missing },
    unavailableNow: () => unavailable,
    // Before the 402: a product that cannot be delivered now asks for no signature at all.
    async admit() {
      await check();
    },
    async handle() {
      const file = await check();
      return {
        body: null,
        file: { path: file.path, size: file.size, sha256: file.sha256 },
        headers: {
          "content-disposition": `attachment; filename="${downloadFileName(file.descriptor)}"`,
          // Resuming this download after two minutes needs this secret as well as the (public) payment.
          [DOWNLOAD_TOKEN_HEADER]: randomBytes(24).toString("base64url"),
        },
      };
    },
  };
}

export const products = PRODUCTS.map((product) =>
  defineOperation({
    id: `product-${product.slug}`,
    method: "GET",
    path: `/v1/products/${product.slug}`,
    priceUsd: product.priceUsd,
    kind: "product",
    summary: `Download: ${product.title} (ZIP)`,
    description: product.description,
    tags: ["products"],
    inputFrom: "none",
    input: NoInput,
    output: ZipArchive,
    outputContentType: "application/zip",
    example: {},
    errorResponses: [
      {
        status: 416,
        description: "The Range asks for no byte of the file (the payment stays valid for the download).",
      },
      { status: 503, description: "The product release is temporarily unavailable; no payment is taken." },
    ],
    start: (env: OperationEnvironment) => startProduct(product.slug, env.config.releasesDir),
  }),
);
