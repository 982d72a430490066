import net from "node:net";
import pg from "pg";
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

/**
 * A ledger that answers but is blocked (a migration, a hand-run `LOCK TABLE`, a stuck transaction): a paid call
 * waited 70 s behind a lock on `payments`. With DATABASE_STATEMENT_TIMEOUT_MS it answers 503 with Retry-After
 * once that time is up, charges nothing, and the same payment pays for the call once the lock is gone.
 */
describe.runIf(testDatabaseUrl())("paid calls while the ledger's payments table is locked", () => {
  let chain: LocalChain;
  let service: TestService;
  let database: Awaited<ReturnType<typeof createTestDatabase>>;
  let locker: pg.Client | undefined;

  beforeAll(async () => {
    chain = await startLocalChain({ port: await freePort(), log: pino({ level: "silent" }) });
    database = await createTestDatabase("locked");
    service = await startTestService({
      PAYMENT_MODE: "self",
      X402_SETTLER_PRIVATE_KEY: devPrivateKey(0),
      RPC_URL: chain.rpcUrl,
      X402_PAY_TO: devAccounts().payTo.address,
      DATABASE_URL: database.url,
      DATABASE_POOL_SIZE: "3",
      DATABASE_STATEMENT_TIMEOUT_MS: "1000",
    });
  }, 120_000);

  afterAll(async () => {
    await locker?.end().catch(() => undefined);
    await service?.stop().catch(() => undefined);
    await chain?.stop();
    await database?.dispose();
  });

  it("answers 503 after the statement timeout, charges nothing, and serves the same payment once unlocked", async () => {
    const payer = createPayer(devPrivateKey(9));
    const balanceOf = usdcBalances(chain.rpcUrl);
    const before = await balanceOf(payer.address);
    const request = { before: { a: 1 }, after: { a: 3 } };
    const payment = await payer.signPayment(await fetch(`${service.url}/v1/json-diff`, jsonPost(request)));

    locker = new pg.Client({ connectionString: database.url });
    await locker.connect();
    await locker.query("BEGIN");
    await locker.query("LOCK TABLE payments IN ACCESS EXCLUSIVE MODE");
    const started = Date.now();
    const blocked = await fetch(`${service.url}/v1/json-diff`, jsonPost(request, payment));
    const waitedMs = Date.now() - started;
    expect(blocked.status).toBe(503);
    expect(Number(blocked.headers.get("retry-after"))).toBeGreaterThan(0);
    expect(blocked.headers.get("content-type")).toContain("application/problem+json");
    // One statement's timeout (1 s), not the lock's lifetime: the lock is still held here.
    expect(waitedMs).toBeLessThan(8_000);
    expect(await balanceOf(payer.address)).toBe(before);

    await locker.query("ROLLBACK");
    const paid = await fetch(`${service.url}/v1/json-diff`, jsonPost(request, payment));
    expect(paid.status).toBe(200);
    expect(await balanceOf(payer.address)).toBe(before - 10_000n);
  });
});
