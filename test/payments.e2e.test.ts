import type { PaymentPayload } from "@x402/core/types";
import pino from "pino";
import { createPublicClient, createWalletClient, http, parseAbi } from "viem";
import { privateKeyToAccount } from "viem/accounts";
import { base } from "viem/chains";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { devAccounts, devPrivateKey } from "../src/chain/dev-accounts.ts";
import { startLocalChain } from "../src/chain/local-chain.ts";
import { createPayer, paymentReceipt } from "../src/client/paying-fetch.ts";
import { BASE_USDC_ADDRESS } from "../src/config.ts";
import { defineOperation } from "../src/contract/operation.ts";
import { csvCleanup } from "../src/operations/csv-cleanup/index.ts";
import { Problem } from "../src/problem.ts";
import { openStore } from "../src/store/open-store.ts";
import { moneyOfCalls, payOnce } from "./helpers/paid-call-money.ts";
import { freePort, startTestService, type TestService, usdcBalances } from "./helpers/service.ts";
import { toolPayer } from "./mcp/paying-mcp-client.ts";

const CSV_PRICE = 2_000_000n;
const body = (rows: unknown[], extra: Record<string, unknown> = {}) =>
  JSON.stringify({ rows, keyColumns: ["id"], ...extra });
const post = (init: { body: string; headers?: Record<string, string> }): RequestInit => ({
  method: "POST",
  headers: { "content-type": "application/json", ...init.headers },
  body: init.body,
});

// Operations that fail after the payment was verified: an upstream outage (a Problem) and a bug (a throw).
const upstreamDown = defineOperation({
  ...csvCleanup,
  id: "test-upstream-down",
  path: "/v1/test-upstream-down",
  priceUsd: "0.05",
  handler: async () => {
    throw new Problem(502, "upstream-unavailable", "Upstream unavailable", "the upstream did not answer");
  },
});
const crashes = defineOperation({
  ...csvCleanup,
  id: "test-crashes",
  path: "/v1/test-crashes",
  priceUsd: "0.05",
  handler: async () => {
    throw new Error("boom");
  },
});

