import fs from "node:fs";
import path from "node:path";
import { describe, expect, it } from "vitest";

const PAYMENTS = path.resolve(path.dirname(new URL(import.meta.url).pathname), "..", "..", "src", "payments");
/** Issue 17: the money path stays in rooms a newcomer can read whole. */
const MAX_LINES = 300;

/** Lines as `wc -l` counts them. */
const newlines = (text: string) => text.split("\n").length - 1;

const sourceFiles = (dir: string): string[] =>
  fs.readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const file = path.join(dir, entry.name);
    if (entry.isDirectory()) return sourceFiles(file);
    return entry.name.endsWith(".ts") && !entry.name.endsWith(".test.ts") ? [file] : [];
  });

describe("src/payments", () => {
  it(`has no source file over ${MAX_LINES} lines`, () => {
    const files = sourceFiles(PAYMENTS);
    expect(files.length).toBeGreaterThan(10);
    const over = files
      .map((file) => ({
        file: path.relative(PAYMENTS, file),
        lines: newlines(fs.readFileSync(file, "utf8")),
      }))
      .filter(({ lines }) => lines > MAX_LINES);
    expect(over).toEqual([]);
  });
});
