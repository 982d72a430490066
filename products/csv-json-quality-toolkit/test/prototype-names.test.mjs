// Columns named like the properties every plain object inherits (__proto__, constructor, toString…)
// must be data like any other name, in every script and every input format.
import assert from "node:assert/strict";
import fs from "node:fs";
import { test } from "node:test";
import { run, tempFile } from "./helpers.mjs";

const NAMES = Object.getOwnPropertyNames(Object.prototype);
/** Four rows: a, b, a again (a duplicate), and one without the value (blank in CSV, absent in JSON). */
const VALUES = ["a", "b", "a", undefined];

function files(name) {
  const csv = `id,${name}\n${VALUES.map((v, i) => `${i + 1},${v ?? ""}`).join("\n")}\n`;
  const objects = VALUES.map((v, i) => (v === undefined ? `{"id":${i + 1}}` : `{"id":${i + 1},${JSON.stringify(name)}:${JSON.stringify(v)}}`));
  return {
    csv: tempFile("data.csv", csv),
    jsonl: tempFile("data.jsonl", `${objects.join("\n")}\n`),
    json: tempFile("data.json", `[${objects.join(",\n")}]\n`),
  };
}
const readJsonl = (file) => fs.readFileSync(file, "utf8").trim().split("\n").map((line) => JSON.parse(line));
const own = (record, name) => (Object.hasOwn(record, name) ? record[name] : "(absent)");

for (const name of NAMES) {
  test(`a column named ${name} is data in every script and format`, () => {
    const schema = tempFile("schema.json", JSON.stringify({ type: "object", required: [name], properties: { [name]: { type: "string" } } }));
    const gate = tempFile("gate.json", JSON.stringify({ keyColumns: [name], maxDuplicateRate: 0, requiredColumns: [name], maxBlankRate: { [name]: 0.2 } }));
    for (const [format, file] of Object.entries(files(name))) {
      const at = `${name} in ${format}`;
      const blank = format === "csv" ? null : "(absent)";

      const normalised = tempFile("out.jsonl");
      const n = run("scripts/normalise.mjs", [file, "--out", normalised, "--quiet"]);
      assert.equal(n.status, 0, `${at}: ${n.stderr}`);
      assert.deepEqual(readJsonl(normalised).map((r) => own(r, name)), ["a", "b", "a", blank], at);

      const deduped = tempFile("out.jsonl");
      const d = run("scripts/dedupe.mjs", [file, "--keys", name, "--out", deduped, "--quiet"]);
      assert.equal(d.status, 0, `${at}: ${d.stderr}`);
      assert.deepEqual(readJsonl(deduped).map((r) => r.id), [1, 2, 4].map((i) => (format === "csv" ? String(i) : i)), at);

      const p = run("scripts/profile.mjs", [file, "--quiet"]);
      assert.equal(p.status, 0, `${at}: ${p.stderr}`);
      const column = p.json.columns.find((c) => c.name === name);
      assert.deepEqual({ filled: column?.filled, blank: column?.blank, distinct: column?.distinct }, { filled: 3, blank: 1, distinct: 2 }, at);

      const v = run("scripts/validate.mjs", [file, "--schema", schema, "--quiet"]);
      assert.equal(v.status, 1, `${at}: ${v.stdout}${v.stderr}`);
      assert.equal(v.json.invalidRows, 1, `${at}: ${v.stdout}`);

      const g = run("gates/quality-gate.mjs", [file, "--gate", gate, "--quiet"]);
      assert.equal(g.status, 1, `${at}: ${g.stdout}${g.stderr}`);
      const failed = g.json.rules.filter((r) => !r.ok).map((r) => r.rule);
      assert.deepEqual(failed, [`duplicate rate on ${name} ≤ 0`, `blank rate of ${name} ≤ 0.2`], at);
    }
  });
}