describe("paid calls on the local chain (local mode)", () => {
  let service: TestService;
  let balanceOf: ReturnType<typeof usdcBalances>;
  const payer = createPayer(devPrivateKey(2));

  beforeAll(async () => {
    service = await startTestService({}, { operations: [csvCleanup, upstreamDown, crashes] });
    balanceOf = usdcBalances(service.localChain?.rpcUrl as string);
  });
  afterAll(async () => {
    await service?.stop();
  });

  it("charges exactly the price for a success and returns the receipt", async () => {
    const [payerBefore, payToBefore] = [await balanceOf(payer.address), await balanceOf(service.payTo)];
    const response = await payer.fetch(
      `${service.url}/v1/csv-cleanup`,
      post({
        body: body([
          { id: "a", v: " x " },
          { id: "A", v: "y" },
        ]),
      }),
    );
    expect(response.status).toBe(200);
    const result = await response.json();
    expect(result.stats).toMatchObject({ inputRows: 2, outputRows: 1, duplicatesDropped: 1 });
    const receipt = paymentReceipt(response);
    expect(receipt).toMatchObject({ success: true, network: "eip155:8453" });
    expect(receipt?.payer?.toLowerCase()).toBe(payer.address.toLowerCase());
    expect(receipt?.transaction).toMatch(/^0x[0-9a-f]{64}$/);
    expect(await balanceOf(payer.address)).toBe(payerBefore - CSV_PRICE);
    expect(await balanceOf(service.payTo)).toBe(payToBefore + CSV_PRICE);

    const store = await openStore(service.config.database);
    const rows = (await store.paymentCounts()).filter((row) => row.operationId === "csv-cleanup");
    expect(rows).toEqual([{ operationId: "csv-cleanup", state: "settled", count: 1 }]);
    await store.close();
  });

  it("never asks for or takes payment for an invalid request", async () => {
    const before = await balanceOf(payer.address);
    const response = await payer.fetch(
      `${service.url}/v1/csv-cleanup`,
      post({ body: body([{ id: { nested: 1 } }]) }),
    );
    expect(response.status).toBe(400);
    expect(response.headers.get("content-type")).toContain("application/problem+json");
    const problem = await response.json();
    expect(problem.errors).toContainEqual(expect.objectContaining({ pointer: "/rows/0/id" }));
    expect(await balanceOf(payer.address)).toBe(before);
  });

  it("takes nothing when the operation fails after the payment was verified", async () => {
    const before = await balanceOf(payer.address);
    const failed = await payer.fetch(
      `${service.url}/v1/test-upstream-down`,
      post({ body: body([{ id: "a" }]) }),
    );
    expect(failed.status).toBe(502);
    expect(failed.headers.get("PAYMENT-RESPONSE")).toBeNull();
    const crashed = await payer.fetch(`${service.url}/v1/test-crashes`, post({ body: body([{ id: "a" }]) }));
    expect(crashed.status).toBe(500);
    expect((await crashed.json()).detail).toContain("nothing was charged");
    expect(await balanceOf(payer.address)).toBe(before);

    const store = await openStore(service.config.database);
    const released = (await store.paymentCounts()).filter((row) => row.state === "released");
    expect(released.map((row) => row.operationId).sort()).toEqual(["test-crashes", "test-upstream-down"]);
    await store.close();
  });

  it("runs a payment sent twice at once only once, charges it once, and replays the stored outcome later", async () => {
    const url = `${service.url}/v1/csv-cleanup`;
    const init = post({ body: body([{ id: "r1" }, { id: "r2" }]) });
    const challenge = await fetch(url, init);
    expect(challenge.status).toBe(402);
    const paymentHeaders = await payer.signPayment(challenge);
    const before = await balanceOf(payer.address);

    const [first, second] = await Promise.all([
      fetch(url, post({ body: init.body as string, headers: paymentHeaders })),
      fetch(url, post({ body: init.body as string, headers: paymentHeaders })),
    ]);
    expect([first.status, second.status]).toEqual([200, 200]);
    const [firstBody, secondBody] = [await first.text(), await second.text()];
    expect(secondBody).toBe(firstBody);
    const transaction = paymentReceipt(first)?.transaction;
    expect(paymentReceipt(second)?.transaction).toBe(transaction);
    expect(await balanceOf(payer.address)).toBe(before - CSV_PRICE);

    const later = await fetch(url, post({ body: init.body as string, headers: paymentHeaders }));
    expect(later.status).toBe(200);
    expect(later.headers.get("x-payment-replayed")).toBe("true");
    expect(await later.text()).toBe(firstBody);
    expect(paymentReceipt(later)?.transaction).toBe(transaction);

    const other = await fetch(url, post({ body: body([{ id: "something else" }]), headers: paymentHeaders }));
    expect(other.status).toBe(409);
    expect((await other.json()).type).toBe("urn:utility402:problem:payment-already-used");
    expect(await balanceOf(payer.address)).toBe(before - CSV_PRICE);
  });

  it("refuses a payment for less than the price, for another payee, or with a forged signature", async () => {
    const url = `${service.url}/v1/csv-cleanup`;
    const init = post({ body: body([{ id: "z" }]) });
    const challenge = await fetch(url, init);
    const headers = await payer.signPayment(challenge);
    const [name, value] = Object.entries(headers)[0] as [string, string];
    const payload = JSON.parse(Buffer.from(value, "base64").toString());
    const tamper = (change: (p: typeof payload) => void) => {
      const copy = structuredClone(payload);
      change(copy);
      return { [name]: Buffer.from(JSON.stringify(copy)).toString("base64") };
    };
    const before = await balanceOf(payer.address);
    for (const forged of [
      tamper((p) => {
        p.accepted.amount = "1";
      }),
      tamper((p) => {
        p.payload.authorization.value = "1";
      }),
      tamper((p) => {
        p.payload.signature = `0x${"11".repeat(65)}`;
      }),
      { [name]: "not base64 json" },
    ]) {
      const response = await fetch(url, post({ body: init.body as string, headers: forged }));
      expect(response.status).toBe(402);
      expect(response.headers.get("PAYMENT-REQUIRED")).toBeTruthy();
    }
    expect(await balanceOf(payer.address)).toBe(before);
  });

  it("settles 16 concurrent distinct payments exactly once each, each call's money read before any assertion", async () => {
    const payers = Array.from({ length: 8 }, (_, i) => toolPayer(devPrivateKey(i + 2)));
    const before = await Promise.all(payers.map((p) => balanceOf(p.address)));
    const payToBefore = await balanceOf(service.payTo);
    const target = { baseUrl: service.url, path: "/v1/csv-cleanup" };
    const plans = Array.from({ length: 16 }, (_, i) => ({
      door: "http" as const,
      payer: payers[i % 8] as (typeof payers)[number],
      args: { rows: [{ id: `concurrent-${i}` }], keyColumns: ["id"] },
    }));
    const payments = await Promise.all(plans.map((plan) => payOnce.sign(target, plan)));
    const records = await Promise.all(
      plans.map((plan, i) => payOnce.firstAttempt(target, plan, payments[i] as PaymentPayload)),
    );
    // A call told to retry the same payment (under load: a settlement not confirmed in time) does as told.
    await Promise.all(records.map((record) => payOnce.followRetries(target, record)));
    const ledger = await openStore(service.config.database);
    const money = await moneyOfCalls(
      service.localChain?.rpcUrl as string,
      ledger,
      service.payTo,
      records,
    ).finally(() => ledger.close());
    expect(money.filter((call) => call.verdict !== "consistent").map((call) => call.report)).toEqual([]);
    expect(money.filter((call) => !call.record.delivered()).map((call) => call.report)).toEqual([]);
    expect(new Set(money.map((call) => call.chain.transaction)).size).toBe(16);
    const after = await Promise.all(payers.map((p) => balanceOf(p.address)));
    after.forEach((balance, i) => {
      expect(balance).toBe((before[i] as bigint) - 2n * CSV_PRICE);
    });
    expect(await balanceOf(service.payTo)).toBe(payToBefore + 16n * CSV_PRICE);
  });

  it("answers 503 with Retry-After and charges nothing when the chain is unreachable", async () => {
    const url = `${service.url}/v1/csv-cleanup`;
    const init = post({ body: body([{ id: "outage" }]) });
    const headers = await payer.signPayment(await fetch(url, init));
    await service.localChain?.stop();
    const response = await fetch(url, post({ body: init.body as string, headers }));
    expect(response.status).toBe(503);
    expect(response.headers.get("retry-after")).toBeTruthy();
    expect((await response.json()).detail).toContain("nothing was charged");
    const ready = await fetch(`${service.url}/readyz`);
    expect(ready.status).toBe(503);
  });
});

