import { execFile } from "node:child_process";
import path from "node:path";
import { promisify } from "node:util";
import { describe, expect, it } from "vitest";
import { checkImports } from "../../scripts/check-imports.ts";

const fixture = (name: string) => path.join(import.meta.dirname, "fixtures", name);

describe("the import check (scripts/check-imports.ts, run by npm run lint)", () => {
  it("finds no import loop and no layer violation in src/", () => {
    expect(checkImports(path.resolve("src"))).toEqual({ loops: [], violations: [] });
  });

  it("reports a deliberate loop as its chain of files, type-only imports and re-exports included", () => {
    expect(checkImports(fixture("loop")).loops).toEqual([["a.ts", "b.ts", "c.ts", "a.ts"]]);
  });

  it("reports each of two loops that share a file", () => {
    expect(checkImports(fixture("tangle")).loops).toEqual([
      ["hub.ts", "left.ts", "hub.ts"],
      ["hub.ts", "right.ts", "hub.ts"],
    ]);
  });

  it("reports operations importing payments or http, and payments importing the registry", () => {
    const report = checkImports(fixture("layers"));
    expect(report.loops).toEqual([]);
    expect(report.violations.map(({ file, imports }) => `${file} → ${imports}`).sort()).toEqual([
      "operations/tool.ts → http/read.ts",
      "operations/tool.ts → payments/gate.ts",
      "payments/gate.ts → catalog/registry.ts",
    ]);
  });

  it("fails as a command, printing the loop, so CI stops on it", async () => {
    const run = promisify(execFile)(process.execPath, [
      "--import",
      "tsx",
      "scripts/check-imports.ts",
      fixture("loop"),
    ]);
    const failure = await run.then(
      () => undefined,
      (error: { code: number; stderr: string }) => error,
    );
    expect(failure?.code).toBe(1);
    const at = (file: string) => path.join(fixture("loop"), file);
    expect(failure?.stderr).toContain(`import loop: ${["a.ts", "b.ts", "c.ts", "a.ts"].map(at).join(" → ")}`);
  });
});
