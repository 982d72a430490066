import { spawn } from "node:child_process";
import fs from "node:fs";
import http from "node:http";
import type { AddressInfo } from "node:net";
import os from "node:os";
import path from "node:path";
import { registerExactEvmScheme } from "@x402/evm/exact/client";
import { wrapFetchWithPayment, x402Client, x402HTTPClient } from "@x402/fetch";
import { getAddress, verifyTypedData } from "viem";
import { privateKeyToAccount } from "viem/accounts";
import { afterAll, describe, expect, it } from "vitest";
import {
  foldLedger,
  guardClient,
  readLedger,
  type SpendPolicy,
} from "../../products/agent-safe-paid-work-kit/lib/index.mjs";
import { BASE_USDC_ADDRESS } from "../../src/config.ts";
import { transferAuthorizationTypedData } from "../helpers/payment-faults.ts";

/**
 * The agent-safe paid work kit's guard on the REAL x402 client: @x402/fetch's wrapFetchWithPayment
 * and @x402/evm's exact scheme signing EIP-3009 authorizations with a viem local account (no chain
 * needed to sign), against a hostile x402 v2 seller on 127.0.0.1 that changes its price between
 * quotes, omits receipts, and is called concurrently, from one process and from two sharing one
 * ledger. The seller verifies every signature it receives, so "signed" means a usable authorization.
 */

const USDC = BASE_USDC_ADDRESS;
const SELLER = "0x70997970C51812dc3A010C7d01b50e0d17dc79C8";
const KEY = "0x59c6995e998f97a5a0044966f0945389dc9e86dae88c7a8412f4603b6b78690d" as const;
const payer = privateKeyToAccount(KEY);
const b64 = (value: unknown) => Buffer.from(JSON.stringify(value)).toString("base64");

interface Authorization {
  from: string;
  to: string;
  value: string;
  validAfter: string;
  validBefore: string;
  nonce: `0x${string}`;
}

