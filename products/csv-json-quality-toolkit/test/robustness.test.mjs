// Real sizes, wrong calls and data that must never be lost silently.
import assert from "node:assert/strict";
import fs from "node:fs";
import { test } from "node:test";
import { parseCsv } from "../lib/csv.mjs";
import path from "node:path";
import { root, run, tempFile } from "./helpers.mjs";

/** A CSV of `rows` contact rows, written in pieces (never one large string). */
function bigCsv(rows) {
  const file = tempFile("big.csv");
  const fd = fs.openSync(file, "w");
  fs.writeSync(fd, "id,name,email,country,signed_up\n");
  let chunk = "";
  for (let i = 1; i <= rows; i++) {
    chunk += `${i},Person ${i % 977},p${i}@example.com,${["FRA", "DEU", "USA"][i % 3]},2024-0${(i % 9) + 1}-1${i % 10}\n`;
    if (chunk.length > 1 << 16) {
      fs.writeSync(fd, chunk);
      chunk = "";
    }
  }
  fs.writeSync(fd, chunk);
  fs.closeSync(fd);
  return file;
}

const oneLine = (stderr) => stderr.trim().split("\n");

test("profile and the gate stream 150,000 rows (where 1.0.0 crashed) in a 40 MB heap", () => {
  const file = bigCsv(150_000);
  const profile = run("scripts/profile.mjs", [file], { heapMb: 40 });
  assert.equal(profile.status, 0, profile.stderr);
  assert.equal(profile.json.rows, 150_000);
  const id = profile.json.columns.find((c) => c.name === "id");
  assert.equal(id.min, 1);
  assert.equal(id.max, 150_000);
  assert.equal(profile.json.columns.find((c) => c.name === "country").distinct, 3);
  const gate = run("gates/quality-gate.mjs", [file, "--gate", "schemas/contacts.gate.json"], { heapMb: 40 });
  assert.equal(gate.status, 0, gate.stdout + gate.stderr);
  assert.equal(gate.json.pass, true);
});

test("a progress line on stderr when asked (and for long runs)", () => {
  const { status, stderr } = run("scripts/profile.mjs", ["examples/contacts-dirty.csv", "--progress"]);
  assert.equal(status, 0);
  assert.match(stderr, /profile: 5 rows/);
});

test("wrong calls are exit 2 with one clear line, never a stack trace", () => {
  const cases = [
    ["scripts/profile.mjs", ["no-such-file.csv"], /no-such-file\.csv/],
    ["scripts/validate.mjs", ["no-such-file.csv", "--schema", "schemas/contacts.schema.json"], /no-such-file\.csv/],
    ["scripts/validate.mjs", ["examples/contacts-clean.csv", "--schema", "no-such-schema.json"], /no-such-schema\.json/],
    ["gates/quality-gate.mjs", ["examples/contacts-clean.csv", "--gate", "schemas/contacts.gaet.json"], /contacts\.gaet\.json/],
    ["gates/quality-gate.mjs", ["examples/contacts-clean.csv", "--gate", tempFile("empty.json", "{}")], /no rules/],
    ["gates/quality-gate.mjs", ["examples/contacts-clean.csv", "--gate", tempFile("typo.json", '{"minRow": 1}')], /minRow/],
    ["gates/quality-gate.mjs", ["examples/contacts-clean.csv", "--gate", tempFile("bad.json", "{ not json")], /JSON/],
    ["scripts/normalise.mjs", ["missing.csv", "--out", tempFile("o.csv")], /missing\.csv/],
    ["scripts/dedupe.mjs", ["missing.csv", "--keys", "a"], /missing\.csv/],
    ["scripts/profile.mjs", ["examples/contacts-clean.csv", "--tpo", "3"], /--tpo/],
  ];
  for (const [script, args, message] of cases) {
    const { status, stderr } = run(script, args);
    assert.equal(status, 2, `${script} ${args.join(" ")}: ${stderr}`);
    const lines = oneLine(stderr);
    assert.equal(lines.length, 1, `${script} ${args.join(" ")}: ${stderr}`);
    assert.match(lines[0], message);
    assert.doesNotMatch(stderr, /\n\s+at /);
  }
});

test("normalise refuses a ragged row instead of dropping its extra cell", () => {
  const input = tempFile("ragged.csv", "a,b\n1,2\n3,4,5\n");
  const out = tempFile("out.csv");
  const { status, stderr } = run("scripts/normalise.mjs", [input, "--out", out]);
  assert.equal(status, 1);
  assert.match(stderr, /row 3/);
  assert.equal(fs.existsSync(out), false, "no partial output");
});

test("--snake-case-headers refuses to merge colliding columns", () => {
  const input = tempFile("names.csv", "First Name,first_name,firstName\nAda,Grace,Alan\n");
  const out = tempFile("out.csv");
  const { status, stderr } = run("scripts/normalise.mjs", [input, "--out", out, "--snake-case-headers"]);
  assert.equal(status, 1);
  assert.match(stderr, /First Name.*first_name.*firstName/);
  assert.equal(fs.existsSync(out), false);
});

test("duplicate header names are refused by normalise (one value would be lost)", () => {
  const input = tempFile("dup.csv", "a,a\n1,2\n");
  assert.equal(run("scripts/normalise.mjs", [input, "--out", tempFile("o.csv")]).status, 1);
});

