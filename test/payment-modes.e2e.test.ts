import type { Server } from "node:http";
import { serve } from "@hono/node-server";
import pino from "pino";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { devAccounts, devPrivateKey } from "../src/chain/dev-accounts.ts";
import { type LocalChain, startLocalChain } from "../src/chain/local-chain.ts";
import { createPayer, paymentReceipt } from "../src/client/paying-fetch.ts";
import { BASE_NETWORK, ConfigError } from "../src/config.ts";
import { inProcessFacilitator } from "../src/payments/facilitator/facilitator.ts";
import { buildFacilitatorApp } from "../src/payments/facilitator/facilitator-server.ts";
import { createSettlerSigner } from "../src/payments/settler/settler-signer.ts";
import {
  databaseUrlOf,
  freePort,
  startTestService,
  type TestService,
  usdcBalances,
} from "./helpers/service.ts";

const AUTH_TOKEN = "test-facilitator-token";

describe("facilitator mode: a remote facilitator over HTTP", () => {
  let chain: LocalChain;
  let facilitatorServer: Server | undefined;
  let service: TestService;
  let balanceOf: ReturnType<typeof usdcBalances>;
  const payer = createPayer(devPrivateKey(3));
  const payTo = devAccounts().payTo.address;

  const stopFacilitator = () =>
    new Promise<void>((resolve) => {
      if (!facilitatorServer) return resolve();
      facilitatorServer.close(() => resolve());
      facilitatorServer.closeAllConnections();
      facilitatorServer = undefined;
    });

  beforeAll(async () => {
    chain = await startLocalChain({ port: await freePort(), log: pino({ level: "silent" }) });
    balanceOf = usdcBalances(chain.rpcUrl);
    const signer = createSettlerSigner({
      privateKey: devPrivateKey(0),
      rpcUrl: chain.rpcUrl,
      chainId: 8453,
      pollingIntervalMs: 50,
      confirmationTimeoutMs: 10_000,
    });
    const app = buildFacilitatorApp(inProcessFacilitator(signer, BASE_NETWORK), { authToken: AUTH_TOKEN });
    const port = await freePort();
    facilitatorServer = serve({ fetch: app.fetch, port, hostname: "127.0.0.1" }) as Server;
    service = await startTestService({
      PAYMENT_MODE: "facilitator",
      X402_FACILITATOR_URL: `http://127.0.0.1:${port}`,
      X402_FACILITATOR_AUTH_VALUE: `Bearer ${AUTH_TOKEN}`,
      X402_PAY_TO: payTo,
    });
  });
  afterAll(async () => {
    await service?.stop();
    await stopFacilitator();
    await chain?.stop();
  });

  it("settles through the remote facilitator and charges exactly the price", async () => {
    const before = await balanceOf(payer.address);
    const response = await payer.fetch(`${service.url}/v1/csv-cleanup`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ rows: [{ a: 1 }, { a: 1 }] }),
    });
    expect(response.status).toBe(200);
    expect(paymentReceipt(response)?.success).toBe(true);
    expect(await balanceOf(payer.address)).toBe(before - 2_000_000n);
    const ready = await (await fetch(`${service.url}/readyz`)).json();
    expect(ready.checks.facilitator).toMatch(/^ok/);
  });

  it("answers 503 with Retry-After and charges nothing while the facilitator is down", async () => {
    const before = await balanceOf(payer.address);
    await stopFacilitator();
    const response = await payer.fetch(`${service.url}/v1/csv-cleanup`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ rows: [{ a: 2 }] }),
    });
    expect(response.status).toBe(503);
    expect(response.headers.get("retry-after")).toBe("5");
    expect(response.headers.get("content-type")).toBe("application/problem+json");
    expect(await balanceOf(payer.address)).toBe(before);
    expect((await fetch(`${service.url}/readyz`)).status).toBe(503);
  });
});

describe("self mode: the operator's key over the operator's RPC", () => {
  let chain: LocalChain;
  let service: TestService;

  beforeAll(async () => {
    chain = await startLocalChain({ port: await freePort(), log: pino({ level: "silent" }) });
    service = await startTestService({
      X402_SETTLER_PRIVATE_KEY: devPrivateKey(9),
      RPC_URL: chain.rpcUrl,
      X402_PAY_TO: devAccounts().payTo.address,
    });
  });
  afterAll(async () => {
    await service?.stop();
    await chain?.stop();
  });

  it("settles with the configured key and charges exactly the price", async () => {
    expect(service.config.payment.mode).toBe("self");
    expect(service.localChain).toBeUndefined();
    const balanceOf = usdcBalances(chain.rpcUrl);
    const payer = createPayer(devPrivateKey(5));
    const before = await balanceOf(payer.address);
    const responses = await Promise.all(
      [1, 2, 3, 4].map((n) =>
        payer.fetch(`${service.url}/v1/csv-cleanup`, {
          method: "POST",
          headers: { "content-type": "application/json" },
          body: JSON.stringify({ rows: [{ n }] }),
        }),
      ),
    );
    expect(responses.map((r) => r.status)).toEqual([200, 200, 200, 200]);
    expect(await balanceOf(payer.address)).toBe(before - 4n * 2_000_000n);
    const ready = await (await fetch(`${service.url}/readyz`)).json();
    expect(ready.checks.chain).toMatch(/^ok/);
  });

  it("refuses a second instance that would send from the same settlement key on the same database", async () => {
    const env = {
      X402_SETTLER_PRIVATE_KEY: devPrivateKey(9),
      RPC_URL: chain.rpcUrl,
      X402_PAY_TO: devAccounts().payTo.address,
      DATABASE_URL: databaseUrlOf(service.config),
    };
    const refused = startTestService(env);
    await expect(refused).rejects.toBeInstanceOf(ConfigError);
    await expect(refused).rejects.toThrow(
      /settlement account 0x[0-9a-fA-F]{40} is in use by another instance/,
    );
    // A key of its own is fine on the same database.
    const second = await startTestService({ ...env, X402_SETTLER_PRIVATE_KEY: devPrivateKey(8) });
    await second.stop();
  });
});
