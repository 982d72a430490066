import pino from "pino";
import { privateKeyToAccount } from "viem/accounts";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { devAccounts, devPrivateKey } from "../src/chain/dev-accounts.ts";
import { type LocalChain, startLocalChain } from "../src/chain/local-chain.ts";
import { createPayer, paymentReceipt } from "../src/client/paying-fetch.ts";
import { BASE_USDC_ADDRESS } from "../src/config.ts";
import { defineOperation } from "../src/contract/operation.ts";
import { csvCleanup } from "../src/operations/csv-cleanup/index.ts";
import { createAuthorizationChecker } from "../src/payments/settler/authorization-state.ts";
import { openStore } from "../src/store/open-store.ts";
import { chainRpc, paymentKeyOf, spendNonceElsewhere, startFlakyRpc } from "./helpers/payment-faults.ts";
import {
  databaseUrlOf,
  freePort,
  jsonPost,
  startTestService,
  type TestService,
  usdcBalances,
} from "./helpers/service.ts";

const PRICE = 2_000_000n;

describe("a settlement whose outcome is unknown", () => {
  let chain: LocalChain;
  let rpc: Awaited<ReturnType<typeof startFlakyRpc>>;
  let service: TestService;

  beforeAll(async () => {
    chain = await startLocalChain({ port: await freePort(), log: pino({ level: "silent" }) });
    rpc = await startFlakyRpc(chain.rpcUrl);
    service = await startTestService({
      X402_SETTLER_PRIVATE_KEY: devPrivateKey(0),
      RPC_URL: rpc.url,
      X402_PAY_TO: devAccounts().payTo.address,
      X402_SETTLEMENT_TIMEOUT_MS: "2000",
    });
  });
  afterAll(async () => {
    await service?.stop();
    await rpc?.stop();
    await chain?.stop();
  });

  it("is answered 503 without losing the result, and the retry delivers it, charged once", async () => {
    const balanceOf = usdcBalances(chain.rpcUrl);
    const payer = createPayer(devPrivateKey(2));
    const url = `${service.url}/v1/csv-cleanup`;
    const request = { rows: [{ id: "kept" }, { id: "KEPT" }], keyColumns: ["id"] };
    const payment = await payer.signPayment(await fetch(url, jsonPost(request)));
    const before = await balanceOf(payer.address);

    rpc.goDarkAfterNextBroadcast();
    const lost = await fetch(url, jsonPost(request, payment));
    expect(lost.status).toBe(503);
    expect(lost.headers.get("retry-after")).toBe("5");
    expect((await lost.json()).detail).toContain("retry the same request with the same payment");
    // The transfer did land: the payer is charged, the ledger keeps the payment open with its answer.
    expect(await balanceOf(payer.address)).toBe(before - PRICE);
    const store = await openStore(service.config.database);
    const open = await store.getPayment(paymentKeyOf(payment));
    expect(open?.state).toBe("verified");
    expect(open?.pendingOutcome?.status).toBe(200);

    rpc.heal();
    const retried = await fetch(url, jsonPost(request, payment));
    expect(retried.status).toBe(200);
    expect((await retried.json()).stats).toMatchObject({ inputRows: 2, outputRows: 1 });
    const receipt = paymentReceipt(retried);
    expect(receipt?.success).toBe(true);
    expect(receipt?.transaction).toMatch(/^0x[0-9a-f]{64}$/);
    expect(await balanceOf(payer.address)).toBe(before - PRICE);
    const settled = await store.getPayment(open?.paymentKey as string);
    expect(settled).toMatchObject({ state: "settled", txHash: receipt?.transaction, pendingOutcome: null });
    await store.close();
  });
});

