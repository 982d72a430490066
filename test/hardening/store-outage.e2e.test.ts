import net from "node:net";
import pino from "pino";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { devAccounts, devPrivateKey } from "../../src/chain/dev-accounts.ts";
import { type LocalChain, startLocalChain } from "../../src/chain/local-chain.ts";
import { createPayer } from "../../src/client/paying-fetch.ts";
import { createTestDatabase, testDatabaseUrl } from "../helpers/postgres.ts";
import { freePort, jsonPost, startTestService, type TestService, usdcBalances } from "../helpers/service.ts";

/** A TCP relay to PostgreSQL that can be cut: the database "goes down" for the service only. */
async function cuttableRelay(target: URL) {
  const sockets = new Set<net.Socket>();
  const server = net.createServer((client) => {
    const upstream = net.connect(Number(target.port || 5432), target.hostname);
    for (const socket of [client, upstream]) {
      sockets.add(socket);
      socket.on("close", () => sockets.delete(socket));
      socket.on("error", () => undefined);
    }
    client.pipe(upstream).pipe(client);
  });
  const port = await freePort();
  await new Promise<void>((resolve) => server.listen(port, "127.0.0.1", resolve));
  return {
    port,
    cut: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        for (const socket of sockets) socket.destroy();
      }),
  };
}

/**
 * Finding 8 of the hardening review: "with PostgreSQL down, paid calls answer 500". They must answer 503
 * with Retry-After, and charge nothing.
 */
describe.runIf(testDatabaseUrl())("paid calls while the ledger's PostgreSQL is down", () => {
  let chain: LocalChain;
  let service: TestService;
  let database: Awaited<ReturnType<typeof createTestDatabase>>;
  let relay: Awaited<ReturnType<typeof cuttableRelay>>;

  beforeAll(async () => {
    chain = await startLocalChain({ port: await freePort(), log: pino({ level: "silent" }) });
    database = await createTestDatabase("outage");
    const url = new URL(database.url);
    relay = await cuttableRelay(new URL(database.url));
    url.hostname = "127.0.0.1";
    url.port = String(relay.port);
    service = await startTestService({
      PAYMENT_MODE: "self",
      X402_SETTLER_PRIVATE_KEY: devPrivateKey(0),
      RPC_URL: chain.rpcUrl,
      X402_PAY_TO: devAccounts().payTo.address,
      DATABASE_URL: url.toString(),
      DATABASE_POOL_SIZE: "3",
    });
  }, 120_000);

  afterAll(async () => {
    await service?.stop().catch(() => undefined);
    await chain?.stop();
    await database?.dispose();
  });

  it("answers 503 with Retry-After and problem+json, and charges nothing", async () => {
    const payer = createPayer(devPrivateKey(8));
    const balanceOf = usdcBalances(chain.rpcUrl);
    const before = await balanceOf(payer.address);
    const request = { before: { a: 1 }, after: { a: 2 } };
    const payment = await payer.signPayment(await fetch(`${service.url}/v1/json-diff`, jsonPost(request)));

    await relay.cut();
    const response = await fetch(`${service.url}/v1/json-diff`, jsonPost(request, payment));
    expect(response.status).toBe(503);
    expect(response.headers.get("content-type")).toContain("application/problem+json");
    expect(Number(response.headers.get("retry-after"))).toBeGreaterThan(0);
    expect((await response.json()).detail).toMatch(/nothing was charged/);
    expect(await balanceOf(payer.address)).toBe(before);
  });
});
