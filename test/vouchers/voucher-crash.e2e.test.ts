/**
 * kill -9 of a service that answered vouchers, and no client retry: the restarted service claims every
 * delivered charge and settles it to payTo, once. The service runs as its own process in self mode on a
 * local chain that outlives it; money is read from the chain (the channel's totalClaimed, payTo's USDC,
 * the contract's Settled events), never from what the service says.
 */
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { decodePaymentResponseHeader } from "@x402/core/http";
import pino from "pino";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { devAccounts, devPrivateKey } from "../../src/chain/dev-accounts.ts";
import { type LocalChain, startLocalChain } from "../../src/chain/local-chain.ts";
import { SqliteStore } from "../../src/store/sqlite/sqlite-store.ts";
import { type Spawned, spawnUtility402, until, waitFor } from "../helpers/processes.ts";
import { freePort, usdcBalances } from "../helpers/service.ts";
import { officialVoucherClient, voucherChain } from "./voucher-chain.ts";

const CALLS = 6;
const PRICE = 10_000n; // json-diff, $0.01
const NETWORK = "eip155:8453";

describe("vouchers survive kill -9", () => {
  let chain: LocalChain;
  const cleanups: (() => Promise<void>)[] = [];
  const payTo = devAccounts().payTo.address;

  beforeAll(async () => {
    chain = await startLocalChain({ port: await freePort(), log: pino({ level: "silent" }) });
  });
  afterAll(async () => {
    for (const cleanup of cleanups.reverse()) await cleanup().catch(() => undefined);
    await chain?.stop();
  });

  /** A service of its own (data directory, port) on the shared chain; `start` spawns it (again). */
  async function serviceOn(extraEnv: Record<string, string>) {
    const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), "utility402-voucher-crash-"));
    cleanups.push(async () => fs.rmSync(dataDir, { recursive: true, force: true }));
    const port = await freePort();
    const base = `http://127.0.0.1:${port}`;
    const env = {
      PORT: String(port),
      DATA_DIR: dataDir,
      DATABASE_URL: `sqlite:${path.join(dataDir, "ledger.db")}`,
      LOG_LEVEL: "warn",
      PAYMENT_MODE: "self",
      X402_SETTLER_PRIVATE_KEY: devPrivateKey(0),
      RPC_URL: chain.rpcUrl,
      X402_PAY_TO: payTo,
      X402_VOUCHERS: "on",
      X402_VOUCHER_WATCH_INTERVAL_MS: "200",
      ...extraEnv,
    };
    const start = async (): Promise<Spawned> => {
      const service = spawnUtility402(["serve"], env);
      cleanups.push(() => service.stop());
      await waitFor(`${base}/readyz`, service.child, service.output, 120_000);
      return service;
    };
    return { base, start, ledger: () => new SqliteStore(path.join(dataDir, "ledger.db")) };
  }

  /** `count` calls of json-diff paid by the official client's vouchers; the channel id. */
  async function payCalls(base: string, pay: typeof fetch, count: number, from = 0): Promise<string> {
    let channelId = "";
    for (let i = from; i < from + count; i++) {
      const answer = await pay(`${base}/v1/json-diff`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ before: { n: i }, after: { n: i + 1 } }),
      });
      expect(answer.status, await answer.clone().text()).toBe(200);
      const settled = decodePaymentResponseHeader(answer.headers.get("payment-response") as string);
      channelId = (settled.extra as { channelState: { channelId: string } }).channelState.channelId;
    }
    return channelId;
  }

  it("kill -9 after answering vouchers, before any claim: the restart claims and settles every delivered charge", async () => {
    const on = voucherChain(chain.rpcUrl);
    const balanceOf = usdcBalances(chain.rpcUrl);
    // Neither the threshold nor the timer claims before the kill.
    const service = await serviceOn({
      X402_VOUCHER_CLAIM_THRESHOLD: "1000000000",
      X402_VOUCHER_CLAIM_INTERVAL_MS: "86400000",
    });
    const first = await service.start();
    const payToBefore = await balanceOf(payTo);
    const fromBlock = await on.client.getBlockNumber();
    const { pay } = officialVoucherClient(chain.rpcUrl, NETWORK, devPrivateKey(6));
    const channelId = await payCalls(service.base, pay, CALLS);
    expect((await on.channel(channelId)).totalClaimed).toBe(0n);

    first.child.kill("SIGKILL");
    await new Promise((resolve) => first.child.once("exit", resolve));
    expect((await on.channel(channelId)).totalClaimed).toBe(0n);
    expect(await balanceOf(payTo)).toBe(payToBefore);

    const second = await service.start();
    const delivered = PRICE * BigInt(CALLS);
    // A hang guard, not a timing assertion: the restart's first round claims and settles.
    await until("payTo paid", async () =>
      (await balanceOf(payTo)) >= payToBefore + delivered ? true : undefined,
    );
    await second.stop(); // its last round (graceful shutdown): nothing more to claim or settle
    expect(await balanceOf(payTo)).toBe(payToBefore + delivered);
    expect((await on.channel(channelId)).totalClaimed).toBe(delivered);
    expect(await on.settlements(payTo, fromBlock + 1n)).toHaveLength(1);
    const ledger = service.ledger();
    const charged = (await ledger.vouchers.charges(channelId)).reduce((sum, c) => sum + BigInt(c.amount), 0n);
    await ledger.close();
    expect(charged).toBe(delivered);
  });

  it("kill -9 between the claim and its settle: the restart settles it, once", async () => {
    const on = voucherChain(chain.rpcUrl);
    const balanceOf = usdcBalances(chain.rpcUrl);
    // The CALLS-th call reaches the threshold: its claim goes out at once; the timer never fires.
    const service = await serviceOn({
      X402_VOUCHER_CLAIM_THRESHOLD: String(PRICE * BigInt(CALLS)),
      X402_VOUCHER_CLAIM_INTERVAL_MS: "86400000",
    });
    const first = await service.start();
    const payToBefore = await balanceOf(payTo);
    const fromBlock = await on.client.getBlockNumber();
    const { pay } = officialVoucherClient(chain.rpcUrl, NETWORK, devPrivateKey(7));
    await payCalls(service.base, pay, CALLS - 1);

    // From here the chain mines only when told: the claim is mined, its settle is left in the pool.
    await on.rpc("evm_setAutomine", [false]);
    let channelId: string;
    try {
      channelId = await payCalls(service.base, pay, 1, CALLS - 1);
      await until("the claim in the pool", async () => ((await on.pending()) === 1 ? true : undefined));
      await on.rpc("evm_mine");
      expect((await on.channel(channelId)).totalClaimed).toBe(PRICE * BigInt(CALLS));
      await until("the settle in the pool", async () => ((await on.pending()) === 1 ? true : undefined));
      first.child.kill("SIGKILL");
      await new Promise((resolve) => first.child.once("exit", resolve));
      // The settle the dead service broadcast never lands: as if it died before sending it.
      await on.rpc("anvil_dropAllTransactions");
    } finally {
      await on.rpc("evm_setAutomine", [true]);
    }
    expect(await balanceOf(payTo)).toBe(payToBefore);
    expect(await on.settlements(payTo, fromBlock + 1n)).toHaveLength(0);

    const second = await service.start();
    const delivered = PRICE * BigInt(CALLS);
    await until("payTo paid", async () =>
      (await balanceOf(payTo)) >= payToBefore + delivered ? true : undefined,
    );
    await second.stop();
    expect(await balanceOf(payTo)).toBe(payToBefore + delivered);
    expect(await on.settlements(payTo, fromBlock + 1n)).toHaveLength(1);
    expect((await on.channel(channelId)).totalClaimed).toBe(delivered);
  });
});
