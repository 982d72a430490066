import { z } from "zod";
import { defineOperation } from "../catalog/operation.ts";

const NoInput = z.strictObject({});
const ZipArchive = z.string().meta({ format: "binary", description: "A ZIP archive." });

interface ProductSpec {
  slug: string;
  priceUsd: string;
  title: string;
  description: string;
}

/** SPEC.md's five downloadable products; their content arrives with the products issue. */
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
    description: "Service source code with container packaging, an interface contract and 75 tests.",
  },
  {
    slug: "clinical-trials-outcomes-post-2020",
    priceUsd: "99.00",
    title: "Clinical trials outcomes snapshot (post-2020)",
    description:
      "A validated outcomes snapshot of trial-level results for studies started on or after 2020-01-01.",
  },
];

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
      { status: 503, description: "The product release is temporarily unavailable; no payment is taken." },
    ],
  }),
);
