// What a hostile seller, a hostile RPC or a hostile file system tried against guardClient after
// version 2.0.0 shipped: each case fails closed, with a refusal that names what is wrong.
import assert from "node:assert/strict";
import { randomBytes, randomUUID } from "node:crypto";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { after, test } from "node:test";
import { guardClient, recordReceipts } from "../lib/budget-guard.mjs";
import { resolveLapsedAuthorizations } from "../lib/chain.mjs";
import { appendEntry, foldLedger, readLedger, repairLedger } from "../lib/ledger.mjs";
import { LockTimeout, withLedgerLock } from "../lib/lock.mjs";
import { rankRequirements } from "../lib/policy.mjs";
import { tempDir } from "./helpers.mjs";
import { startChainStandIn } from "./support/chain.mjs";
import { MiniX402Client, miniWrapFetch } from "./support/mini-x402.mjs";
import { SELLER, startSeller, USDC } from "./support/seller.mjs";

const policy = (extra = {}) => ({ version: 1, networks: ["eip155:8453"], assets: [USDC], maxPerPayment: "50000", maxPerDay: "100000", ...extra });
const closers = [];
after(() => Promise.all(closers.map((close) => close())));
const seller = async (options) => {
  const s = await startSeller(options);
  closers.push(() => s.close());
  return s;
};
const chainStandIn = async (options) => {
  const chain = await startChainStandIn(options);
  closers.push(() => chain.close());
  return chain;
};
function guarded(options = {}) {
  const ledgerPath = options.ledgerPath ?? path.join(tempDir(), "ledger.jsonl");
  const client = guardClient(new MiniX402Client(), { policy: policy(), ledgerPath, ...options });
  return { pay: miniWrapFetch(recordReceipts(fetch, client), client), ledgerPath, records: () => foldLedger(readLedger(ledgerPath)) };
}
/** A signed authorization without a receipt, written as the guard writes it. */
function writeSigned(ledgerPath, { at, validBefore, amount = "1" }) {
  const id = randomUUID();
  appendEntry(ledgerPath, { at, id, state: "reserved", url: "http://seller.test/", network: "eip155:8453", asset: USDC, amount, payTo: SELLER, expiresAt: at });
  appendEntry(ledgerPath, { at, id, state: "signed", payer: "0x3C44CdDdB6a900fa2b585dd299e03d12FA4293BC", nonce: `0x${randomBytes(32).toString("hex")}`, validBefore: String(validBefore) });
  return id;
}

test("seller-supplied text is bounded in the ledger: a long resource (v1 and v2) is cut with a marker, a payee that is not an address is refused before anything is written", async () => {
  const huge = `http://127.0.0.1/${"a".repeat(6000)}`; // kept under HTTP header limits: the payment header carries it

  for (const version of [1, 2]) {
    const s = await seller({ price: () => "1", version, resource: huge });
    const { pay, ledgerPath, records } = guarded();
    for (let i = 0; i < 3; i++) assert.equal((await pay(s.url)).status, 200);
    assert.ok(fs.statSync(ledgerPath).size < 12 * 1024, `v${version}: ledger is ${fs.statSync(ledgerPath).size} bytes after 3 payments`);
    assert.match(records()[0].url, /…\[cut \d+ chars\]$/);
    assert.deepEqual(records().map((r) => r.state), ["settled", "settled", "settled"]);
  }
  const s = await seller({ price: () => "1", payTo: `0x${"z".repeat(4000)}` });
  const { pay, ledgerPath } = guarded();
  await assert.rejects(pay(s.url), /spend policy: payee "0xzzzz[z]*"… is not an address/);
  assert.equal(s.received.length, 0);
  assert.equal(fs.existsSync(ledgerPath) ? fs.statSync(ledgerPath).size : 0, 0);
});

test("every ledger field is bounded, whatever writes it (an 8 MB transaction or reason from a receipt)", () => {
  const ledgerPath = path.join(tempDir(), "ledger.jsonl");
  appendEntry(ledgerPath, { at: new Date().toISOString(), id: "x", state: "failed", transaction: "0x".padEnd(8e6, "f"), reason: "r".repeat(8e6), status: 402 });
  assert.ok(fs.statSync(ledgerPath).size < 4096);
  const [record] = foldLedger(readLedger(ledgerPath));
  assert.match(record.transaction, /\[cut \d+ chars\]$/);
  assert.match(record.reason, /\[cut \d+ chars\]$/);
});

