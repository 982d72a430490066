import fs from "node:fs";
import { describe, expect, it } from "vitest";
import { atomicPrice } from "../src/catalog/price.ts";
import { isImplemented, OPERATIONS } from "../src/catalog/registry.ts";

describe("README operations table", () => {
  it("lists every operation with the registry's method, path, prices and availability", () => {
    const readme = fs.readFileSync("README.md", "utf8");
    const rows = readme
      .split("\n")
      .filter((line) => /^\| (GET|POST) \| `\/v1\//.test(line))
      .map((line) => line.split("|").map((cell) => cell.trim()));
    const table = rows.map(([, method, path, usd, atomic, , status]) => [
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
});
