import assert from "node:assert/strict";
import fs from "node:fs";
import path from "node:path";
import { test } from "node:test";
import { checkPolicy, decide, termsFrom402 } from "../lib/policy.mjs";
import { root } from "./helpers.mjs";

const policy = JSON.parse(fs.readFileSync(path.join(root, "policy/example-policy.json"), "utf8"));
const USDC = "0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913";
const PAYEE = "0x70997970C51812dc3A010C7d01b50e0d17dc79C8";
const payment = (amount, extra = {}) => ({ network: "eip155:8453", asset: USDC, amount, payTo: PAYEE, ...extra });
const now = new Date("2026-01-10T12:00:00Z");

test("the example policy is valid", () => assert.deepEqual(checkPolicy(policy), []));
test("policy problems are listed", () => {
  assert.deepEqual(checkPolicy({ version: 2, networks: [], assets: ["x"], maxPerPayment: "5", maxPerDay: "1", extra: 1 }), [
    'unknown field "extra"',
    "version must be 1",
    "networks: a non-empty list of CAIP-2 ids (eip155:8453)",
    "assets: a non-empty list of token addresses",
  ]);
  assert.deepEqual(checkPolicy({ ...policy, maxPerPayment: "30000000" }), ["maxPerPayment cannot exceed maxPerDay"]);
});
test("a small payment is allowed", () => assert.equal(decide(policy, payment("10000"), [], now).decision, "allow"));
test("above approvalAbove needs a human", () => assert.equal(decide(policy, payment("3000000"), [], now).decision, "approve"));
test("above maxPerPayment is denied", () => assert.match(decide(policy, payment("6000000"), [], now).reasons[0], /maxPerPayment/));
test("the daily limit counts today's settled spend, not failed ones", () => {
  const spent = [
    { at: "2026-01-10T08:00:00Z", amount: "9000000", payTo: "0x1111111111111111111111111111111111111111", state: "settled" },
    { at: "2026-01-10T08:00:00Z", amount: "9000000", payTo: "0x1111111111111111111111111111111111111111", state: "settled" },
    { at: "2026-01-10T09:00:00Z", amount: "9000000", payTo: PAYEE, state: "failed" },
    { at: "2026-01-09T09:00:00Z", amount: "9000000", payTo: PAYEE, state: "settled" },
  ];
  assert.deepEqual(decide(policy, payment("1000000"), spent, now).decision, "allow");
  assert.match(decide(policy, payment("2000001"), spent, now).reasons.join(), /over maxPerDay/);
});
test("per-payee daily limit", () => {
  const spent = [{ at: "2026-01-10T08:00:00Z", amount: "9500000", payTo: PAYEE, state: "settled" }];
  assert.match(decide(policy, payment("1000000"), spent, now).reasons.join(), /maxPerPayeePerDay/);
});
test("wrong network, asset or a blocked payee are denied", () => {
  assert.equal(decide(policy, payment("1", { network: "eip155:1" }), [], now).decision, "deny");
  assert.equal(decide(policy, payment("1", { asset: PAYEE }), [], now).decision, "deny");
  assert.equal(decide(policy, payment("1", { payTo: "0x000000000000000000000000000000000000dead" }), [], now).decision, "deny");
});
test("a burst of payments is throttled", () => {
  const spent = Array.from({ length: 30 }, () => ({ at: "2026-01-10T11:59:30Z", amount: "1", payTo: PAYEE, state: "settled" }));
  assert.match(decide(policy, payment("1"), spent, now).reasons.join(), /last minute/);
});
test("x402 terms are read from the PAYMENT-REQUIRED header", () => {
  const header = Buffer.from(JSON.stringify({ x402Version: 2, resource: { url: "https://x.example/a" }, accepts: [payment("10000")] })).toString("base64");
  assert.deepEqual(termsFrom402(header), { ...payment("10000"), url: "https://x.example/a" });
  assert.throws(() => termsFrom402(undefined, {}), /no x402 payment terms/);
});
