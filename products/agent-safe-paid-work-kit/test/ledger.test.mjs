import assert from "node:assert/strict";
import fs from "node:fs";
import path from "node:path";
import { test } from "node:test";
import { appendEntry, auditLedger, counts, foldLedger, LedgerError, openAuthorizations, readLedger, repairLedger, unknownAuthorizations } from "../lib/ledger.mjs";
import { decide } from "../lib/policy.mjs";
import { root, run, tempDir } from "./helpers.mjs";

const USDC = "0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913";
const PAYEE = "0x70997970C51812dc3A010C7d01b50e0d17dc79C8";
const base = { network: "eip155:8453", asset: USDC, payTo: PAYEE, url: "https://api.example/v1/x" };
const nonce = (n) => `0x${String(n).padStart(64, "0")}`;
const policy = JSON.parse(fs.readFileSync(path.join(root, "policy/example-policy.json"), "utf8"));

/** A ledger as the guard writes it: reserved → signed → settled, one left signed, one released. */
function guardLedger(file) {
  const at = "2026-01-10T09:00:00.000Z";
  appendEntry(file, { at, id: "a", state: "reserved", ...base, amount: "10000", expiresAt: "2026-01-10T09:06:00.000Z" });
  appendEntry(file, { at, id: "a", state: "signed", payer: "0x90F79bf6EB2c4f870365E785982E1f101E93b906", nonce: nonce(1), validBefore: "1768035900" });
  appendEntry(file, { at, id: "a", state: "settled", transaction: nonce(99) });
  appendEntry(file, { at, id: "b", state: "reserved", ...base, amount: "20000", expiresAt: "2026-01-10T09:06:00.000Z" });
  appendEntry(file, { at, id: "b", state: "signed", payer: "0x90F79bf6EB2c4f870365E785982E1f101E93b906", nonce: nonce(2), validBefore: "1768035900" });
  appendEntry(file, { at, id: "c", state: "reserved", ...base, amount: "30000", expiresAt: "2026-01-10T09:06:00.000Z" });
  appendEntry(file, { at, id: "c", state: "released", reason: "signing failed" });
}

test("the lines of a payment fold into one record; the state decides what counts", () => {
  const file = path.join(tempDir(), "l.jsonl");
  guardLedger(file);
  const records = foldLedger(readLedger(file));
  assert.deepEqual(records.map((r) => [r.id, r.state, r.amount, r.nonce]), [["a", "settled", "10000", nonce(1)], ["b", "signed", "20000", nonce(2)], ["c", "released", "30000", undefined]]);
  const before = new Date("2026-01-10T09:01:00Z"); // validBefore 1768035900 = 09:05:00Z
  const afterValidity = new Date("2026-01-10T09:10:00Z");
  assert.deepEqual(records.map((r) => counts(r, before)), [true, true, false]);
  // Past validBefore, a signature without a receipt still counts: only the chain can say it was not used.
  assert.deepEqual(records.map((r) => counts(r, afterValidity)), [true, true, false]);
  assert.equal(decide({ ...policy, maxPerDay: "30000" }, { ...base, amount: "1" }, readLedger(file), afterValidity).decision, "deny");
  appendEntry(file, { at: "2026-01-10T09:11:00.000Z", id: "b", state: "expired", chainState: "unused", block: "12" });
  assert.equal(decide({ ...policy, maxPerDay: "30000" }, { ...base, amount: "1" }, readLedger(file), afterValidity).decision, "allow");
});

test("open authorizations: signed, no receipt, still valid", () => {
  const file = path.join(tempDir(), "l.jsonl");
  guardLedger(file);
  assert.deepEqual(openAuthorizations(readLedger(file), new Date("2026-01-10T09:01:00Z")).map((a) => [a.id, a.nonce, a.validBefore]), [["b", nonce(2), "1768035900"]]);
  assert.deepEqual(openAuthorizations(readLedger(file), new Date("2026-01-10T09:10:00Z")), []);
  assert.deepEqual(unknownAuthorizations(readLedger(file), new Date("2026-01-10T09:10:00Z")).map((a) => a.id), ["b"]);
});

test("readLedger: a missing file is empty; a bad line names the file and line; a half-written last line is skipped and repairLedger cuts it", () => {
  const file = path.join(tempDir(), "l.jsonl");
  assert.deepEqual(readLedger(file), []);
  guardLedger(file);
  const good = fs.readFileSync(file, "utf8");
  for (const [bad, message] of [
    ["{\"at\":\"x\",\"state\":\"signed\"}", /:8: no valid `at` time/],
    ["[1]", /:8: not a JSON object/],
    [`{"at":"2026-01-10T09:00:00Z","state":"settled","amount":"1.5"}`, /:8: amount "1.5" is not atomic units/],
    ["{oops", /:8: not JSON/],
  ]) {
    fs.writeFileSync(file, `${good}${bad}\n`);
    assert.throws(() => readLedger(file), (error) => error instanceof LedgerError && error.message.startsWith(file) && message.test(error.message));
  }
  fs.writeFileSync(file, `${good}{"at":"2026-01-10T09:0`);
  assert.equal(readLedger(file).length, 7);
  assert.equal(repairLedger(file), true);
  assert.equal(fs.readFileSync(file, "utf8"), good);
  fs.writeFileSync(file, good.trimEnd());
  assert.equal(repairLedger(file), true);
  assert.equal(fs.readFileSync(file, "utf8"), good);
});

test("audit: a guard-written ledger is clean; a nonce used twice, a signed line without its nonce and unknown states are found", () => {
  const file = path.join(tempDir(), "l.jsonl");
  guardLedger(file);
  assert.deepEqual(auditLedger(readLedger(file)), []);
  appendEntry(file, { at: "2026-01-10T10:00:00.000Z", id: "d", state: "reserved", ...base, amount: "1" });
  appendEntry(file, { at: "2026-01-10T10:00:00.000Z", id: "d", state: "signed", payer: "0x90F79bf6EB2c4f870365E785982E1f101E93b906", nonce: nonce(2), validBefore: "1" });
  appendEntry(file, { at: "2026-01-10T10:00:00.000Z", id: "e", state: "signed", ...base, amount: "1" });
  appendEntry(file, { at: "2026-01-10T10:00:00.000Z", id: "f", state: "paid", ...base, amount: "1" });
  assert.deepEqual(auditLedger(readLedger(file)), [
    'line 11: unknown state "paid"',
    `line 9: nonce ${nonce(2)} already on line 5`,
    "line 10: signed without the signed nonce",
  ]);
});

test("scripts/ledger.mjs lists payments by state and the open authorizations", () => {
  const file = path.join(tempDir(), "l.jsonl");
  guardLedger(file);
  const result = run("scripts/ledger.mjs", [file, "--now", "2026-01-10T09:01:00Z"]);
  assert.equal(result.status, 0, result.stderr);
  assert.deepEqual(result.json.byState, { settled: 1, signed: 1, released: 1 });
  assert.deepEqual(result.json.settledByDayAndPayee, { [`2026-01-10 ${PAYEE}`]: "10000" });
  assert.deepEqual(result.json.openAuthorizations.map((a) => a.nonce), [nonce(2)]);
  assert.equal(run("scripts/ledger.mjs", [path.join(tempDir(), "missing.jsonl")]).status, 2);
});