describe("a settlement broadcast but not mined in time", () => {
  const TIMEOUT_MS = 3000;
  let chain: LocalChain;
  let service: TestService;

  beforeAll(async () => {
    chain = await startLocalChain({ port: await freePort(), log: pino({ level: "silent" }) });
    service = await startTestService({
      X402_SETTLER_PRIVATE_KEY: devPrivateKey(0),
      RPC_URL: chain.rpcUrl,
      X402_PAY_TO: devAccounts().payTo.address,
      X402_SETTLEMENT_TIMEOUT_MS: String(TIMEOUT_MS),
    });
  });
  afterAll(async () => {
    if (chain) await chainRpc(chain.rpcUrl, "evm_setAutomine", [true]).catch(() => undefined);
    await service?.stop();
    await chain?.stop();
  });

  it("is answered after one X402_SETTLEMENT_TIMEOUT_MS, not two, and its retry after the block delivers it, charged once", async () => {
    const balanceOf = usdcBalances(chain.rpcUrl);
    const payer = createPayer(devPrivateKey(4));
    const url = `${service.url}/v1/csv-cleanup`;
    const request = { rows: [{ id: "slow" }, { id: "SLOW" }], keyColumns: ["id"] };
    const payment = await payer.signPayment(await fetch(url, jsonPost(request)));
    const before = await balanceOf(payer.address);

    await chainRpc(chain.rpcUrl, "evm_setAutomine", [false]);
    const started = Date.now();
    const unconfirmed = await fetch(url, jsonPost(request, payment));
    const waitedMs = Date.now() - started;
    expect(unconfirmed.status).toBe(503);
    expect((await unconfirmed.json()).detail).toContain("retry the same request with the same payment");
    // One receipt wait. x402 core's own retry of a "settlement_pending" answer waited as long again: 2 ×
    // the timeout at least (60 s at the default 30 s, past an MCP client's 60 s request timeout).
    expect(waitedMs).toBeGreaterThanOrEqual(TIMEOUT_MS);
    expect(waitedMs).toBeLessThan(2 * TIMEOUT_MS);
    expect(await balanceOf(payer.address)).toBe(before);

    await chainRpc(chain.rpcUrl, "evm_mine");
    await chainRpc(chain.rpcUrl, "evm_setAutomine", [true]);
    const retried = await fetch(url, jsonPost(request, payment));
    expect(retried.status).toBe(200);
    expect(paymentReceipt(retried)?.success).toBe(true);
    expect(await balanceOf(payer.address)).toBe(before - PRICE);
  });
});

describe("a payment whose owner died mid-way", () => {
  let chain: LocalChain;
  let dead: TestService;
  let survivor: TestService;
  let clockOffset = 0;
  let releaseHang: () => void = () => {};

  // The same operation on both instances; the first call hangs forever, as on a crashed instance.
  let calls = 0;
  const flaky = defineOperation({
    ...csvCleanup,
    handler: async (input, ctx) => {
      calls++;
      if (calls === 1) {
        await new Promise<void>((resolve) => {
          releaseHang = resolve;
        });
        throw new Error("the dead instance never finishes");
      }
      return (csvCleanup.handler as NonNullable<typeof csvCleanup.handler>)(input, ctx);
    },
  });

  beforeAll(async () => {
    chain = await startLocalChain({ port: await freePort(), log: pino({ level: "silent" }) });
    const env = {
      X402_SETTLER_PRIVATE_KEY: devPrivateKey(0),
      RPC_URL: chain.rpcUrl,
      X402_PAY_TO: devAccounts().payTo.address,
      SHUTDOWN_TIMEOUT_MS: "200",
    };
    dead = await startTestService(env, { operations: [flaky] });
    // A second instance on the same database (with a settlement key of its own), whose clock can
    // move past the dead one's lease.
    survivor = await startTestService(
      {
        ...env,
        X402_SETTLER_PRIVATE_KEY: devPrivateKey(9),
        DATABASE_URL: databaseUrlOf(dead.config),
      },
      { operations: [flaky], clock: () => Date.now() + clockOffset },
    );
  });
  afterAll(async () => {
    releaseHang();
    await survivor?.stop();
    await dead?.stop();
    await chain?.stop();
  });

  it("is left alone during its lease, then released by another instance: never settled, nothing charged", async () => {
    const balanceOf = usdcBalances(chain.rpcUrl);
    const payer = createPayer(devPrivateKey(3));
    const request = { rows: [{ id: "orphan" }] };
    const payment = await payer.signPayment(await fetch(`${dead.url}/v1/csv-cleanup`, jsonPost(request)));
    const before = await balanceOf(payer.address);

    const abandoned = new AbortController();
    const hanging = fetch(`${dead.url}/v1/csv-cleanup`, {
      ...jsonPost(request, payment),
      signal: abandoned.signal,
    });
    while (calls === 0) await new Promise((resolve) => setTimeout(resolve, 20));
    abandoned.abort();
    await hanging.catch(() => undefined);

    // Within the lease the survivor must not touch it: it waits instead of running the work again.
    const early = await fetch(`${survivor.url}/v1/csv-cleanup`, {
      ...jsonPost(request, payment),
      signal: AbortSignal.timeout(1000),
    }).catch((error: Error) => error);
    expect(early).toBeInstanceOf(Error);
    expect(calls).toBe(1);

    // Past the lease (maxTimeoutSeconds + 2 settlement waits + 30 s), which outlasts the
    // authorization: the dead owner never settled, so the payment is released, nothing charged.
    clockOffset = (120 + 2 * 30 + 30 + 1) * 1000;
    const resumed = await fetch(`${survivor.url}/v1/csv-cleanup`, jsonPost(request, payment));
    expect(resumed.status).toBe(402);
    expect((await resumed.json()).reason).toBe("authorization_expired");
    expect(calls).toBe(1);
    const store = await openStore(survivor.config.database);
    expect((await store.getPayment(paymentKeyOf(payment)))?.state).toBe("released");
    await store.close();
    expect(await balanceOf(payer.address)).toBe(before);
  });
});

