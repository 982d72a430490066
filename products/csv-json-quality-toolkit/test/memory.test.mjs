// Memory that does not grow with the column count, and the structures that bound it, checked
// against plain Maps on generated data (seeded: CSV_KIT_SEED=<seed> replays).
import assert from "node:assert/strict";
import fs from "node:fs";
import { test } from "node:test";
import { createProfiler, KeyIndex } from "../lib/quality.mjs";
import { random, run, SEED, tempFile } from "./helpers.mjs";

test(`KeyIndex finds the same first rows as a Map of strings (seed ${SEED})`, () => {
  const next = random(SEED);
  // Lone surrogates (JSON input can hold them) must stay different keys.
  const alphabet = ["a", "b", "é", "😀", "名", "\u0000", " ", '"', "\ud800", "\udc00", "\ufffd", "\xff"];
  const keys = Array.from({ length: 3000 }, () => Array.from({ length: Math.floor(next() * 6) }, () => alphabet[Math.floor(next() * alphabet.length)]).join(""));
  keys.push("x".repeat(1 << 20), `${"x".repeat(1 << 20)}y`);
  const index = new KeyIndex();
  const map = new Map();
  for (let i = 0; i < 60_000; i++) {
    const key = keys[Math.floor(next() * keys.length)];
    const expected = map.get(key);
    if (expected === undefined) map.set(key, i);
    assert.equal(index.firstOrAdd(key, i), expected, `row ${i}, key ${JSON.stringify(key.slice(0, 20))}, seed ${SEED}`);
  }
  assert.equal(index.size, map.size);
});

test("a profile's value counts stay within their budget however many columns; columns with few values stay exact", () => {
  const columns = Array.from({ length: 200 }, (_, j) => `c${j}`);
  const budget = 1 << 20;
  const profiler = createProfiler(columns, { valueBudgetBytes: budget });
  const rows = 3000;
  for (let i = 0; i < rows; i++) {
    profiler.add(Object.fromEntries(columns.map((name, j) => [name, j % 2 === 0 ? `value ${i} of ${name}` : ["x", "y", "z"][i % 3]])));
    assert.ok(profiler.valueBytes() <= budget + 200, `${profiler.valueBytes()} bytes after row ${i}`);
  }
  const result = profiler.result();
  for (const [j, column] of result.columns.entries()) {
    assert.equal(column.filled, rows);
    if (j % 2 === 1) assert.deepEqual([column.distinct, column.distinctExact], [3, true], column.name);
    else assert.ok(Math.abs(column.distinct - rows) <= rows * 0.1, `${column.name}: ${column.distinct}`);
  }
});

test("profile reads 300 columns of distinct values in a 64 MB heap (1.1.0 needed about 1 GB for 500 × 20,000)", () => {
  const columns = 300;
  const rows = 4000;
  const file = tempFile("wide.csv");
  const fd = fs.openSync(file, "w");
  fs.writeSync(fd, `${Array.from({ length: columns }, (_, j) => `c${j}`).join(",")}\n`);
  for (let i = 0; i < rows; i++) fs.writeSync(fd, `${Array.from({ length: columns }, (_, j) => `v${i}-${j}`).join(",")}\n`);
  fs.closeSync(fd);
  const { status, json, stderr } = run("scripts/profile.mjs", [file], { heapMb: 64 });
  assert.equal(status, 0, stderr);
  assert.equal(json.rows, rows);
  assert.equal(json.parseProblemCount, 0);
  assert.equal(json.columns.length, columns);
  for (const column of json.columns) assert.ok(column.filled === rows && Math.abs(column.distinct - rows) <= rows * 0.1, JSON.stringify(column));
});
