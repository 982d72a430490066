import path from "node:path";

const BROWSER_ENTRY = path.join(import.meta.dirname, "paywall-client.browser.ts");

/**
 * The paywall page's script bundled for the browser (the official x402 client packages in it), so the
 * page loads nothing from anywhere else. scripts/build.ts runs this once into dist/; from the sources
 * (development, tests) ./paywall-assets.ts runs it on the first request for the script. esbuild is a
 * build tool: this module is only ever loaded dynamically.
 */
export async function bundlePaywallClient(): Promise<Uint8Array> {
  const { build } = await import("esbuild");
  const result = await build({
    entryPoints: [BROWSER_ENTRY],
    bundle: true,
    format: "esm",
    platform: "browser",
    target: "es2022",
    minify: true,
    legalComments: "eof",
    write: false,
    logLevel: "warning",
  });
  const [output] = result.outputFiles;
  if (!output) throw new Error("esbuild wrote no paywall bundle");
  return output.contents;
}