describe("a payer who spends the authorization's nonce elsewhere during the work", () => {
  it("gets no result and pays nothing: the payment is failed, not settled", async () => {
    let burn: () => Promise<void> = async () => {};
    const burnsNonceFirst = defineOperation({
      ...csvCleanup,
      handler: async (input, ctx) => {
        await burn();
        return (csvCleanup.handler as NonNullable<typeof csvCleanup.handler>)(input, ctx);
      },
    });
    const service = await startTestService({}, { operations: [burnsNonceFirst] });
    try {
      const rpcUrl = service.localChain?.rpcUrl as string;
      const balanceOf = usdcBalances(rpcUrl);
      const account = privateKeyToAccount(devPrivateKey(4));
      const payer = createPayer(devPrivateKey(4));
      const url = `${service.url}/v1/csv-cleanup`;
      const request = { rows: [{ id: "burn" }] };
      const payment = await payer.signPayment(await fetch(url, jsonPost(request)));
      const { nonce } = JSON.parse(Buffer.from(Object.values(payment)[0] as string, "base64").toString())
        .payload.authorization;
      // The payer signs a 0-value transfer to itself with the same nonce and submits it first.
      burn = () => spendNonceElsewhere(rpcUrl, devPrivateKey(4), nonce);
      const payToBefore = await balanceOf(service.payTo);
      const response = await fetch(url, jsonPost(request, payment));
      expect(response.status).toBe(402);
      const problem = await response.json();
      expect(problem.rows).toBeUndefined();
      expect(response.headers.get("PAYMENT-RESPONSE")).toBeNull();
      expect(await balanceOf(service.payTo)).toBe(payToBefore);
      const store = await openStore(service.config.database);
      expect((await store.getPayment(paymentKeyOf(payment)))?.state).toBe("failed");
      await store.close();
      // The token's record agrees: the nonce is used, but not by a transfer to payTo.
      const outcome = await createAuthorizationChecker(rpcUrl).check({
        asset: BASE_USDC_ADDRESS,
        payer: account.address,
        nonce,
        payTo: service.payTo,
        amount: 2_000_000n,
      });
      expect(outcome.state).toBe("consumed");
      // And a retry of the same payment gets the same refusal, not the result.
      const retry = await fetch(url, jsonPost(request, payment));
      expect(retry.status).toBe(402);
    } finally {
      await service.stop();
    }
  });
});