describe("settlement that fails after the work ran", () => {
  it("answers 402 with the reason, withholds the result and takes nothing", async () => {
    let drain: () => Promise<void> = async () => {};
    // While the operation runs, the payer empties its USDC balance, so the settlement must fail.
    const drainsPayerFirst = defineOperation({
      ...csvCleanup,
      id: "test-drains-payer",
      path: "/v1/test-drains-payer",
      handler: async (input, ctx) => {
        await drain();
        return (csvCleanup.handler as NonNullable<typeof csvCleanup.handler>)(input, ctx);
      },
    });
    const service = await startTestService({}, { operations: [drainsPayerFirst] });
    try {
      const rpcUrl = service.localChain?.rpcUrl as string;
      const balanceOf = usdcBalances(rpcUrl);
      const payer = createPayer(devPrivateKey(7));
      const sink = devAccounts().clients[7]?.address as `0x${string}`;
      drain = async () => {
        const balance = await balanceOf(payer.address);
        const client = createWalletClient({
          account: privateKeyToAccount(devPrivateKey(7)),
          transport: http(rpcUrl),
          chain: { ...base, rpcUrls: { default: { http: [rpcUrl] } } },
        });
        const hash = await client.writeContract({
          address: BASE_USDC_ADDRESS,
          abi: parseAbi(["function transfer(address,uint256) returns (bool)"]),
          functionName: "transfer",
          args: [sink, balance],
        });
        await createPublicClient({ transport: http(rpcUrl) }).waitForTransactionReceipt({ hash });
      };
      const payToBefore = await balanceOf(service.payTo);
      const response = await payer.fetch(
        `${service.url}/v1/test-drains-payer`,
        post({ body: body([{ id: "x" }]) }),
      );
      expect(response.status).toBe(402);
      const problem = await response.json();
      expect(problem.type).toBe("urn:utility402:problem:payment-rejected");
      expect(problem.rows).toBeUndefined();
      expect(response.headers.get("PAYMENT-REQUIRED")).toBeTruthy();
      expect(await balanceOf(service.payTo)).toBe(payToBefore);

      const store = await openStore(service.config.database);
      expect(await store.paymentCounts()).toEqual([
        { operationId: "test-drains-payer", state: "failed", count: 1 },
      ]);
      await store.close();
    } finally {
      await service.stop();
    }
  });
});

