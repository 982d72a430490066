// Kind and format checks on long hostile cells: every check must be linear in the cell's length.
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import path from "node:path";
import { test } from "node:test";
import { FORMATS, isEmail } from "../lib/schema.mjs";
import { random, root, SEED } from "./helpers.mjs";

test("isEmail accepts exactly what /^[^\\s@]+@[^\\s@]+\\.[^\\s@]+$/ accepts (differential, short strings)", () => {
  console.log(`adversarial-cells: seed ${SEED} (replay: CSV_KIT_SEED=${SEED})`);
  const next = random(SEED);
  const alphabet = ["a", "b", ".", "@", " ", "\t", "\n", "é", "-"];
  const reference = /^[^\s@]+@[^\s@]+\.[^\s@]+$/;
  for (let i = 0; i < 20_000; i++) {
    let s = "";
    for (let n = Math.floor(next() * 10); n > 0; n--) s += alphabet[Math.floor(next() * alphabet.length)];
    assert.equal(isEmail(s), reference.test(s), `${JSON.stringify(s)} (seed ${SEED})`);
  }
});

// Cells of 1 MiB shaped to make a backtracking pattern retry from every position. The checks run
// in a child with a generous time limit: the old email pattern needed hours on one such cell,
// a linear check needs milliseconds (no timing is asserted, only that the child finishes).
const CHILD = `
import { FORMATS } from "./lib/schema.mjs";
import { kindOf } from "./lib/quality.mjs";
const n = 1 << 20;
const cells = ["a".repeat(n), "a@" + "a".repeat(n), "a@" + "a.".repeat(n / 2) + " ", "@".repeat(n), "a@" + "@a".repeat(n / 2),
  "1".repeat(n) + "x", "1.".repeat(n / 2), "2024-01-01T" + "1".repeat(n), "a:" + "a".repeat(n) + " ", "a".repeat(n) + ":",
  "a-".repeat(n / 2) + "_", "1.1.1." + "1".repeat(n), "0".repeat(n) + "-", "tRuE".repeat(n / 4)];
const results = [];
for (const cell of cells) {
  results.push(kindOf(cell));
  for (const [name, check] of Object.entries(FORMATS)) results.push(name + ":" + check(cell));
}
process.stdout.write(JSON.stringify(results));
`;

test("every kind and format check finishes on 1 MiB hostile cells", () => {
  const child = spawnSync(process.execPath, ["--input-type=module", "-e", CHILD], { cwd: root, encoding: "utf8", timeout: 120_000 });
  assert.equal(child.signal, null, `a check did not finish within 120 s (killed by ${child.signal})`);
  assert.equal(child.status, 0, child.stderr);
  const results = JSON.parse(child.stdout);
  assert.equal(results.length, 14 * (1 + Object.keys(FORMATS).length));
  assert.equal(results.filter((r) => r === "email" || r === "email:true").length, 1, "of these cells only a@a.a.…a. (spaces trimmed by kindOf only) is an email");
});
