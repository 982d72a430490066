// Valid JSON nested far deeper than any data row: a problem naming the row, never a stack overflow.
import assert from "node:assert/strict";
import { test } from "node:test";
import { MAX_JSON_DEPTH } from "../lib/rows.mjs";
import { run, tempFile } from "./helpers.mjs";

/** A row whose `deep` value nests `levels` arrays and objects below the row. */
const deepRow = (levels) => {
  let inner = "1";
  for (let i = 0; i < levels; i++) inner = i % 2 ? `[${inner}]` : `{"k":${inner}}`;
  return `{"id":2,"deep":${inner}}`;
};

for (const levels of [10_000, 100_000]) {
  test(`a row nested ${levels} deep is a problem naming row 2 in every script (JSONL and JSON)`, () => {
    const rows = ['{"id":1,"deep":null}', deepRow(levels), '{"id":3,"deep":null}'];
    for (const file of [tempFile("deep.jsonl", `${rows.join("\n")}\n`), tempFile("deep.json", `[${rows.join(",")}]`)]) {
      const profile = run("scripts/profile.mjs", [file, "--quiet"]);
      assert.equal(profile.status, 0, profile.stderr);
      assert.equal(profile.json.rows, 2);
      assert.deepEqual(profile.json.parseProblems, [{ row: 2, message: `nested deeper than ${MAX_JSON_DEPTH} levels` }]);
      const gate = run("gates/quality-gate.mjs", [file, "--gate", tempFile("g.json", JSON.stringify({ keyColumns: ["deep"] })), "--quiet"]);
      assert.equal(gate.status, 1, gate.stderr);
      assert.equal(gate.json.rules[0].ok, false);
      for (const [script, args] of [["scripts/normalise.mjs", []], ["scripts/dedupe.mjs", ["--keys", "deep"]], ["scripts/validate.mjs", ["--schema", tempFile("s.json", "{}")]]]) {
        const r = run(script, [file, ...args, "--quiet"]);
        assert.equal(r.status, 1, `${script}: ${r.stderr}`);
        assert.doesNotMatch(r.stderr, /Maximum call stack/, script);
      }
    }
  });
}

test(`a row nested exactly ${MAX_JSON_DEPTH} levels is data`, () => {
  const file = tempFile("ok.jsonl", `${deepRow(MAX_JSON_DEPTH - 1)}\n`);
  const profile = run("scripts/profile.mjs", [file, "--quiet"]);
  assert.equal(profile.status, 0, profile.stderr);
  assert.equal(profile.json.parseProblemCount, 0);
  assert.equal(run("scripts/normalise.mjs", [file, "--out", tempFile("o.jsonl"), "--quiet"]).status, 0);
  assert.equal(run("scripts/profile.mjs", [tempFile("no.jsonl", `{"id":1}\n${deepRow(MAX_JSON_DEPTH)}\n`), "--quiet"]).json.parseProblemCount, 1);
});

test("a file whose only row is too deep reports that row, not 'no data'", () => {
  const r = run("scripts/profile.mjs", [tempFile("only.jsonl", `${deepRow(10_000)}\n`), "--quiet"]);
  assert.equal(r.status, 0, r.stderr);
  assert.deepEqual(r.json.parseProblems, [{ row: 1, message: `nested deeper than ${MAX_JSON_DEPTH} levels` }]);
});
