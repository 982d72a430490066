import assert from "node:assert/strict";
import fs from "node:fs";
import path from "node:path";
import { test } from "node:test";
import { createBudgetGuard, PaymentDenied } from "../lib/budget-guard.mjs";
import { readLedger } from "../lib/ledger.mjs";
import { root, tempDir } from "./helpers.mjs";

const policy = JSON.parse(fs.readFileSync(path.join(root, "policy/example-policy.json"), "utf8"));
const USDC = "0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913";
const required = (amount) =>
  new Response(JSON.stringify({ x402Version: 2, accepts: [{ network: "eip155:8453", asset: USDC, amount, payTo: "0x70997970C51812dc3A010C7d01b50e0d17dc79C8" }] }), { status: 402 });
const receipt = Buffer.from(JSON.stringify({ success: true, transaction: `0x${"1".repeat(64)}`, network: "eip155:8453" })).toString("base64");

test("an allowed payment is paid and recorded", async () => {
  const ledgerPath = path.join(tempDir(), "ledger.jsonl");
  let paid = 0;
  const guarded = createBudgetGuard({
    policy,
    ledgerPath,
    plainFetch: async () => required("10000"),
    payingFetch: async () => {
      paid++;
      return new Response("{}", { status: 200, headers: { "payment-response": receipt } });
    },
  });
  assert.equal((await guarded("https://api.example/v1/x")).status, 200);
  assert.equal(paid, 1);
  assert.deepEqual(readLedger(ledgerPath).map((e) => [e.amount, e.state]), [["10000", "settled"]]);
});
test("a denied payment never reaches the paying fetch", async () => {
  let paid = 0;
  const guarded = createBudgetGuard({ policy, ledgerPath: path.join(tempDir(), "l.jsonl"), plainFetch: async () => required("9000000"), payingFetch: async () => paid++ });
  await assert.rejects(guarded("https://api.example/v1/x"), PaymentDenied);
  assert.equal(paid, 0);
});
test("a payment above approvalAbove waits for approval", async () => {
  let asked = 0;
  const guarded = createBudgetGuard({
    policy,
    ledgerPath: path.join(tempDir(), "l.jsonl"),
    plainFetch: async () => required("3000000"),
    payingFetch: async () => new Response("{}", { status: 200 }),
    approve: async () => ++asked > 1,
  });
  await assert.rejects(guarded("https://api.example/v1/x"), PaymentDenied);
  assert.equal((await guarded("https://api.example/v1/x")).status, 200);
});
test("a free answer passes through untouched", async () => {
  const guarded = createBudgetGuard({ policy, ledgerPath: path.join(tempDir(), "l.jsonl"), plainFetch: async () => new Response("ok"), payingFetch: async () => assert.fail("paid") });
  assert.equal(await (await guarded("https://api.example/free")).text(), "ok");
});
