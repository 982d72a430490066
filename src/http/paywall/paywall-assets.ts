import fs from "node:fs";
import path from "node:path";

/** The page's script as the production build writes it (scripts/build.ts), beside this module in dist/. */
export const PAYWALL_BUNDLE_NAME = "paywall-client.bundle.js";
const BUNDLE = path.join(import.meta.dirname, PAYWALL_BUNDLE_NAME);

export const PAYWALL_STYLE = new Uint8Array(fs.readFileSync(path.join(import.meta.dirname, "paywall.css")));

let script: Promise<Uint8Array<ArrayBuffer>> | undefined;

/**
 * The page's script, read once per process from the build's bundle, or bundled from the sources where
 * there is none (development, tests: ./paywall-bundle.ts, which needs esbuild, a dev dependency).
 */
export function paywallScript(): Promise<Uint8Array<ArrayBuffer>> {
  script ??= fs.promises
    .readFile(BUNDLE)
    .catch(async (error: NodeJS.ErrnoException) => {
      if (error.code !== "ENOENT") throw error;
      const { bundlePaywallClient } = await import("./paywall-bundle.ts");
      return bundlePaywallClient();
    })
    .then((bytes) => new Uint8Array(bytes));
  // A failed read or bundle is not kept: the next request tries again.
  script.catch(() => {
    script = undefined;
  });
  return script;
}