test("validate checks the calendar of a date-time and checks uuids", () => {
  const schema = tempFile(
    "s.json",
    JSON.stringify({ type: "object", properties: { at: { type: "string", format: "date-time" }, id: { type: "string", format: "uuid" } } }),
  );
  const input = tempFile("in.jsonl", '{"at":"2024-02-30T10:00:00Z","id":"not-a-uuid"}\n{"at":"2024-02-29T23:59:59+01:00","id":"123e4567-e89b-12d3-a456-426614174000"}\n');
  const { status, json } = run("scripts/validate.mjs", [input, "--schema", schema]);
  assert.equal(status, 1);
  assert.deepEqual(json.errors.map((e) => e.pointer), ["/0/at", "/0/id"]);
});

test("a format the validator does not know is refused, not passed unchecked", () => {
  const schema = tempFile("s.json", JSON.stringify({ properties: { a: { type: "string", format: "credit-card" } } }));
  const { status, stderr } = run("scripts/validate.mjs", ["examples/contacts-clean.csv", "--schema", schema]);
  assert.equal(status, 2);
  assert.match(stderr, /credit-card/);
});

test("semicolon- and tab-separated files are detected, or named with --delimiter", () => {
  const clean = fs.readFileSync(path.join(root, "examples/contacts-clean.csv"), "utf8");
  const semicolon = tempFile("semi.csv", clean.replaceAll(",", ";"));
  const tab = tempFile("tab.tsv", clean.replaceAll(",", "\t"));
  for (const args of [[semicolon], [tab], [semicolon, "--delimiter", ";"], [tab, "--delimiter", "tab"]]) {
    const { status, json, stderr } = run("scripts/validate.mjs", [...args, "--schema", "schemas/contacts.schema.json"]);
    assert.equal(status, 0, `${args.join(" ")}: ${JSON.stringify(json)} ${stderr}`);
  }
  // Named wrongly, the file is one column: the contract fails.
  assert.equal(run("scripts/validate.mjs", [semicolon, "--delimiter", ",", "--schema", "schemas/contacts.schema.json"]).status, 1);
});

test("normalise keeps the input's delimiter when writing CSV", () => {
  const input = tempFile("semi.csv", "a;b\n x ;y\n");
  const out = tempFile("out.csv");
  assert.equal(run("scripts/normalise.mjs", [input, "--out", out]).status, 0);
  assert.deepEqual(parseCsv(fs.readFileSync(out, "utf8"), { delimiter: ";" }).records, [{ a: "x", b: "y" }]);
});

test("UTF-16 (LE or BE, with or without a BOM) is decoded, not read as NUL-filled text", () => {
  const text = "name,city\nZoë,Zürich\n😀,\"a,b\"\n";
  const le = Buffer.from(text, "utf16le");
  const be = Buffer.from(le).swap16();
  const bom = (bytes, mark) => Buffer.concat([Buffer.from(mark), bytes]);
  for (const [label, bytes] of [["LE+BOM", bom(le, [0xff, 0xfe])], ["BE+BOM", bom(be, [0xfe, 0xff])], ["LE", le], ["BE", be]]) {
    const { status, json, stderr } = run("scripts/profile.mjs", [tempFile("u16.csv", bytes)]);
    assert.equal(status, 0, `${label}: ${stderr}`);
    assert.deepEqual(json.columns.map((c) => c.name), ["name", "city"], label);
    assert.deepEqual(json.columns[1].top.map((t) => t.value).sort(), ["Zürich", "a,b"], label);
    assert.equal(json.encoding, label.startsWith("LE") ? "utf-16le" : "utf-16be", label);
  }
});

test("an empty file, a BOM alone, UTF-32, Latin-1 and NUL bytes are refused (exit 1) with one line saying why", () => {
  const cases = [
    ["empty.csv", "", /empty \(0 bytes\)/],
    ["bom.csv", Buffer.from([0xef, 0xbb, 0xbf]), /only a byte order mark/],
    ["empty.jsonl", "", /empty/],
    ["u32.csv", Buffer.concat([Buffer.from([0xff, 0xfe, 0, 0]), Buffer.from("a\0\0\0\n\0\0\0")]), /UTF-32/],
    ["latin1.csv", Buffer.from("name\ncaf\xe9\n", "latin1"), /not valid UTF-8 \(byte 8 is 0xe9\)/],
    ["nul.csv", "a,b\n1,\0\n", /NUL character \(character 7\)/],
  ];
  for (const [name, content, message] of cases) {
    const file = tempFile(name, content);
    for (const [script, args] of [
      ["scripts/profile.mjs", []],
      ["scripts/validate.mjs", ["--schema", "schemas/contacts.schema.json"]],
      ["gates/quality-gate.mjs", ["--gate", "schemas/contacts.gate.json"]],
      ["scripts/normalise.mjs", ["--out", tempFile("out.csv")]],
    ]) {
      const { status, stderr } = run(script, [file, ...args]);
      assert.equal(status, 1, `${script} ${name}: ${stderr}`);
      assert.equal(oneLine(stderr).length, 1, stderr);
      assert.match(stderr, message, `${script} ${name}`);
    }
  }
});