async function startSeller(options: { price: (quote: number) => string; receipts: boolean }) {
  let quotes = 0;
  const received: Authorization[] = [];
  const server = http.createServer(async (req, res) => {
    const header = req.headers["payment-signature"];
    const port = (server.address() as AddressInfo).port;
    if (typeof header !== "string") {
      const requirements = {
        scheme: "exact",
        network: "eip155:8453",
        asset: USDC,
        amount: options.price(quotes++),
        payTo: SELLER,
        maxTimeoutSeconds: 300,
        extra: { name: "USD Coin", version: "2" },
      };
      const required = {
        x402Version: 2,
        resource: {
          url: `http://127.0.0.1:${port}${req.url}`,
          description: "t",
          mimeType: "application/json",
        },
        accepts: [requirements],
      };
      res.writeHead(402, { "content-type": "application/json", "payment-required": b64(required) }).end("{}");
      return;
    }
    const payload = JSON.parse(Buffer.from(header, "base64").toString("utf8"));
    const authorization: Authorization = payload.payload.authorization;
    const valid = await verifyTypedData({
      address: getAddress(authorization.from),
      ...transferAuthorizationTypedData({
        from: getAddress(authorization.from),
        to: getAddress(authorization.to),
        value: BigInt(authorization.value),
        validAfter: BigInt(authorization.validAfter),
        validBefore: BigInt(authorization.validBefore),
        nonce: authorization.nonce,
      }),
      signature: payload.payload.signature,
    });
    if (!valid) throw new Error("the seller received an invalid signature");
    received.push(authorization);
    const headers: Record<string, string> = { "content-type": "application/json" };
    if (options.receipts) {
      headers["payment-response"] = b64({
        success: true,
        transaction: `0x${received.length.toString(16).padStart(64, "0")}`,
        network: "eip155:8453",
        payer: authorization.from,
      });
    }
    res.writeHead(200, headers).end("{}");
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/paid`;
  servers.push(server);
  return {
    url,
    received,
    values: () => received.map((a) => a.value),
    nonces: () => received.map((a) => a.nonce).sort(),
  };
}

const servers: http.Server[] = [];
const dirs: string[] = [];
afterAll(() => {
  for (const server of servers) {
    server.closeAllConnections();
    server.close();
  }
  for (const dir of dirs) fs.rmSync(dir, { recursive: true, force: true });
});

const policy = (extra: Partial<SpendPolicy> = {}): SpendPolicy => ({
  version: 1,
  networks: ["eip155:8453"],
  assets: [USDC],
  maxPerPayment: "50000",
  maxPerDay: "100000",
  ...extra,
});
function ledgerFile() {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "utility402-guard-"));
  dirs.push(dir);
  return path.join(dir, "ledger.jsonl");
}
function guardedFetch(ledgerPath: string, extra: Partial<SpendPolicy> = {}) {
  const client = guardClient(registerExactEvmScheme(new x402Client(), { signer: payer }), {
    policy: policy(extra),
    ledgerPath,
  });
  return wrapFetchWithPayment(fetch, client);
}
const ledgerNonces = (ledgerPath: string) =>
  foldLedger(readLedger(ledgerPath))
    .map((r) => r.nonce)
    .filter((n): n is string => typeof n === "string")
    .sort();

describe("agent-safe paid work kit: guardClient on @x402/fetch + @x402/evm", () => {
  it("a seller that quoted $0.01 and then asks $0.90 gets no signature; the ledger holds only what was signed", async () => {
    const seller = await startSeller({ price: (n) => (n % 2 === 0 ? "10000" : "900000"), receipts: true });
    const ledgerPath = ledgerFile();
    const pay = guardedFetch(ledgerPath);
    expect((await fetch(seller.url)).status).toBe(402); // the probe: $0.01
    await expect(pay(seller.url)).rejects.toThrow(/spend policy: amount 900000 exceeds maxPerPayment 50000/);
    expect((await pay(seller.url)).status).toBe(200); // quoted $0.01 again: paid
    expect(seller.values()).toEqual(["10000"]);
    const records = foldLedger(readLedger(ledgerPath));
    expect(records.map((r) => [r.state, r.amount, r.nonce, r.validBefore])).toEqual([
      ["settled", "10000", seller.received[0]?.nonce, seller.received[0]?.validBefore],
    ]);
  });

  it("without PAYMENT-RESPONSE receipts the day limit holds (3 × $0.04 against a $0.10 day: two signed)", async () => {
    const seller = await startSeller({ price: () => "40000", receipts: false });
    const ledgerPath = ledgerFile();
    const pay = guardedFetch(ledgerPath);
    expect((await pay(seller.url)).status).toBe(200);
    expect((await pay(seller.url)).status).toBe(200);
    await expect(pay(seller.url)).rejects.toThrow(/over maxPerDay 100000/);
    expect(seller.values()).toEqual(["40000", "40000"]);
    expect(ledgerNonces(ledgerPath)).toEqual(seller.nonces());
    expect(foldLedger(readLedger(ledgerPath)).map((r) => r.state)).toEqual(["signed", "signed"]);
  });

  it("five concurrent calls: only what fits the day is signed", async () => {
    const seller = await startSeller({ price: () => "40000", receipts: true });
    const ledgerPath = ledgerFile();
    const pay = guardedFetch(ledgerPath);
    const results = await Promise.allSettled(Array.from({ length: 5 }, () => pay(seller.url)));
    expect(results.filter((r) => r.status === "fulfilled")).toHaveLength(2);
    expect(seller.received).toHaveLength(2);
    expect(ledgerNonces(ledgerPath)).toEqual(seller.nonces());
  });

  it("two processes sharing one ledger file: 2 × 6 concurrent calls of $0.01 against a $0.07 day sign exactly 7", async () => {
    const seller = await startSeller({ price: () => "10000", receipts: false });
    const ledgerPath = ledgerFile();
    const worker = path.join(import.meta.dirname, "fixtures/guarded-payer.mjs");
    const startAt = String(Date.now() + 1500);
    const run = () =>
      new Promise<(number | string)[]>((resolve, reject) => {
        const child = spawn(process.execPath, [
          worker,
          seller.url,
          ledgerPath,
          JSON.stringify(policy({ maxPerDay: "70000" })),
          "6",
          startAt,
          KEY,
        ]);
        let out = "";
        child.stdout.on("data", (d) => {
          out += d;
        });
        child.stderr.on("data", (d) => {
          out += d;
        });
        child.on("error", reject);
        child.on("close", (code) => (code === 0 ? resolve(JSON.parse(out)) : reject(new Error(out))));
      });
    const [a, b] = await Promise.all([run(), run()]);
    expect([...(a ?? []), ...(b ?? [])].filter((s) => s === 200)).toHaveLength(7);
    expect(seller.received).toHaveLength(7);
    expect(ledgerNonces(ledgerPath)).toEqual(seller.nonces());
    const total = foldLedger(readLedger(ledgerPath)).reduce((sum, r) => sum + BigInt(r.amount ?? 0), 0n);
    expect(total).toBe(70000n);
  });

  it("guarding the x402HTTPClient gives the guard the requested URL, so a hosts policy can hold", async () => {
    const seller = await startSeller({ price: () => "10000", receipts: true });
    const allowed = guardClient(
      new x402HTTPClient(registerExactEvmScheme(new x402Client(), { signer: payer })),
      {
        policy: policy({ hosts: ["127.0.0.1"] }),
        ledgerPath: ledgerFile(),
      },
    );
    expect((await wrapFetchWithPayment(fetch, allowed)(seller.url)).status).toBe(200);
    const elsewhere = guardClient(
      new x402HTTPClient(registerExactEvmScheme(new x402Client(), { signer: payer })),
      {
        policy: policy({ hosts: ["api.example"] }),
        ledgerPath: ledgerFile(),
      },
    );
    await expect(wrapFetchWithPayment(fetch, elsewhere)(seller.url)).rejects.toThrow(
      /host 127\.0\.0\.1 is not allowed/,
    );
    expect(seller.received).toHaveLength(1);
  });
});