test("a half-written last line is cut from the end of the file without reading the whole ledger", () => {
  const ledgerPath = path.join(tempDir(), "ledger.jsonl");
  for (let i = 0; i < 2000; i++) appendEntry(ledgerPath, { at: new Date().toISOString(), state: "settled", network: "eip155:8453", asset: USDC, amount: "1", payTo: SELLER });
  const whole = fs.statSync(ledgerPath).size;
  fs.appendFileSync(ledgerPath, '{"at":"2026-');
  const read = fs.readFileSync;
  let wholeReads = 0;
  fs.readFileSync = (...args) => {
    wholeReads++;
    return read(...args);
  };
  try {
    assert.equal(repairLedger(ledgerPath), true);
  } finally {
    fs.readFileSync = read;
  }
  assert.equal(wholeReads, 0);
  assert.equal(fs.statSync(ledgerPath).size, whole);
  assert.equal(readLedger(ledgerPath).length, 2000);
});

test("lapsed authorizations of earlier days are not looked up again; today's are looked up a few at a time, backed off, and a hung RPC does not hold a payment", async () => {
  const chain = await chainStandIn();
  const ledgerPath = path.join(tempDir(), "ledger.jsonl");
  const now = Date.now();
  const yesterday = new Date(now - 24 * 3600_000).toISOString();
  for (let i = 0; i < 300; i++) writeSigned(ledgerPath, { at: yesterday, validBefore: Math.floor(now / 1000) - 3600 });
  const s = await seller({ price: () => "1" });
  const { pay } = guarded({ ledgerPath, policy: policy({ rpc: { "eip155:8453": chain.url } }), chainTimeoutMs: 300 });
  assert.equal((await pay(s.url)).status, 200);
  assert.equal(chain.state.calls, 0, "yesterday's authorizations no longer count toward a limit: not looked up");

  for (let i = 0; i < 30; i++) writeSigned(ledgerPath, { at: new Date(now).toISOString(), validBefore: Math.floor(now / 1000) - 10 });
  chain.state.hang = true;
  // The lookup uses the ledger as this guard last read it: lines another process wrote since are
  // looked up from the next payment on (until then they count, unanswered).
  assert.equal((await pay(s.url)).status, 200);
  assert.equal((await pay(s.url)).status, 200);
  const asked = chain.state.calls;
  assert.ok(asked >= 1 && asked <= 8, `asked ${asked} questions for 30 lapsed authorizations`);
  assert.equal((await pay(s.url)).status, 200);
  assert.equal(chain.state.calls, asked, "asked again at once: no back-off");
  const unanswered = foldLedger(readLedger(ledgerPath)).filter((r) => r.state === "signed").length;
  assert.equal(unanswered, 330, "what the chain did not answer stays counted");
});

test("the policy's RPC is asked at the block it trusts as final (finalized by default, or safe), and a block before validBefore proves nothing", async () => {
  for (const [finality, tag] of [[undefined, "finalized"], [{ "eip155:8453": "safe" }, "safe"]]) {
    const now = Math.floor(Date.now() / 1000);
    const chain = await chainStandIn({ time: now - 5 }); // the final block is still before validBefore
    const ledgerPath = path.join(tempDir(), "ledger.jsonl");
    writeSigned(ledgerPath, { at: new Date().toISOString(), validBefore: now - 1 });
    const spend = policy({ rpc: { "eip155:8453": chain.url }, ...(finality ? { finality } : {}) });
    const [answer] = await resolveLapsedAuthorizations(ledgerPath, spend, { all: true });
    assert.equal(answer.state, "pending");
    assert.deepEqual(chain.state.tags, [tag]);
    chain.state.time = now + 60;
    assert.equal((await resolveLapsedAuthorizations(ledgerPath, spend, { all: true }))[0].state, "unused");
    assert.equal(foldLedger(readLedger(ledgerPath))[0].state, "expired");
  }
});

test("an RPC that answers for another chain is not believed: the authorization stays counted, and the reason says why", async () => {
  const chain = await chainStandIn({ chainId: 84532, time: Math.floor(Date.now() / 1000) + 3600 });
  const ledgerPath = path.join(tempDir(), "ledger.jsonl");
  writeSigned(ledgerPath, { at: new Date().toISOString(), validBefore: Math.floor(Date.now() / 1000) - 10, amount: "100000" });
  const [answer] = await resolveLapsedAuthorizations(ledgerPath, policy({ rpc: { "eip155:8453": chain.url } }), { all: true });
  assert.equal(answer.state, "unknown");
  assert.match(answer.reason, /chain 84532 \(eth_chainId\), not 8453/);
  assert.equal(foldLedger(readLedger(ledgerPath))[0].state, "signed");
  const s = await seller({ price: () => "1" });
  await assert.rejects(guarded({ ledgerPath, policy: policy({ rpc: { "eip155:8453": chain.url } }) }).pay(s.url), /over maxPerDay 100000/);
});

