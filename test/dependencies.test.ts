import { spawnSync } from "node:child_process";
import fs from "node:fs";
import { builtinModules } from "node:module";
import os from "node:os";
import path from "node:path";
import { pathToFileURL } from "node:url";
import { afterAll, describe, expect, it } from "vitest";
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
