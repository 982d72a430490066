import fs from "node:fs";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { isImplemented, OPERATIONS } from "../src/catalog/registry.ts";
import { atomicPrice } from "../src/contract/price.ts";

const ROOT = path.resolve(import.meta.dirname, "..");
const readme = fs.readFileSync(path.join(ROOT, "README.md"), "utf8");
/** The table rows of the operations: `| METHOD | \`/v1/…\` | USD | atomic | [what](docs/….md) | status |`. */
const operationRows = readme
  .split("\n")
  .filter((line) => /^\| (GET|POST) \| `\/v1\//.test(line))
  .map((line) => line.split("|").map((cell) => cell.trim()));

describe("README operations table", () => {
  it("lists every operation with the registry's method, path, prices and availability", () => {
    const table = operationRows.map(([, method, path, usd, atomic, , status]) => [
      method,
      path?.replaceAll("`", ""),
      usd,
      atomic,
      status,
    ]);
    expect(table).toEqual(
      OPERATIONS.map((op) => [
        op.method,
        op.path,
        op.priceUsd,
        atomicPrice(op),
        isImplemented(op) ? "available" : "not yet",
      ]),
    );
  });

  it("links each operation to its page in docs/, which holds its request, answer and rules", () => {
    for (const [, , route, , , what] of operationRows) {
      const page = /\]\((docs\/[\w-]+\.md)\)/.exec(what ?? "")?.[1];
      expect(page, `${route}: no link to docs/<page>.md`).toBeDefined();
      expect(fs.existsSync(path.join(ROOT, page as string)), `${route}: ${page}`).toBe(true);
    }
  });
});

describe("README", () => {
  it("fits one page: at most 300 lines (the detail lives in docs/)", () => {
    expect(readme.split("\n").length).toBeLessThanOrEqual(300);
  });

  it("links only files of this repository that exist", () => {
    const targets = [...readme.matchAll(/\]\(([^)\s]+)\)/g)]
      .map((match) => match[1] as string)
      .filter((target) => !/^[a-z]+:/.test(target) && !target.startsWith("#"))
      .map((target) => target.split("#")[0] as string);
    expect(targets.length).toBeGreaterThan(10);
    const outside = targets.filter((target) =>
      path.relative(ROOT, path.resolve(ROOT, target)).startsWith(".."),
    );
    expect(outside).toEqual([]);
    expect(targets.filter((target) => !fs.existsSync(path.join(ROOT, target)))).toEqual([]);
  });
});
