import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { checkImports, runCheck } from "../../scripts/check-imports.ts";

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

  it("reports operations importing payments, http or the registry, payments importing the registry, the contract importing outside itself, and a door importing the documents", () => {
    const report = checkImports(fixture("layers"));
    expect(report.loops).toEqual([]);
    expect(report.violations.map(({ file, imports }) => `${file} → ${imports}`).sort()).toEqual([
      "contract/price.ts → config.ts",
      "mcp/door.ts → documents/openapi.ts",
      "operations/tool.ts → catalog/registry.ts",
      "operations/tool.ts → http/read.ts",
      "operations/tool.ts → payments/gate.ts",
      "payments/gate.ts → catalog/registry.ts",
    ]);
  });

  it("names the rule a leaf breaks by what it may import", () => {
    const errors: string[] = [];
    expect(runCheck(fixture("layers"), { error: (line) => errors.push(line), log: () => {} })).toBe(1);
    const at = (file: string) => path.join(fixture("layers"), file);
    expect(errors).toContain(
      `layer rule: ${at("contract/price.ts")} imports ${at("config.ts")} (contract/ imports only contract/: ` +
        "the operation contract is a leaf every operation folder imports: it names no service singleton and no room above it)",
    );
  });

  // In process: spawning the script cost ~20 s of a TypeScript loader's start-up per run, and `npm run lint`
  // (CI's .ci/run) runs the command itself on src/.
  it("fails as a command, printing the loop, so CI stops on it", () => {
    const errors: string[] = [];
    const logs: string[] = [];
    const status = runCheck(fixture("loop"), {
      error: (line) => errors.push(line),
      log: (line) => logs.push(line),
    });
    expect(status).toBe(1);
    const at = (file: string) => path.join(fixture("loop"), file);
    expect(errors).toContain(`import loop: ${["a.ts", "b.ts", "c.ts", "a.ts"].map(at).join(" → ")}`);
    expect(logs).toEqual([]);
  });

  it("passes as a command where there is no problem, saying so", () => {
    const root = fs.mkdtempSync(path.join(os.tmpdir(), "utility402-imports-"));
    try {
      fs.writeFileSync(path.join(root, "a.ts"), 'import { b } from "./b.ts";\nexport const a = b;\n');
      fs.writeFileSync(path.join(root, "b.ts"), "export const b = 1;\n");
      const logs: string[] = [];
      expect(runCheck(root, { error: (line) => expect.fail(line), log: (line) => logs.push(line) })).toBe(0);
      expect(logs).toEqual([`${root}: no import loop, no layer violation`]);
    } finally {
      fs.rmSync(root, { recursive: true, force: true });
    }
  });
});
