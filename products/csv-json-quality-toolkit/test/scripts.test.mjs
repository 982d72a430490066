import assert from "node:assert/strict";
import fs from "node:fs";
import { test } from "node:test";
import { parseCsv } from "../lib/csv.mjs";
import { run, tempFile } from "./helpers.mjs";

const dirty = "examples/contacts-dirty.csv";
const clean = "examples/contacts-clean.csv";

test("profile reports blanks, kinds and parse problems", () => {
  const { status, json } = run("scripts/profile.mjs", [dirty]);
  assert.equal(status, 0);
  assert.equal(json.rows, 5);
  const name = json.columns.find((c) => c.name === "name");
  assert.equal(name.blank, 2);
  assert.equal(name.untrimmed, 1);
  assert.equal(json.columns.find((c) => c.name === "id").kinds.integer, 4);
});
test("validate passes a clean file (exit 0)", () => {
  const { status, json } = run("scripts/validate.mjs", [clean, "--schema", "schemas/contacts.schema.json"]);
  assert.equal(status, 0, JSON.stringify(json));
  assert.equal(json.valid, true);
});
test("validate fails a dirty file (exit 1) with pointers", () => {
  const { status, json } = run("scripts/validate.mjs", [dirty, "--schema", "schemas/contacts.schema.json"]);
  assert.equal(status, 1);
  const pointers = json.errors.map((e) => e.pointer);
  for (const pointer of ["/1/signed_up", "/3/id", "/4/email"]) assert.ok(pointers.includes(pointer), pointers.join(" "));
});
test("validate with a bad schema is a usage error (exit 2)", () => {
  const schema = tempFile("s.json", JSON.stringify({ type: "object", if: {} }));
  assert.equal(run("scripts/validate.mjs", [clean, "--schema", schema]).status, 2);
});
test("missing arguments are a usage error (exit 2)", () => assert.equal(run("scripts/validate.mjs", []).status, 2));
test("normalise trims, folds, nulls blanks and drops blank rows", () => {
  const out = tempFile("out.json");
  const { status } = run("scripts/normalise.mjs", [dirty, "--out", out]);
  assert.equal(status, 0);
  const rows = JSON.parse(fs.readFileSync(out, "utf8"));
  assert.equal(rows.length, 4);
  assert.equal(rows[1].name, "Grace Hopper");
  assert.equal(rows[2].name, null);
});
test("normalise can snake_case headers and write CSV", () => {
  const input = tempFile("in.csv", "First Name,lastName\n a ,b\n");
  const out = tempFile("out.csv");
  run("scripts/normalise.mjs", [input, "--out", out, "--snake-case-headers"]);
  assert.deepEqual(parseCsv(fs.readFileSync(out, "utf8")).records, [{ first_name: "a", last_name: "b" }]);
});
test("dedupe keeps the first row per key, case-insensitively", () => {
  const out = tempFile("out.json");
  const { status, stderr } = run("scripts/dedupe.mjs", [dirty, "--keys", "email", "--out", out]);
  assert.equal(status, 0);
  assert.deepEqual(JSON.parse(stderr).duplicates, [{ index: 2, duplicateOf: 0 }]);
  assert.equal(JSON.parse(fs.readFileSync(out, "utf8")).length, 4);
});
test("dedupe --fail-on-duplicates exits 1", () => {
  assert.equal(run("scripts/dedupe.mjs", [dirty, "--keys", "email", "--fail-on-duplicates"]).status, 1);
});
test("dedupe refuses an unknown key column (exit 2)", () => {
  assert.equal(run("scripts/dedupe.mjs", [dirty, "--keys", "mail"]).status, 2);
});
test("JSONL input is read line by line", () => {
  const input = tempFile("in.jsonl", '{"a":1}\n{"a":1}\n\n{"a":2}\n');
  const { stderr } = run("scripts/dedupe.mjs", [input, "--keys", "a"]);
  assert.equal(JSON.parse(stderr).outputRows, 2);
});
