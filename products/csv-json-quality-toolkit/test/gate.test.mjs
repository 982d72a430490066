import assert from "node:assert/strict";
import { test } from "node:test";
import { run, tempFile } from "./helpers.mjs";

test("the gate passes a clean file", () => {
  const { status, json } = run("gates/quality-gate.mjs", ["examples/contacts-clean.csv", "--gate", "schemas/contacts.gate.json"]);
  assert.equal(status, 0, JSON.stringify(json));
  assert.equal(json.pass, true);
});
test("the gate fails a dirty file and names every broken rule", () => {
  const { status, json } = run("gates/quality-gate.mjs", ["examples/contacts-dirty.csv", "--gate", "schemas/contacts.gate.json"]);
  assert.equal(status, 1);
  const failed = json.rules.filter((r) => !r.ok).map((r) => r.rule);
  assert.ok(failed.some((r) => r.startsWith("duplicate rate on email")), failed.join("; "));
  assert.ok(failed.some((r) => r.startsWith("invalid row rate")), failed.join("; "));
  assert.ok(failed.some((r) => r.startsWith("blank rate of name")), failed.join("; "));
});
test("row limits are enforced", () => {
  const gate = tempFile("gate.json", JSON.stringify({ minRows: 10 }));
  assert.equal(run("gates/quality-gate.mjs", ["examples/contacts-clean.csv", "--gate", gate]).status, 1);
});
test("a missing gate file argument is a usage error", () => {
  assert.equal(run("gates/quality-gate.mjs", ["examples/contacts-clean.csv"]).status, 2);
});
