/**
 * What signed offers cost the 402 path (issue 36): the offers are signed per route and kept in the terms
 * (signed-offers.ts), so an unpaid call reads them, never signs. Side by side in one run: the same
 * service (local chain, json-diff) with and without signed offers, rounds alternating; and what signing
 * one 402's offers would cost were it done per request.
 *
 * Run: npm run bench offer-receipt (ROUNDS=<n>, CALLS=<n>; writes bench/results/offer-receipt.json).
 */
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { loadConfig } from "../src/config.ts";
import { createLogger } from "../src/log.ts";
import { jsonDiff } from "../src/operations/json-diff/index.ts";
import {
  DEV_OFFER_RECEIPT_KEY,
  OfferReceipts,
  offerReceiptKey,
} from "../src/payments/resource-server/offer-receipt.ts";
import { type RunningService, startService } from "../src/serve.ts";
import { freePort } from "../test/helpers/service.ts";
import { report } from "./lib.ts";

const ROUNDS = Number(process.env.ROUNDS ?? 4);
const CALLS = Number(process.env.CALLS ?? 2000);
const body = JSON.stringify(jsonDiff.example.input);

async function start(signed: boolean): Promise<{ service: RunningService; dataDir: string }> {
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), "utility402-offer-bench-"));
  const config = loadConfig({
    PORT: String(await freePort()),
    LOCAL_CHAIN_PORT: String(await freePort()),
    DATA_DIR: dataDir,
    LOCAL_CHAIN_STATE: "none",
    LOG_LEVEL: "silent",
  });
  const offerReceipt = signed ? config.offerReceipt : { ...config.offerReceipt, signingKey: undefined };
  const service = await startService({ ...config, offerReceipt }, createLogger("silent"), {
    operations: [jsonDiff],
  });
  return { service, dataDir };
}

/** Microseconds per unpaid 402, CALLS sequential calls on one keep-alive connection. */
async function perChallenge(url: string): Promise<number> {
  const call = async () => {
    const response = await fetch(url, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body,
    });
    if (response.status !== 402) throw new Error(`expected 402, got ${response.status}`);
    await response.arrayBuffer();
  };
  for (let i = 0; i < 200; i++) await call();
  const started = process.hrtime.bigint();
  for (let i = 0; i < CALLS; i++) await call();
  return Number(process.hrtime.bigint() - started) / 1e3 / CALLS;
}

const sides = { signed: await start(true), unsigned: await start(false) };
const results: Record<"signed" | "unsigned", number[]> = { signed: [], unsigned: [] };
try {
  for (let round = 0; round < ROUNDS; round++) {
    const order = round % 2 === 0 ? (["signed", "unsigned"] as const) : (["unsigned", "signed"] as const);
    for (const side of order) {
      results[side].push(await perChallenge(`${sides[side].service.url}/v1/json-diff`));
    }
  }
} finally {
  for (const side of Object.values(sides)) {
    await side.service.stop();
    fs.rmSync(side.dataDir, { recursive: true, force: true });
  }
}

// Signing one 402's offers (one accepts entry), as a per-request signer would.
const issuer = new OfferReceipts(
  offerReceiptKey(DEV_OFFER_RECEIPT_KEY, "http://127.0.0.1:8402", "eip155:8453"),
  true,
);
const terms = {
  x402Version: 2 as const,
  resource: { url: "http://127.0.0.1:8402/v1/json-diff" },
  accepts: [
    {
      scheme: "exact",
      network: "eip155:8453" as const,
      asset: "0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913",
      amount: "10000",
      payTo: "0x70997970C51812dc3A010C7d01b50e0d17dc79C8",
      maxTimeoutSeconds: 120,
      extra: {},
    },
  ],
};
for (let i = 0; i < 50; i++) await issuer.offers(terms, 120);
const signings = 500;
const signStarted = process.hrtime.bigint();
for (let i = 0; i < signings; i++) await issuer.offers(terms, 120);
const signMicroseconds = Number(process.hrtime.bigint() - signStarted) / 1e3 / signings;

const median = (values: number[]) =>
  [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)] as number;
const signed = median(results.signed);
const unsigned = median(results.unsigned);
report(
  "offer-receipt",
  [
    { measure: "unpaid 402, signed offers kept (µs per call)", value: Number(signed.toFixed(1)) },
    { measure: "unpaid 402, no offers (µs per call)", value: Number(unsigned.toFixed(1)) },
    { measure: "ratio signed / unsigned", value: Number((signed / unsigned).toFixed(3)) },
    { measure: "signing one 402's offer per request (µs)", value: Number(signMicroseconds.toFixed(1)) },
  ],
  { rounds: ROUNDS, calls: CALLS, perRound: results },
);
