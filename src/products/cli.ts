import type { Logger } from "pino";
import type { Config } from "../config.ts";
import {
  type BuildSettings,
  buildProduct,
  buildProducts,
  describeOutcome,
  PRODUCT_SLUGS,
  type ProductSlug,
  REPOSITORY_PRODUCTS,
} from "./build.ts";

export const buildSettings = (config: Config): BuildSettings => ({
  releasesDir: config.releasesDir,
  clinicalDb: config.clinicalTrials.dbPath,
});

/**
 * `utility402 build-products [slug ...]` (also `npm run build:products`): builds the named products,
 * or all five. A product named explicitly that cannot be built (the clinical one without a full
 * ingest) makes the command fail; without names it is only reported.
 */
export async function buildProductsCommand(config: Config, args: readonly string[]): Promise<number> {
  const unknown = args.filter((arg) => !(PRODUCT_SLUGS as readonly string[]).includes(arg));
  if (unknown.length > 0) {
    process.stderr.write(
      `unknown product(s): ${unknown.join(", ")}; products: ${PRODUCT_SLUGS.join(", ")}\n`,
    );
    return 2;
  }
  const slugs = args.length > 0 ? (args as ProductSlug[]) : PRODUCT_SLUGS;
  const outcomes = await buildProducts(buildSettings(config), slugs);
  for (const outcome of outcomes) process.stdout.write(`${describeOutcome(outcome)}\n`);
  process.stdout.write(`releases in ${config.releasesDir}\n`);
  return args.length > 0 && outcomes.some((outcome) => outcome.state === "unbuildable") ? 1 : 0;
}

/**
 * Before serving: build the four products that come from this repository when their release is
 * missing or out of date, so `npm start` sells them without an extra step. Unchanged releases are
 * only checked (a second or so); the clinical snapshot is built on purpose, after a full ingest.
 */
export async function prepareReleases(config: Config, log: Logger): Promise<void> {
  for (const slug of REPOSITORY_PRODUCTS) {
    try {
      const outcome = await buildProduct(slug, buildSettings(config));
      // Unbuildable here (a production install without its release): the product answers 503 until it is built.
      log[outcome.state === "unbuildable" ? "warn" : "info"](
        { product: slug, state: outcome.state },
        describeOutcome(outcome),
      );
    } catch (error) {
      // The service still starts: this product answers 503 (nothing charged) until it is built.
      log.error({ err: error, product: slug }, "product release could not be built");
    }
  }
}
