import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { decodePaymentRequiredHeader, decodePaymentSignatureHeader } from "@x402/core/http";
import axios from "axios";
import { createWalletClient, http, publicActions } from "viem";
import { privateKeyToAccount } from "viem/accounts";
import { base } from "viem/chains";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { withPaymentInterceptor } from "x402-axios";
import { decodeXPaymentResponse, wrapFetchWithPayment } from "x402-fetch";
import { devPrivateKey } from "../../src/chain/dev-accounts.ts";
import { createPayer, paymentReceipt } from "../../src/client/paying-fetch.ts";
import type { AnyOperation } from "../../src/contract/operation.ts";
import { atomicPrice } from "../../src/contract/price.ts";
import { csvCleanup } from "../../src/operations/csv-cleanup/index.ts";
import { jsonDiff } from "../../src/operations/json-diff/index.ts";
import { buildProducts } from "../../src/products/build.ts";
import { products } from "../../src/products/index.ts";
import { openStore } from "../../src/store/open-store.ts";
import { startTestService, type TestService, usdcBalances } from "../helpers/service.ts";

const PRODUCT = "csv-json-quality-toolkit";
const product = products.find((operation) => operation.path === `/v1/products/${PRODUCT}`) as AnyOperation;
const PRICES = {
  csv: BigInt(atomicPrice(csvCleanup)),
  diff: BigInt(atomicPrice(jsonDiff)),
  product: BigInt(atomicPrice(product)),
};
/** A spend cap above the dearest price here (x402-fetch's default is 0.10 USDC). */
const MAX_ATOMIC = 100_000_000n;

/** A v1 client's wallet: viem on the local chain, which is Base (chain id 8453, x402 v1 name `base`). */
const v1Wallet = (rpcUrl: string, index: number) =>
  createWalletClient({
    account: privateKeyToAccount(devPrivateKey(index)),
    chain: base,
    transport: http(rpcUrl),
  }).extend(publicActions);

const jsonInit = (body: unknown, headers: Record<string, string> = {}): RequestInit => ({
  method: "POST",
  headers: { "content-type": "application/json", ...headers },
  body: JSON.stringify(body),
});

