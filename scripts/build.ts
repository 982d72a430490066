import fs from "node:fs";
import path from "node:path";
import { build, type Plugin } from "esbuild";
import { PAYWALL_BUNDLE_NAME } from "../src/http/paywall/paywall-assets.ts";
import { bundlePaywallClient } from "../src/http/paywall/paywall-bundle.ts";

/**
 * `npm run build`: the service as JavaScript in dist/, for production (`node dist/main.js`, no TypeScript
 * loader). Each module of src/ becomes one module of dist/ at the same relative path, its relative
 * imports kept as imports of the matching .js files, so every path a module resolves from its own
 * import.meta.url (data/, the contract artifacts, worker modules) resolves the same from dist/. Files
 * that are not TypeScript are copied beside them, except the tests' fixtures and the development-only
 * worker shims that register tsx (see workerModule in src/operations/worker-pool.ts). Types are not
 * checked here: `npm run typecheck` does that.
 */

const ROOT = path.resolve(import.meta.dirname, "..");
const SRC = path.join(ROOT, "src");
export const DIST = path.join(ROOT, "dist");

/** A module that runs in the browser, not in Node: bundled for the page that loads it, not compiled beside the rest. */
const isBrowserEntry = (file: string) => file.endsWith(".browser.ts");
const isTest = (file: string) => /\.test\.ts$/.test(file) || file.split(path.sep).includes("fixtures");
const isTsxShim = (file: string) =>
  file.endsWith(".mjs") && fs.readFileSync(file, "utf8").includes("tsx/esm/api");

function filesUnder(dir: string): string[] {
  return fs.readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const file = path.join(dir, entry.name);
    return entry.isDirectory() ? filesUnder(file) : [file];
  });
}

/** Every relative import stays an import, of the .js module the .ts one becomes; packages stay imports too. */
const keepImports: Plugin = {
  name: "keep-imports",
  setup(builder) {
    builder.onResolve({ filter: /.*/ }, (args) => {
      if (args.kind === "entry-point") return undefined;
      if (!args.path.startsWith(".")) return { path: args.path, external: true };
      if (!args.path.endsWith(".ts") && !args.path.endsWith(".mjs") && !args.path.endsWith(".js")) {
        return { errors: [{ text: `${args.path}: a relative import names its file with its extension` }] };
      }
      return { path: args.path.replace(/\.ts$/, ".js"), external: true };
    });
  },
};

/** The files of src/ that dist/ is made of (compiled or copied): what a production install runs. */
export const shippedSources = (): string[] =>
  filesUnder(SRC).filter((file) => !isTest(file) && !isTsxShim(file));

export async function buildDist(): Promise<void> {
  const files = shippedSources();
  fs.rmSync(DIST, { recursive: true, force: true });
  await build({
    entryPoints: files.filter((file) => file.endsWith(".ts") && !isBrowserEntry(file)),
    outdir: DIST,
    outbase: SRC,
    bundle: true,
    plugins: [keepImports],
    format: "esm",
    platform: "node",
    target: "node20",
    sourcemap: "linked",
    logLevel: "warning",
  });
  for (const file of files.filter((file) => !file.endsWith(".ts"))) {
    const target = path.join(DIST, path.relative(SRC, file));
    fs.mkdirSync(path.dirname(target), { recursive: true });
    fs.copyFileSync(file, target);
  }
  // The paywall page's script, beside the module that serves it (src/http/paywall/paywall-assets.ts).
  fs.writeFileSync(path.join(DIST, "http", "paywall", PAYWALL_BUNDLE_NAME), await bundlePaywallClient());
}

if (process.argv[1] && path.resolve(process.argv[1]) === import.meta.filename) {
  await buildDist();
  console.log(`built ${path.relative(process.cwd(), DIST) || "."}`);
}