describe("replaying a settled payment", () => {
  it("serves the stored outcome for two minutes after the payment became final, then refuses", async () => {
    // The signed payload is public in the settlement transaction, so a replay must not work forever.
    let offsetMs = 0;
    const service = await startTestService({}, { clock: () => Date.now() + offsetMs });
    try {
      const payer = createPayer(devPrivateKey(8));
      const url = `${service.url}/v1/csv-cleanup`;
      const init = post({ body: body([{ id: "replay-window" }]) });
      const payment = await payer.signPayment(await fetch(url, init));
      const first = await fetch(url, post({ body: init.body as string, headers: payment }));
      expect(first.status).toBe(200);
      const soon = await fetch(url, post({ body: init.body as string, headers: payment }));
      expect(soon.status).toBe(200);
      expect(soon.headers.get("x-payment-replayed")).toBe("true");
      offsetMs = 125 * 1000;
      const late = await fetch(url, post({ body: init.body as string, headers: payment }));
      expect(late.status).toBe(409);
      expect((await late.json()).detail).toContain("no longer served");
    } finally {
      await service.stop();
    }
  });
});

describe("graceful shutdown", () => {
  it("finishes an in-flight paid call, settles it, then stops accepting", async () => {
    let started: () => void = () => {};
    const running = new Promise<void>((resolve) => {
      started = resolve;
    });
    const slow = defineOperation({
      ...csvCleanup,
      id: "test-slow",
      path: "/v1/test-slow",
      handler: async (input, ctx) => {
        started();
        await new Promise((resolve) => setTimeout(resolve, 500));
        return (csvCleanup.handler as NonNullable<typeof csvCleanup.handler>)(input, ctx);
      },
    });
    // A chain of its own that outlives the service, so the balance can be read after stop().
    const chain = await startLocalChain({ port: await freePort(), log: pino({ level: "silent" }) });
    const service = await startTestService(
      {
        X402_SETTLER_PRIVATE_KEY: devPrivateKey(0),
        RPC_URL: chain.rpcUrl,
        X402_PAY_TO: devAccounts().payTo.address,
      },
      { operations: [slow] },
    );
    try {
      const balanceOf = usdcBalances(chain.rpcUrl);
      const payer = createPayer(devPrivateKey(6));
      const before = await balanceOf(payer.address);
      const inFlight = payer.fetch(`${service.url}/v1/test-slow`, post({ body: body([{ id: "x" }]) }));
      await running;
      const stopping = service.stop();
      const response = await inFlight;
      expect(response.status).toBe(200);
      expect(paymentReceipt(response)?.success).toBe(true);
      await stopping;
      expect(await balanceOf(payer.address)).toBe(before - CSV_PRICE);
      await expect(fetch(`${service.url}/healthz`)).rejects.toThrow();
    } finally {
      await service.stop();
      await chain.stop();
    }
  });
});
