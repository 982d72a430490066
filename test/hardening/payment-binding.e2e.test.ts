import pino from "pino";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { devAccounts, devPrivateKey } from "../../src/chain/dev-accounts.ts";
import { type LocalChain, startLocalChain } from "../../src/chain/local-chain.ts";
import { createPayer } from "../../src/client/paying-fetch.ts";
import { freePort, jsonPost, startTestService, type TestService, usdcBalances } from "../helpers/service.ts";

/**
 * Finding 8 of the hardening review: "an unused payment for one operation was accepted by another at the
 * same price". A payment names the resource it was signed for; it pays for that route only.
 */
describe("a payment is bound to the resource it was signed for", () => {
  let chain: LocalChain;
  let service: TestService;

  beforeAll(async () => {
    chain = await startLocalChain({ port: await freePort(), log: pino({ level: "silent" }) });
    service = await startTestService({
      PAYMENT_MODE: "self",
      X402_SETTLER_PRIVATE_KEY: devPrivateKey(0),
      RPC_URL: chain.rpcUrl,
      X402_PAY_TO: devAccounts().payTo.address,
    });
  }, 120_000);

  afterAll(async () => {
    await service?.stop();
    await chain?.stop();
  });

  it("refuses a json-diff payment at unit-convert (same price), charges nothing, and json-diff still takes it", async () => {
    const payer = createPayer(devPrivateKey(5));
    const balanceOf = usdcBalances(chain.rpcUrl);
    const before = await balanceOf(payer.address);
    const diff = { before: { a: 1 }, after: { a: 2 } };
    const payment = await payer.signPayment(await fetch(`${service.url}/v1/json-diff`, jsonPost(diff)));

    const elsewhere = await fetch(
      `${service.url}/v1/unit-convert`,
      jsonPost({ value: 100, from: "psi", to: "kPa" }, payment),
    );
    expect(elsewhere.status).toBe(402);
    const problem = await elsewhere.json();
    expect(problem.reason).toBe("resource_mismatch");
    expect(problem.detail).toContain("/v1/json-diff");
    expect(await balanceOf(payer.address)).toBe(before);

    const here = await fetch(`${service.url}/v1/json-diff`, jsonPost(diff, payment));
    expect(here.status).toBe(200);
    expect(await balanceOf(payer.address)).toBe(before - 10_000n);
  });
});