describe("x402 v1 clients (x402-fetch, x402-axios) pay every kind of paid route on the local chain", () => {
  let service: TestService;
  let balanceOf: ReturnType<typeof usdcBalances>;
  let rpcUrl: string;
  const work = fs.mkdtempSync(path.join(os.tmpdir(), "utility402-v1-"));

  beforeAll(async () => {
    const releasesDir = path.join(work, "releases");
    const [built] = await buildProducts({ releasesDir, clinicalDb: path.join(work, "none.sqlite") }, [
      PRODUCT,
    ]);
    if (built?.state === "unbuildable") throw new Error(built.reason);
    service = await startTestService(
      { RELEASES_DIR: releasesDir },
      { operations: [csvCleanup, jsonDiff, product] },
    );
    rpcUrl = service.localChain?.rpcUrl as string;
    balanceOf = usdcBalances(rpcUrl);
  }, 180_000);
  afterAll(async () => {
    await service?.stop();
    fs.rmSync(work, { recursive: true, force: true });
  });

  /** Payer and payee balances before `pay`, and what moved after it. */
  async function moved(payer: `0x${string}`, pay: () => Promise<void>) {
    const [payerBefore, payToBefore] = [await balanceOf(payer), await balanceOf(service.payTo)];
    await pay();
    return {
      paid: payerBefore - (await balanceOf(payer)),
      received: (await balanceOf(service.payTo)) - payToBefore,
    };
  }

  it("the unpaid 402 is the v2 PAYMENT-REQUIRED header and a body a v1 client reads", async () => {
    const response = await fetch(`${service.url}/v1/csv-cleanup`, jsonInit(csvCleanup.example.input));
    expect(response.status).toBe(402);
    const v2 = decodePaymentRequiredHeader(response.headers.get("PAYMENT-REQUIRED") as string);
    expect(v2).toMatchObject({ x402Version: 2, accepts: [{ network: "eip155:8453", amount: "2000000" }] });
    const body = await response.json();
    expect(body).toMatchObject({ status: 402, x402Version: 1, error: expect.any(String) });
    expect(body.accepts).toEqual([
      {
        scheme: "exact",
        network: "base",
        maxAmountRequired: "2000000",
        amount: "2000000",
        resource: `${service.url}/v1/csv-cleanup`,
        description: csvCleanup.summary,
        mimeType: "application/json",
        payTo: v2.accepts[0]?.payTo,
        maxTimeoutSeconds: v2.accepts[0]?.maxTimeoutSeconds,
        asset: v2.accepts[0]?.asset,
        extra: { name: "USD Coin", version: "2" },
      },
    ]);
  });

  it("x402-fetch pays csv-cleanup, json-diff and a product download, each charged once, receipt in X-PAYMENT-RESPONSE", async () => {
    const wallet = v1Wallet(rpcUrl, 5);
    const payingFetch = wrapFetchWithPayment(fetch, wallet as never, MAX_ATOMIC);
    const calls: [keyof typeof PRICES, string, RequestInit][] = [
      ["csv", "/v1/csv-cleanup", jsonInit(csvCleanup.example.input)],
      ["diff", "/v1/json-diff", jsonInit(jsonDiff.example.input)],
      ["product", `/v1/products/${PRODUCT}`, { method: "GET" }],
    ];
    for (const [name, route, init] of calls) {
      let response: Response | undefined;
      const { paid, received } = await moved(wallet.account.address, async () => {
        response = await payingFetch(`${service.url}${route}`, init);
      });
      const answer = response as Response;
      expect(answer.status, name).toBe(200);
      const receipt = decodeXPaymentResponse(answer.headers.get("X-PAYMENT-RESPONSE") as string);
      expect(receipt, name).toMatchObject({ success: true, network: "base" });
      expect(receipt.transaction, name).toMatch(/^0x[0-9a-f]{64}$/);
      expect(answer.headers.get("PAYMENT-RESPONSE"), name).toBeNull();
      if (name === "product") {
        expect(answer.headers.get("content-type")).toBe("application/zip");
        expect((await answer.arrayBuffer()).byteLength).toBeGreaterThan(0);
      } else {
        expect(await answer.json(), name).toBeTypeOf("object");
      }
      expect({ paid, received }, name).toEqual({ paid: PRICES[name], received: PRICES[name] });
    }
    const store = await openStore(service.config.database);
    for (const operationId of ["csv-cleanup", "json-diff", product.id]) {
      const counts = (await store.paymentCounts()).filter((row) => row.operationId === operationId);
      expect(counts, operationId).toEqual([{ operationId, state: "settled", count: 1 }]);
    }
    await store.close();
  });

  it("x402-axios pays csv-cleanup, json-diff and a product download, each charged once", async () => {
    const wallet = v1Wallet(rpcUrl, 6);
    const client = withPaymentInterceptor(axios.create({ baseURL: service.url }), wallet as never);
    const calls: [
      keyof typeof PRICES,
      () => Promise<{ status: number; headers: Record<string, unknown> }>,
    ][] = [
      ["csv", () => client.post("/v1/csv-cleanup", csvCleanup.example.input)],
      ["diff", () => client.post("/v1/json-diff", jsonDiff.example.input)],
      // x402-axios reads the 402's terms from the parsed response data: the download is asked for with
      // axios' default (JSON, falling back to text) response type, not as an ArrayBuffer.
      ["product", () => client.get(`/v1/products/${PRODUCT}`)],
    ];
    for (const [name, call] of calls) {
      let response: Awaited<ReturnType<typeof call>> | undefined;
      const { paid, received } = await moved(wallet.account.address, async () => {
        response = await call();
      });
      expect(response?.status, name).toBe(200);
      const receipt = decodeXPaymentResponse(response?.headers["x-payment-response"] as string);
      expect(receipt, name).toMatchObject({ success: true, network: "base" });
      expect({ paid, received }, name).toEqual({ paid: PRICES[name], received: PRICES[name] });
    }
  });

  it("a v1 payment replayed through the v2 header is the same payment: its answer again, charged nothing", async () => {
    const wallet = v1Wallet(rpcUrl, 7);
    let xPayment: string | undefined;
    const recording: typeof fetch = (input, init) => {
      const headers = (init?.headers ?? {}) as Record<string, string>;
      xPayment ??= headers["X-PAYMENT"];
      return fetch(input, init);
    };
    const input = { rows: [{ id: "v1-then-v2", name: " x " }], keyColumns: ["id"] };
    const url = `${service.url}/v1/csv-cleanup`;
    const first = await wrapFetchWithPayment(recording, wallet as never, MAX_ATOMIC)(url, jsonInit(input));
    expect(first.status).toBe(200);
    const firstBody = await first.text();
    const transaction = decodeXPaymentResponse(first.headers.get("X-PAYMENT-RESPONSE") as string).transaction;

    // The same signed authorization, written as x402 v2 by hand from the route's own terms.
    const unpaid = await fetch(url, jsonInit(input));
    const required = decodePaymentRequiredHeader(unpaid.headers.get("PAYMENT-REQUIRED") as string);
    const v1 = decodePaymentSignatureHeader(xPayment as string) as unknown as { payload: unknown };
    const v2 = Buffer.from(
      JSON.stringify({
        x402Version: 2,
        resource: required.resource,
        accepted: required.accepts[0],
        payload: v1.payload,
      }),
    ).toString("base64");
    const { paid } = await moved(wallet.account.address, async () => {
      const replay = await fetch(url, jsonInit(input, { "PAYMENT-SIGNATURE": v2 }));
      expect(replay.status).toBe(200);
      expect(replay.headers.get("x-payment-replayed")).toBe("true");
      expect(await replay.text()).toBe(firstBody);
      expect(paymentReceipt(replay)?.transaction).toBe(transaction);
    });
    expect(paid).toBe(0n);
  });

  it("a v2 payment (official @x402/fetch client) replayed through X-PAYMENT: its answer again, charged nothing", async () => {
    const payer = createPayer(devPrivateKey(8));
    const input = { rows: [{ id: "v2-then-v1", name: " y " }], keyColumns: ["id"] };
    const url = `${service.url}/v1/csv-cleanup`;
    const signed = await payer.signPayment(await fetch(url, jsonInit(input)));
    const { paid: firstPaid } = await moved(payer.address, async () => {
      const first = await fetch(url, jsonInit(input, signed));
      expect(first.status).toBe(200);
    });
    expect(firstPaid).toBe(PRICES.csv);
    const transaction = await fetch(url, jsonInit(input, signed)).then((r) => paymentReceipt(r)?.transaction);

    const v2 = decodePaymentSignatureHeader(signed["PAYMENT-SIGNATURE"] as string);
    const xPayment = Buffer.from(
      JSON.stringify({ x402Version: 1, scheme: "exact", network: "base", payload: v2.payload }),
    ).toString("base64");
    const { paid } = await moved(payer.address, async () => {
      const replay = await fetch(url, jsonInit(input, { "X-PAYMENT": xPayment }));
      expect(replay.status).toBe(200);
      expect(replay.headers.get("x-payment-replayed")).toBe("true");
      const receipt = decodeXPaymentResponse(replay.headers.get("X-PAYMENT-RESPONSE") as string);
      expect(receipt).toMatchObject({ success: true, network: "base", transaction });
    });
    expect(paid).toBe(0n);
  });

  it("an X-PAYMENT for another network or an unreadable one is refused with a v1-readable 402, nothing charged", async () => {
    const wallet = v1Wallet(rpcUrl, 9);
    const before = await balanceOf(wallet.account.address);
    const url = `${service.url}/v1/csv-cleanup`;
    const notBase64 = await fetch(url, jsonInit(csvCleanup.example.input, { "X-PAYMENT": "%%%" }));
    expect(notBase64.status).toBe(402);
    const refused = await notBase64.json();
    expect(refused).toMatchObject({ reason: "invalid_payload", x402Version: 1 });
    expect(refused.accepts[0]).toMatchObject({ network: "base", maxAmountRequired: "2000000" });

    const sepolia = Buffer.from(
      JSON.stringify({
        x402Version: 1,
        scheme: "exact",
        network: "base-sepolia",
        payload: { signature: "0x11", authorization: {} },
      }),
    ).toString("base64");
    const mismatch = await fetch(url, jsonInit(csvCleanup.example.input, { "X-PAYMENT": sepolia }));
    expect(mismatch.status).toBe(402);
    expect(await mismatch.json()).toMatchObject({ reason: "payment_terms_mismatch", x402Version: 1 });
    expect(await balanceOf(wallet.account.address)).toBe(before);
  });
});
