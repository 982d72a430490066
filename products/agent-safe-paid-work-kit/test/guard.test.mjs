// guardClient against a hostile local seller: prices that change between quotes, no receipts,
// concurrent calls in one process and in two processes sharing one ledger.
import assert from "node:assert/strict";
import { spawn, spawnSync } from "node:child_process";
import fs from "node:fs";
import path from "node:path";
import { after, test } from "node:test";
import { createBudgetGuard, guardClient, recordReceipts } from "../lib/budget-guard.mjs";
import { foldLedger, readLedger } from "../lib/ledger.mjs";
import { run, tempDir } from "./helpers.mjs";
import { startChainStandIn } from "./support/chain.mjs";
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
  return { pay: miniWrapFetch(recordReceipts(fetch, client), client), ledgerPath, records: () => foldLedger(readLedger(ledgerPath)) };
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

test("after validBefore a signature without a receipt still counts: without an RPC for good (listed as unknown)", async () => {
  const s = await seller({ price: () => "50000", receipts: "none", maxTimeoutSeconds: 2 });
  let offset = 0;
  const { pay, records, ledgerPath } = guarded({ policy: policy({ maxPerDay: "80000" }), now: () => new Date(Date.now() + offset) });
  assert.equal((await pay(s.url)).status, 200);
  offset = 120_000;
  await assert.rejects(pay(s.url), /today's spend would be 100000, over maxPerDay 80000/);
  assert.deepEqual(records().map((r) => r.state), ["signed"]);
  const listed = run("scripts/ledger.mjs", [ledgerPath, "--now", new Date(Date.now() + offset).toISOString()]);
  assert.deepEqual(listed.json.unknownAuthorizations.map((a) => a.nonce), nonces(s));
  assert.deepEqual(listed.json.openAuthorizations, []);
});

test("after validBefore the guard asks the chain: released only when it shows the authorization unused, settled when used", async () => {
  const chain = await startChainStandIn();
  after(() => chain.close());
  const s = await seller({ price: () => "50000", receipts: "none", maxTimeoutSeconds: 2 });
  let offset = 0;
  const { pay, records } = guarded({ policy: policy({ maxPerDay: "80000", rpc: { "eip155:8453": chain.url } }), now: () => new Date(Date.now() + offset) });
  assert.equal((await pay(s.url)).status, 200);
  offset = 120_000;
  // Our clock is past validBefore, the chain's is not: the seller can still use it.
  await assert.rejects(pay(s.url), /over maxPerDay 80000/);
  assert.deepEqual(records().map((r) => r.state), ["signed"]);
  // The chain is past validBefore and the seller used it meanwhile: settled, counted for good.
  chain.state.time += 3600;
  offset += 10_000; // past the back-off after the chain's "not yet"
  const [first] = s.received.map((p) => p.payload.authorization);
  chain.use(first.from, first.nonce);
  await assert.rejects(pay(s.url), /over maxPerDay 80000/);
  assert.deepEqual(records().map((r) => [r.state, r.chainState]), [["settled", "used"]]);
  // A second seller's authorization, never used, and the chain already past its validBefore: it can
  // never move money, so the next decision releases it (50000 + 20000 + 20000 would be over the day).
  const other = await seller({ price: () => "20000", receipts: "none", maxTimeoutSeconds: 2, payTo: "0x2222222222222222222222222222222222222222" });
  assert.equal((await pay(other.url)).status, 200);
  assert.equal((await pay(other.url)).status, 200);
  assert.deepEqual(records().map((r) => [r.state, r.chainState]), [["settled", "used"], ["expired", "unused"], ["signed", undefined]]);
});

test("an RPC that does not answer leaves the signature counted", async () => {
  const s = await seller({ price: () => "50000", receipts: "none", maxTimeoutSeconds: 2 });
  let offset = 0;
  const { pay, records } = guarded({ policy: policy({ maxPerDay: "80000", rpc: { "eip155:8453": "http://127.0.0.1:9" } }), now: () => new Date(Date.now() + offset) });
  assert.equal((await pay(s.url)).status, 200);
  offset = 120_000;
  await assert.rejects(pay(s.url), /over maxPerDay 80000/);
  assert.deepEqual(records().map((r) => r.state), ["signed"]);
});

test("an x402 v1 seller's receipts are recorded (the client runs no response hook for v1; recordReceipts reads them)", async () => {
  const s = await seller({ price: () => "30000", receipts: "settle", version: 1 });
  const { pay, records } = guarded();
  assert.equal((await pay(s.url)).status, 200);
  assert.deepEqual(records().map((r) => [r.state, r.network, r.amount]), [["settled", "eip155:8453", "30000"]]);
  const failing = await seller({ price: () => "30000", receipts: "fail", version: 1 });
  const second = guarded();
  assert.equal((await second.pay(failing.url)).status, 200);
  assert.deepEqual(second.records().map((r) => [r.state, r.reason]), [["failed", "insufficient_funds"]]);
});

test("of several offered entries the guard signs the cheapest the policy allows", async () => {
  const s = await seller({ price: () => ["50000", "900000", "1", "20000"] });
  const { pay, records } = guarded();
  assert.equal((await pay(s.url)).status, 200);
  assert.deepEqual(s.signedValues(), ["1"]);
  assert.deepEqual(records().map((r) => r.amount), ["1"]);
  const dear = await seller({ price: () => ["900000", "800000"] });
  await assert.rejects(guarded().pay(dear.url), /amount 900000 exceeds maxPerPayment/);
});

test("the day is the calendar day of the policy's timeZone (UTC by default)", async () => {
  const s = await seller({ price: () => "60000", receipts: "settle" });
  // 23:30 UTC is already the next day in Tokyo (UTC+9) and still the same day in New York.
  let at = new Date("2030-01-10T14:30:00Z");
  const tokyo = guarded({ policy: policy({ maxPerPayment: "60000", timeZone: "Asia/Tokyo" }), now: () => at });
  assert.equal((await tokyo.pay(s.url)).status, 200); // 23:30 in Tokyo
  at = new Date("2030-01-10T15:30:00Z"); // 00:30 the next day in Tokyo: a new day
  assert.equal((await tokyo.pay(s.url)).status, 200);
  at = new Date("2030-01-10T23:30:00Z");
  const utc = guarded({ policy: policy({ maxPerPayment: "60000" }), now: () => at });
  assert.equal((await utc.pay(s.url)).status, 200);
  at = new Date("2030-01-10T23:50:00Z");
  await assert.rejects(utc.pay(s.url), /over maxPerDay/);
  assert.throws(() => guarded({ policy: policy({ timeZone: "Mars/Olympus" }) }), /timeZone: an IANA time zone/);
});

test("a ledger deleted, truncated or corrupted under the guard is a refusal naming the file and line; a half-written last line is recovered", async () => {
  const s = await seller({ price: () => "10000", receipts: "none" });
  const deleted = guarded();
  assert.equal((await deleted.pay(s.url)).status, 200);
  fs.rmSync(deleted.ledgerPath);
  await assert.rejects(deleted.pay(s.url), (error) => error.message.includes(`${deleted.ledgerPath}: the ledger is gone or empty`) && !/BigInt/.test(error.message));
  // Cut at the front (its "reserved" lines lost), read by a fresh guard.
  const cut = guarded();
  assert.equal((await cut.pay(s.url)).status, 200);
  const lines = fs.readFileSync(cut.ledgerPath, "utf8").split("\n");
  fs.writeFileSync(cut.ledgerPath, `${lines.slice(1).join("\n")}`);
  const fresh = guarded({ ledgerPath: cut.ledgerPath });
  await assert.rejects(fresh.pay(s.url), new RegExp(`${cut.ledgerPath.replaceAll("\\", "\\\\")}:1: payment .* its "reserved" line \\(amount, payee\\) is missing`));
  // A line in the middle that is not JSON.
  fs.writeFileSync(cut.ledgerPath, `${lines[0]}\nnot json\n${lines[1]}\n`);
  await assert.rejects(guarded({ ledgerPath: cut.ledgerPath }).pay(s.url), /:2: not JSON \(the ledger is corrupted/);
  // A last line half-written by a crash: skipped, cut off, and the next line starts clean.
  fs.writeFileSync(cut.ledgerPath, `${lines[0]}\n${lines[1]}\n${lines[0].slice(0, 40)}`);
  const recovered = guarded({ ledgerPath: cut.ledgerPath });
  assert.equal((await recovered.pay(s.url)).status, 200);
  assert.deepEqual(recovered.records().map((r) => r.state), ["signed", "signed"]);
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
