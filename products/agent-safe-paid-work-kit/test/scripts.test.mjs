import assert from "node:assert/strict";
import fs from "node:fs";
import path from "node:path";
import { test } from "node:test";
import { appendEntry, auditLedger, readLedger } from "../lib/ledger.mjs";
import { run, tempDir } from "./helpers.mjs";

const USDC = "0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913";
const terms = (amount) => ({ x402Version: 2, accepts: [{ scheme: "exact", network: "eip155:8453", asset: USDC, amount, payTo: "0x70997970C51812dc3A010C7d01b50e0d17dc79C8" }] });

test("check-policy: 0 for the example, 1 for a broken policy, 2 without a file", () => {
  assert.equal(run("scripts/check-policy.mjs", ["policy/example-policy.json"]).status, 0);
  const dir = tempDir();
  fs.writeFileSync(path.join(dir, "p.json"), JSON.stringify({ version: 1 }));
  assert.equal(run("scripts/check-policy.mjs", [path.join(dir, "p.json")]).status, 1);
  assert.equal(run("scripts/check-policy.mjs", []).status, 2);
});
test("check-payment exit codes: allow 0, approve 3, deny 1", () => {
  const dir = tempDir();
  for (const [amount, status] of [["10000", 0], ["3000000", 3], ["9000000", 1]]) {
    fs.writeFileSync(path.join(dir, "t.json"), JSON.stringify(terms(amount)));
    const result = run("scripts/check-payment.mjs", ["--policy", "policy/example-policy.json", "--terms", path.join(dir, "t.json")]);
    assert.equal(result.status, status, result.stdout + result.stderr);
  }
});
test("check-payment reads the header form and the ledger", () => {
  const dir = tempDir();
  const ledger = path.join(dir, "l.jsonl");
  const today = new Date().toISOString();
  appendEntry(ledger, { at: today, network: "eip155:8453", asset: USDC, amount: "19990000", payTo: "0x1111111111111111111111111111111111111111", transaction: "0xabc", state: "settled" });
  const header = Buffer.from(JSON.stringify(terms("20000"))).toString("base64");
  const result = run("scripts/check-payment.mjs", ["--policy", "policy/example-policy.json", "--header", header, "--ledger", ledger]);
  assert.equal(result.status, 1);
  assert.match(result.json.reasons.join(), /maxPerDay/);
});
test("ledger: the example is clean; a transaction counted for two payments is found", () => {
  const clean = run("scripts/ledger.mjs", ["ledger/receipts-ledger.example.jsonl"]);
  assert.equal(clean.status, 0, clean.stdout);
  assert.deepEqual(clean.json.byState, { settled: 1 });
  const dir = tempDir();
  const ledger = path.join(dir, "l.jsonl");
  fs.copyFileSync(path.resolve(import.meta.dirname, "../ledger/receipts-ledger.example.jsonl"), ledger);
  const [first] = readLedger(ledger);
  appendEntry(ledger, { ...first, id: "another", state: "settled", transaction: `0x${"0".repeat(63)}1` });
  const result = run("scripts/ledger.mjs", [ledger]);
  assert.equal(result.status, 1);
  assert.deepEqual(result.json.problems, ["line 4: settled without the signed nonce", `line 4: transaction 0x${"0".repeat(63)}1 already on line 3`]);
  assert.deepEqual(auditLedger(readLedger(ledger)), result.json.problems);
});
test("deliverable gate accepts a complete deliverable", () => {
  const dir = tempDir();
  fs.writeFileSync(path.join(dir, "report.md"), `${"word ".repeat(300)}\n## Sources\n## Caveats\n`);
  fs.writeFileSync(path.join(dir, "data.json"), "{}");
  const result = run("gates/deliverable-gate.mjs", [dir, "--spec", "templates/acceptance-spec.json"]);
  assert.equal(result.status, 0, result.stdout);
});
test("deliverable gate rejects missing parts and a leaked key", () => {
  const dir = tempDir();
  fs.writeFileSync(path.join(dir, "report.md"), `short\nkey: 0x${"ab".repeat(32)}\n`);
  const result = run("gates/deliverable-gate.mjs", [dir, "--spec", "templates/acceptance-spec.json"]);
  assert.equal(result.status, 1);
  const failed = result.json.checks.filter((c) => !c.ok).map((c) => c.check);
  for (const expected of ["data.json is delivered", "report.md has ≥ 300 words", 'report.md contains "## Sources"', "report.md holds no hex private key"]) {
    assert.ok(failed.includes(expected), failed.join("; "));
  }
});
test("deliverable gate checks digests", () => {
  const dir = tempDir();
  fs.writeFileSync(path.join(dir, "a.txt"), "x");
  const spec = path.join(tempDir(), "spec.json");
  fs.writeFileSync(spec, JSON.stringify({ sha256: { "a.txt": "2d711642b726b04401627ca9fbac32f5c8530fb1903cc4db02258717921a4881" } }));
  assert.equal(run("gates/deliverable-gate.mjs", [dir, "--spec", spec]).status, 0);
  fs.writeFileSync(path.join(dir, "a.txt"), "y");
  assert.equal(run("gates/deliverable-gate.mjs", [dir, "--spec", spec]).status, 1);
});
test("check-payment decides the cheapest allowed entry of several", () => {
  const dir = tempDir();
  const offered = { x402Version: 2, accepts: [...terms("9000000").accepts, ...terms("50000").accepts, ...terms("1").accepts] };
  fs.writeFileSync(path.join(dir, "t.json"), JSON.stringify(offered));
  const result = run("scripts/check-payment.mjs", ["--policy", "policy/example-policy.json", "--terms", path.join(dir, "t.json")]);
  assert.equal(result.status, 0, result.stderr);
  assert.equal(result.json.payment.amount, "1");
});
test("a corrupted or truncated ledger: the scripts exit 2 naming the file and line, with no stack trace", () => {
  const dir = tempDir();
  const ledger = path.join(dir, "l.jsonl");
  fs.writeFileSync(ledger, '{"at":"2026-01-10T09:00:00Z","state":"settled","amount":"1","payTo":"0x1111111111111111111111111111111111111111","network":"eip155:8453","asset":"0x1111111111111111111111111111111111111111"}\nnot json\n');
  fs.writeFileSync(path.join(dir, "t.json"), JSON.stringify(terms("10000")));
  for (const [script, args] of [
    ["scripts/ledger.mjs", [ledger]],
    ["scripts/check-payment.mjs", ["--policy", "policy/example-policy.json", "--terms", path.join(dir, "t.json"), "--ledger", ledger]],
  ]) {
    const result = run(script, args);
    assert.equal(result.status, 2, result.stdout);
    assert.match(result.stderr, new RegExp(`${ledger.replaceAll("\\", "\\\\")}:2: not JSON`));
    assert.doesNotMatch(result.stderr, /at .*\.mjs:\d+/);
  }
  fs.writeFileSync(ledger, '{"at":"2026-01-10T09:00:00Z","id":"x","state":"signed","nonce":"0x01","validBefore":"1"}\n');
  const cut = run("scripts/check-payment.mjs", ["--policy", "policy/example-policy.json", "--terms", path.join(dir, "t.json"), "--ledger", ledger]);
  assert.equal(cut.status, 2);
  assert.match(cut.stderr, /:1: payment x is "signed" but its "reserved" line \(amount, payee\) is missing/);
});
