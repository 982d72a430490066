// guardClient against a hostile local seller: prices that change between quotes, no receipts,
// concurrent calls in one process and in two processes sharing one ledger.
import assert from "node:assert/strict";
import { spawn, spawnSync } from "node:child_process";
import fs from "node:fs";
import path from "node:path";
import { after, test } from "node:test";
import { createBudgetGuard, guardClient } from "../lib/budget-guard.mjs";
import { foldLedger, readLedger } from "../lib/ledger.mjs";
import { tempDir } from "./helpers.mjs";
import { MiniX402Client, miniWrapFetch } from "./support/mini-x402.mjs";
import { SELLER, startSeller, USDC } from "./support/seller.mjs";

const policy = (extra = {}) => ({ version: 1, networks: ["eip155:8453"], assets: [USDC], maxPerPayment: "50000", maxPerDay: "100000", ...extra });
const sellers = [];
const seller = async (options) => {
  const s = await startSeller(options);
  sellers.push(s);
  return s;
};
after(() => Promise.all(sellers.map((s) => s.close())));

function guarded(options = {}, clientOptions = {}) {
  const ledgerPath = options.ledgerPath ?? path.join(tempDir(), "ledger.jsonl");
  const client = guardClient(new MiniX402Client(clientOptions), { policy: policy(), ledgerPath, ...options });
  return { pay: miniWrapFetch(fetch, client), ledgerPath, records: () => foldLedger(readLedger(ledgerPath)) };
}
const nonces = (s) => s.received.map((p) => p.payload.authorization.nonce).sort();
const ledgerNonces = (records) => records.filter((r) => r.nonce).map((r) => r.nonce).sort();

test("a price raised after the probe is refused before signing: the seller holds no signature above the policy", async () => {
  const s = await seller({ price: (n) => (n === 0 ? "10000" : "900000") });
  const { pay, records } = guarded();
  assert.equal((await fetch(s.url)).status, 402); // the probe sees $0.01
  await assert.rejects(pay(s.url), /spend policy: amount 900000 exceeds maxPerPayment 50000/);
  assert.deepEqual(s.received, []);
  assert.deepEqual(records(), []);
});

test("what is signed is what was checked and recorded: amount, payee, nonce, validBefore, URL", async () => {
  const s = await seller({ price: () => "10000" });
  const { pay, records } = guarded();
  assert.equal((await pay(s.url)).status, 200);
  const [record] = records();
  const signed = s.received[0].payload.authorization;
  assert.equal(record.state, "settled");
  assert.equal(record.amount, signed.value);
  assert.equal(record.payTo, SELLER);
  assert.equal(record.nonce, signed.nonce);
  assert.equal(record.validBefore, signed.validBefore);
  assert.equal(record.url, s.url);
  assert.match(record.transaction, /^0x[0-9a-f]{64}$/);
});

