// A blank key ("", spaces, null, missing) is no key: rows with one are never duplicates of each other.
import assert from "node:assert/strict";
import fs from "node:fs";
import { test } from "node:test";
import { dedupeRows } from "../lib/quality.mjs";
import { run, tempFile } from "./helpers.mjs";

/** Every way a JSON row can have no email; each pair of them must be two rows kept. */
const BLANKS = [{ email: "" }, { email: "   " }, { email: "\t" }, { email: null }, {}];

test("rows with blank keys are all kept, in every pair of blank forms, and counted", () => {
  for (const a of BLANKS) {
    for (const b of BLANKS) {
      const rows = [{ id: 1, ...a }, { id: 2, ...b }, { id: 3, email: "x@example.com" }, { id: 4, email: " X@example.com" }];
      const { rows: kept, duplicates, blankKeyRows } = dedupeRows(rows, ["email"]);
      assert.deepEqual(kept.map((r) => r.id), [1, 2, 3], JSON.stringify([a, b]));
      assert.deepEqual(duplicates, [{ index: 3, duplicateOf: 2 }]);
      assert.equal(blankKeyRows, 2);
    }
  }
  // A composite key with one blank part is no key either.
  assert.equal(dedupeRows([{ email: "", country: "FR" }, { email: " ", country: "FR" }], ["email", "country"]).rows.length, 2);
});

test("dedupe keeps blank-key rows and the gate does not count them as duplicates", () => {
  const csv = tempFile("blank.csv", "name,email\nAl,a@x.io\nBo,\nCy,  \nDi,\nEd,A@x.io\n");
  const out = tempFile("out.csv");
  const d = run("scripts/dedupe.mjs", [csv, "--keys", "email", "--out", out, "--quiet"]);
  assert.equal(d.status, 0, d.stderr);
  assert.deepEqual(fs.readFileSync(out, "utf8").trim().split("\n").map((l) => l.split(",")[0]), ["name", "Al", "Bo", "Cy", "Di"]);
  const counts = JSON.parse(d.stderr.trim().split("\n").at(-1));
  assert.equal(counts.blankKeyRows, 3);
  assert.equal(counts.duplicateCount, 1);
  const gate = tempFile("gate.json", JSON.stringify({ keyColumns: ["email"], maxDuplicateRate: 0.2 }));
  const g = run("gates/quality-gate.mjs", [csv, "--gate", gate, "--quiet"]);
  assert.equal(g.status, 0, g.stdout);
  assert.match(g.json.rules.find((r) => r.rule.startsWith("duplicate rate")).detail, /^1 duplicate row\(s\); 3 row\(s\) with a blank key/);
});