test("the ledger in a directory that does not exist, or a lock path that is a directory: refusals naming the path, nothing signed", async () => {
  const s = await seller({ price: () => "1" });
  const missing = path.join(tempDir(), "missing", "ledger.jsonl");
  await assert.rejects(guarded({ ledgerPath: missing }).pay(s.url), (error) => /spend policy: the ledger's directory does not exist/.test(error.message) && error.message.includes(missing));
  const ledgerPath = path.join(tempDir(), "ledger.jsonl");
  fs.mkdirSync(`${ledgerPath}.lock`);
  await assert.rejects(guarded({ ledgerPath, lock: { timeoutMs: 500 } }).pay(s.url), /spend policy: the ledger lock .*ledger\.jsonl\.lock is not a file/);
  assert.equal(s.received.length, 0);
});

test("breaking a stale lock never removes a lock that another process took meanwhile (fault-injected interleaving)", async () => {
  const ledgerPath = path.join(tempDir(), "ledger.jsonl");
  const file = `${ledgerPath}.lock`;
  const lockOf = (token, pid) => JSON.stringify({ pid, host: os.hostname(), token, at: new Date().toISOString() });
  fs.writeFileSync(file, lockOf("X-dead", 2 ** 22 + 12345)); // left by a process killed with -9
  const { readFileSync, linkSync } = fs;
  let swapped = false;
  // Right after this waiter reads X's lock, C (a live process) breaks X and takes the lock...
  fs.readFileSync = (...args) => {
    const text = readFileSync(...args);
    if (!swapped && args[0] === file) {
      swapped = true;
      fs.writeFileSync(file, lockOf("C", process.ppid));
    }
    return text;
  };
  // ...and A takes it in any gap where the lock file is missing.
  fs.linkSync = (from, to) => {
    if (to === file && !fs.existsSync(file)) fs.writeFileSync(file, lockOf("A", process.ppid), { flag: "wx" });
    return linkSync(from, to);
  };
  let ran = false;
  try {
    await assert.rejects(
      withLedgerLock(
        ledgerPath,
        () => {
          ran = true;
        },
        { timeoutMs: 200 },
      ),
      LockTimeout,
    );
  } finally {
    fs.readFileSync = readFileSync;
    fs.linkSync = linkSync;
  }
  assert.equal(ran, false);
  assert.equal(JSON.parse(fs.readFileSync(file, "utf8")).token, "C", "C's lock must still be the lock");
});

test("a live holder on this host is never judged stale, however old its lock; staleMs must be shorter than timeoutMs", async () => {
  const ledgerPath = path.join(tempDir(), "ledger.jsonl");
  fs.writeFileSync(`${ledgerPath}.lock`, JSON.stringify({ pid: process.ppid, host: os.hostname(), token: "old-but-alive", at: "2020-01-01T00:00:00Z" }));
  await assert.rejects(withLedgerLock(ledgerPath, () => {}, { timeoutMs: 200 }), /held by another process \(pid \d+/);
  await assert.rejects(withLedgerLock(ledgerPath, () => {}, { timeoutMs: 200, staleMs: 1000 }), /staleMs \(1000\) must be shorter than timeoutMs \(200\)/);
});

test("the entry ranked first is the cheapest the whole policy allows now, per payee and per day included, and it is the only one the client is left", () => {
  const other = "0x2222222222222222222222222222222222222222";
  const at = new Date().toISOString();
  const spent = [{ at, state: "settled", network: "eip155:8453", asset: USDC, amount: "20000", payTo: SELLER }];
  const offered = [
    { scheme: "exact", network: "eip155:8453", asset: USDC, amount: "15000", payTo: other },
    { scheme: "exact", network: "eip155:8453", asset: USDC, amount: "10", payTo: SELLER },
  ];
  assert.deepEqual(rankRequirements(policy({ maxPerPayeePerDay: "20000" }), offered, spent, new Date()), [offered[0]]);
  assert.deepEqual(rankRequirements(policy(), offered, spent, new Date()), [offered[1]]);
  // x402 v1 signs maxAmountRequired: an `amount` beside it is the seller's decoy.
  const v1 = [
    { scheme: "exact", network: "base", asset: USDC, amount: "1", maxAmountRequired: "60000", payTo: SELLER },
    { scheme: "exact", network: "base", asset: USDC, maxAmountRequired: "40000", payTo: SELLER },
  ];
  assert.deepEqual(rankRequirements(policy(), v1, [], new Date(), 1), [v1[1]]);
});