test("without receipts the day limit holds: signed payments count until their validBefore", async () => {
  const s = await seller({ price: () => "40000", receipts: "none" });
  const { pay, records } = guarded();
  assert.equal((await pay(s.url)).status, 200);
  assert.equal((await pay(s.url)).status, 200);
  await assert.rejects(pay(s.url), /today's spend would be 120000, over maxPerDay 100000/);
  assert.deepEqual(s.signedValues(), ["40000", "40000"]);
  assert.deepEqual(records().map((r) => r.state), ["signed", "signed"]);
  assert.deepEqual(ledgerNonces(records()), nonces(s));
});

test("five concurrent calls cannot pass the day limit together", async () => {
  const s = await seller({ price: () => "40000", receipts: "none" });
  const { pay, records } = guarded();
  const results = await Promise.allSettled(Array.from({ length: 5 }, () => pay(s.url)));
  assert.equal(results.filter((r) => r.status === "fulfilled").length, 2);
  assert.equal(s.received.length, 2);
  assert.deepEqual(ledgerNonces(records()), nonces(s));
});

test("two processes sharing one ledger stay within one day limit; every signed nonce is in the ledger", async () => {
  const s = await seller({ price: () => "10000", receipts: "none" });
  const ledgerPath = path.join(tempDir(), "shared.jsonl");
  const worker = path.join(import.meta.dirname, "support/pay-worker.mjs");
  const startAt = String(Date.now() + 300);
  const run = () =>
    new Promise((resolve, reject) => {
      const child = spawn(process.execPath, [worker, s.url, ledgerPath, JSON.stringify(policy({ maxPerDay: "70000" })), "6", startAt]);
      let out = "";
      child.stdout.on("data", (d) => (out += d));
      child.stderr.on("data", (d) => (out += d));
      child.on("error", reject);
      child.on("close", (code) => (code === 0 ? resolve(JSON.parse(out)) : reject(new Error(out))));
    });
  const [a, b] = await Promise.all([run(), run()]);
  const paid = [...a, ...b].filter((r) => r === 200).length;
  assert.equal(paid, 7, JSON.stringify([a, b]));
  assert.equal(s.received.length, 7);
  const records = foldLedger(readLedger(ledgerPath));
  assert.deepEqual(ledgerNonces(records), nonces(s));
  assert.equal(records.reduce((sum, r) => sum + BigInt(r.amount), 0n), 70000n);
  assert.equal(fs.existsSync(`${ledgerPath}.lock`), false);
});

test("once validBefore has passed without a receipt the payment expires and no longer counts", async () => {
  const s = await seller({ price: () => "50000", receipts: "none", maxTimeoutSeconds: 60 });
  let offset = 0;
  const { pay, records } = guarded({ policy: policy({ maxPerDay: "80000" }), now: () => new Date(Date.now() + offset) });
  assert.equal((await pay(s.url)).status, 200);
  await assert.rejects(pay(s.url), /over maxPerDay/);
  offset = 120_000;
  assert.equal((await pay(s.url)).status, 200);
  assert.deepEqual(records().map((r) => r.state), ["expired", "signed"]);
});

test("a seller that says it did not settle: the signature still counts until validBefore", async () => {
  const s = await seller({ price: () => "50000", receipts: "fail" });
  const { pay, records } = guarded({ policy: policy({ maxPerDay: "80000" }) });
  assert.equal((await pay(s.url)).status, 200);
  assert.deepEqual(records().map((r) => [r.state, r.reason]), [["failed", "insufficient_funds"]]);
  await assert.rejects(pay(s.url), /over maxPerDay/);
});

test("network, asset, blocked payee and allow list are checked on the requirement being signed", async () => {
  const other = "0x1111111111111111111111111111111111111111";
  for (const [options, extra, reason] of [
    [{ network: "eip155:1" }, {}, /network eip155:1 is not allowed/],
    [{ asset: other }, {}, /asset 0x1111111111111111111111111111111111111111 is not allowed/],
    [{}, { blockedPayees: [SELLER] }, /is blocked/],
    [{}, { payees: [other] }, /not on the allow list/],
  ]) {
    const s = await seller({ price: () => "1000", ...options });
    const { pay } = guarded({ policy: policy(extra) });
    await assert.rejects(pay(s.url), reason);
    assert.equal(s.received.length, 0);
  }
});

test("per payee per day and payments per minute", async () => {
  const a = await seller({ price: () => "30000", receipts: "none" });
  const b = await seller({ price: () => "30000", receipts: "none", payTo: "0x2222222222222222222222222222222222222222" });
  const { pay } = guarded({ policy: policy({ maxPerPayeePerDay: "60000" }) });
  await pay(a.url);
  await pay(a.url);
  await assert.rejects(pay(a.url), /over maxPerPayeePerDay 60000/);
  assert.equal((await pay(b.url)).status, 200);
  const c = await seller({ price: () => "1", receipts: "none" });
  const limited = guarded({ policy: policy({ maxPaymentsPerMinute: 2 }) });
  await limited.pay(c.url);
  await limited.pay(c.url);
  await assert.rejects(limited.pay(c.url), /2 payments in the last minute/);
  assert.equal(c.received.length, 2);
});

test("above approvalAbove a payment waits for approve(); refused means nothing is signed", async () => {
  const s = await seller({ price: () => "30000" });
  const asked = [];
  let answer = false;
  const { pay } = guarded({ policy: policy({ approvalAbove: "20000" }), approve: async (request) => (asked.push(request.amount), answer) });
  await assert.rejects(pay(s.url), /above approvalAbove 20000: ask a human; not approved/);
  assert.equal(s.received.length, 0);
  answer = true;
  assert.equal((await pay(s.url)).status, 200);
  assert.deepEqual(asked, ["30000", "30000"]);
});

test("a signer that signs something other than the checked requirement is stopped before the signature leaves", async () => {
  const s = await seller({ price: () => "10000" });
  const { pay, records } = guarded({}, { tamper: (auth) => ({ ...auth, value: "990000" }) });
  await assert.rejects(pay(s.url), /signed amount 990000 ≠ reserved 10000; the signature is not sent/);
  assert.equal(s.received.length, 0);
  assert.deepEqual(records().map((r) => r.state), ["released"]);
  const long = await seller({ price: () => "10000", maxTimeoutSeconds: 365 * 86400 });
  await assert.rejects(guarded().pay(long.url), /maxTimeoutSeconds 31536000 is outside 1..3600/);
});

test("a hosts policy needs the requested URL, which the seller's own resource.url is not", async () => {
  const s = await seller({ price: () => "10000" });
  await assert.rejects(guarded({ policy: policy({ hosts: ["127.0.0.1"] }) }).pay(s.url), /guard the x402HTTPClient/);
  assert.equal(s.received.length, 0);
});

test("the ledger lock: a dead holder's lock is recovered; a live holder makes the guard wait, then refuse", async () => {
  const s = await seller({ price: () => "10000" });
  const dead = spawnSync(process.execPath, ["-e", ""]).pid;
  const first = guarded();
  fs.writeFileSync(`${first.ledgerPath}.lock`, JSON.stringify({ pid: dead, host: (await import("node:os")).hostname(), token: "old", at: new Date().toISOString() }));
  assert.equal((await first.pay(s.url)).status, 200);
  const second = guarded({ lock: { timeoutMs: 200 } });
  fs.writeFileSync(`${second.ledgerPath}.lock`, JSON.stringify({ pid: process.pid, host: (await import("node:os")).hostname(), token: "live", at: new Date().toISOString() }));
  await assert.rejects(second.pay(s.url), /ledger lock .* is held by another process/);
  assert.equal(s.received.length, 1);
});

test("guardClient refuses an invalid policy, a client without hooks, and guarding twice; createBudgetGuard is gone", () => {
  assert.throws(() => guardClient(new MiniX402Client(), { policy: { version: 1 }, ledgerPath: "x" }), /invalid spend policy/);
  assert.throws(() => guardClient({}, { policy: policy(), ledgerPath: "x" }), /needs an x402Client/);
  const client = guardClient(new MiniX402Client(), { policy: policy(), ledgerPath: "x" });
  assert.throws(() => guardClient(client, { policy: policy(), ledgerPath: "x" }), /already guarded/);
  assert.throws(() => createBudgetGuard({}), /replaced by guardClient/);
});

test("the package entry point exports guardClient", async () => {
  const kit = await import("agent-safe-paid-work-kit");
  assert.equal(kit.guardClient, guardClient);
  for (const name of ["decide", "checkPolicy", "readLedger", "auditLedger", "scanSecrets", "withLedgerLock"]) assert.equal(typeof kit[name], "function", name);
});
