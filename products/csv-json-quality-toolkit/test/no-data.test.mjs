// A file with no data passes nothing, whatever it holds instead (nothing, whitespace, `[]`), and a
// gate rule on a column the file lacks fails instead of passing unchecked.
import assert from "node:assert/strict";
import { test } from "node:test";
import { run, tempFile } from "./helpers.mjs";

const EMPTY = {
  "data.csv": ["", "\n", "\r\n\r\n", "   \n\t\n", "\ufeff\n"],
  "data.jsonl": ["", "\n", "\n\n  \n", " "],
  "data.json": ["", "[]", "[ ]\n", "\n[\n]\n", "  \n"],
};

test("every script refuses a file with no data (exit 1, a message), like a 0-byte file", () => {
  const gate = tempFile("gate.json", JSON.stringify({ maxRows: 100 }));
  for (const [name, contents] of Object.entries(EMPTY)) {
    for (const content of contents) {
      const file = tempFile(name, content);
      const at = `${name} ${JSON.stringify(content)}`;
      for (const [script, args] of [
        ["gates/quality-gate.mjs", ["--gate", gate]],
        ["scripts/profile.mjs", []],
        ["scripts/normalise.mjs", ["--out", tempFile("out.jsonl")]],
        ["scripts/dedupe.mjs", ["--keys", "id"]],
      ]) {
        const r = run(script, [file, ...args, "--quiet"]);
        // dedupe on JSON reads the columns first: a file with no data is refused before --keys is checked.
        assert.equal(r.status, 1, `${script} ${at}: ${r.stdout}${r.stderr}`);
        assert.match(r.stderr, /is empty|has no data|JSON array is not closed/, `${script} ${at}`);
      }
    }
  }
});

test("a header with no rows is still a file of 0 rows (the gate's minRows decides)", () => {
  const file = tempFile("header.csv", "id,email\n");
  assert.equal(run("gates/quality-gate.mjs", [file, "--gate", tempFile("g.json", JSON.stringify({ minRows: 0 })), "--quiet"]).status, 0);
  assert.equal(run("gates/quality-gate.mjs", [file, "--gate", tempFile("g.json", JSON.stringify({ minRows: 1 })), "--quiet"]).status, 1);
});

test("maxBlankRate on a column the file lacks fails and says so", () => {
  for (const [name, content] of [["d.csv", "id\n1\n"], ["d.jsonl", '{"id":1}\n'], ["d.json", '[{"id":1}]']]) {
    const gate = tempFile("gate.json", JSON.stringify({ maxBlankRate: { email: 1 } }));
    const r = run("gates/quality-gate.mjs", [tempFile(name, content), "--gate", gate, "--quiet"]);
    assert.equal(r.status, 1, r.stdout);
    assert.deepEqual(r.json.rules.filter((x) => !x.ok).map((x) => x.detail), ["column email is not in the file (columns: id)"]);
  }
});
