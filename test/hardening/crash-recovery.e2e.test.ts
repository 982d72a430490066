import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import pino from "pino";
import { createPublicClient, http, parseAbiItem } from "viem";
import { afterAll, describe, expect, it } from "vitest";
import { devAccounts, devPrivateKey } from "../../src/chain/dev-accounts.ts";
import { type LocalChain, startLocalChain } from "../../src/chain/local-chain.ts";
import { createPayer, paymentReceipt } from "../../src/client/paying-fetch.ts";
import { BASE_USDC_ADDRESS } from "../../src/config.ts";
import { LEASE_TTL_MS } from "../../src/payments/resource-server/lease-keeper.ts";
import { RECOVERY_SWEEP_MS } from "../../src/payments/resource-server/recovery-sweeper.ts";
import { EXPIRY_MARGIN_SECONDS } from "../../src/payments/resource-server/settlement-verdict.ts";
import { PostgresStore } from "../../src/store/postgres/postgres-store.ts";
import { SqliteStore } from "../../src/store/sqlite/sqlite-store.ts";
import type { Store } from "../../src/store/store.ts";
import { paymentKeyOf, validBeforeOf } from "../helpers/payment-faults.ts";
import { createTestDatabase, testDatabaseUrl } from "../helpers/postgres.ts";
import { type Spawned, shiftedClock, spawnUtility402, until, waitFor } from "../helpers/processes.ts";
import { freePort, jsonPost } from "../helpers/service.ts";

const CALLS = 20;
const PRICE = 10_000n; // json-diff, $0.01
/** Short authorizations, so that payments that never reached the chain are released within the test. */
const MAX_TIMEOUT_SECONDS = 30;
const TRANSFER = parseAbiItem("event Transfer(address indexed from, address indexed to, uint256 value)");

type Mode = "local" | "self" | "postgres";

/**
 * Finding 4 of the hardening review, and its "crash suite": kill -9 of the service under 20 concurrent
 * paid calls, restart, and no client retry. Within the documented bound (docs/operations.md, Recovery),
 * the ledger's settled payments equal the transfers to payTo on chain, none is left unfinished, and each
 * settled payment's result is then served to its retry without a second charge.
 *
 * The chain mines every 2 s (not at once), so settlements are in flight when the service dies: in self
 * and PostgreSQL modes the chain outlives the service and mines them after its death (paid, no answer
 * given); in local mode the service's own chain goes down with it and loses what was pending.
 */
describe.each<Mode>(["local", "self", "postgres"])(
  "kill -9 under 20 concurrent paid calls, %s mode",
  (mode) => {
    const databaseUrl = testDatabaseUrl();
    const cleanups: (() => Promise<void>)[] = [];
    afterAll(async () => {
      for (const cleanup of cleanups.reverse()) await cleanup().catch(() => undefined);
    });

    it.skipIf(mode === "postgres" && !databaseUrl)(
      `${mode} mode: after the restart the ledger equals the chain and every settled result is served once`,
      async () => {
        const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), "utility402-crash-"));
        cleanups.push(async () => fs.rmSync(dataDir, { recursive: true, force: true }));
        const port = await freePort();
        const base = `http://127.0.0.1:${port}`;
        const payTo = devAccounts().payTo.address;

        let chain: LocalChain | undefined;
        let rpcUrl: string;
        let env: Record<string, string> = {
          PORT: String(port),
          DATA_DIR: dataDir,
          LOG_LEVEL: "warn",
          X402_MAX_TIMEOUT_SECONDS: String(MAX_TIMEOUT_SECONDS),
        };
        if (mode === "local") {
          const chainPort = await freePort();
          rpcUrl = `http://127.0.0.1:${chainPort}`;
          env = { ...env, PAYMENT_MODE: "local", LOCAL_CHAIN_PORT: String(chainPort) };
        } else {
          chain = await startLocalChain({ port: await freePort(), log: pino({ level: "silent" }) });
          cleanups.push(() => (chain as LocalChain).stop());
          rpcUrl = chain.rpcUrl;
          env = {
            ...env,
            PAYMENT_MODE: "self",
            X402_SETTLER_PRIVATE_KEY: devPrivateKey(0),
            RPC_URL: rpcUrl,
            X402_PAY_TO: payTo,
          };
        }
        let store: Store;
        if (mode === "postgres") {
          const database = await createTestDatabase("crash");
          cleanups.push(() => database.dispose());
          env.DATABASE_URL = database.url;
          store = await PostgresStore.open({ connectionString: database.url, poolSize: 2 });
        } else {
          const ledger = path.join(dataDir, "ledger.db");
          env.DATABASE_URL = `sqlite:${ledger}`;
          store = undefined as unknown as Store; // opened once the service has created it
        }

        const start = async (clock?: { env: Record<string, string>; nodeArgs: string[] }) => {
          const service = spawnUtility402(["serve"], { ...env, ...clock?.env }, clock?.nodeArgs);
          cleanups.push(() => service.stop());
          await waitFor(`${base}/readyz`, service.child, service.output, 120_000);
          return service;
        };
        const first: Spawned = await start();
        if (mode !== "postgres") store = new SqliteStore(path.join(dataDir, "ledger.db"));
        cleanups.push(() => store.close());

        const rpc = (method: string, params: unknown[] = []) =>
          fetch(rpcUrl, jsonPost({ jsonrpc: "2.0", id: 1, method, params })).then((r) => r.json());
        await rpc("evm_setAutomine", [false]);
        await rpc("evm_setIntervalMining", [2]);

        const payer = createPayer(devPrivateKey(7));
        const requests = Array.from({ length: CALLS }, (_, i) => ({ before: { n: i }, after: { n: i + 1 } }));
        const payments: Record<string, string>[] = [];
        for (const request of requests) {
          payments.push(await payer.signPayment(await fetch(`${base}/v1/json-diff`, jsonPost(request))));
        }
        const keys = payments.map(paymentKeyOf);
        const calls = requests.map((request, i) =>
          fetch(`${base}/v1/json-diff`, jsonPost(request, payments[i])).then(
            (response) => response.status,
            () => "no answer" as const,
          ),
        );
        // Kill once settlements are in flight: broadcast, waiting in the pool for the next block.
        await until(
          "settlements in the transaction pool",
          async () => {
            const status = await rpc("txpool_status");
            return Number.parseInt(status.result?.pending ?? "0x0", 16) >= 5 ? true : undefined;
          },
          60_000,
        );
        first.child.kill("SIGKILL");
        const answered = (await Promise.all(calls)).filter((status) => status === 200).length;
        const killedAt = Date.now();

        // What the restart would wait for in real time has passed at once: its clock starts past every
        // lease the dead service held and past each authorization's expiry (with its clock-skew margin),
        // and so does the chain's (evm_increaseTime), so that no authorization can land after its release.
        // In self and PostgreSQL modes the settlements broadcast before the kill land first, at their own time.
        if (mode !== "local") {
          await until("the pending settlements mined", async () => {
            const status = await rpc("txpool_status");
            return Number.parseInt(status.result?.pending ?? "0x0", 16) === 0 ? true : undefined;
          });
        }
        const lastValidBefore = Math.max(...payments.map(validBeforeOf));
        const shift = Math.max(
          LEASE_TTL_MS,
          (lastValidBefore + EXPIRY_MARGIN_SECONDS + 1) * 1000 - Date.now(),
        );
        const advanceChain = async () => {
          await rpc("evm_increaseTime", [Math.ceil(shift / 1000)]);
          await rpc("evm_mine");
        };
        if (mode !== "local") await advanceChain();
        // The restart; nobody retries. The sweeper resolves every payment from the chain by itself.
        await start(shiftedClock(shift));
        if (mode === "local") {
          await advanceChain();
          await rpc("evm_setAutomine", [true]);
        }
        const unfinished = async () =>
          (await Promise.all(keys.map((key) => store.getPayment(key)))).filter(
            (record) => record && (record.state === "verified" || record.state === "held"),
          ).length;
        // The documented bound (the lease runs out, a sweep, and at worst the authorization's expiry + 30 s),
        // with a minute of slack for a loaded machine; on the shifted clock only the sweeps take real time.
        const bound =
          LEASE_TTL_MS + RECOVERY_SWEEP_MS + (MAX_TIMEOUT_SECONDS + EXPIRY_MARGIN_SECONDS) * 1000 + 60_000;
        await until(
          "every payment resolved",
          async () => ((await unfinished()) === 0 ? true : undefined),
          bound,
        );
        const resolvedInMs = Date.now() - killedAt;

        const records = await Promise.all(keys.map((key) => store.getPayment(key)));
        const settled = records.filter((record) => record?.state === "settled");
        const client = createPublicClient({ transport: http(rpcUrl) });
        await rpc("evm_mine");
        const transfers = await client.getLogs({
          address: BASE_USDC_ADDRESS,
          event: TRANSFER,
          args: { from: payer.address, to: payTo },
          fromBlock: 0n,
        });
        const onChain = transfers.reduce((sum, log) => sum + (log.args.value ?? 0n), 0n);
        expect(onChain).toBe(BigInt(settled.length) * PRICE);
        expect(new Set(transfers.map((log) => log.transactionHash))).toEqual(
          new Set(settled.map((record) => record?.txHash)),
        );
        console.log(
          `${mode}: ${answered} of ${CALLS} answered before the kill; ${settled.length} settled, ` +
            `${records.length - settled.length} released or failed; all resolved ${resolvedInMs} ms after the kill ` +
            `(the restart's clock and the chain's ${Math.round(shift / 1000)} s ahead)`,
        );

        // Each settled payment's result is ready for its retry, charged nothing more.
        const balanceOf = () =>
          client.readContract({
            address: BASE_USDC_ADDRESS,
            abi: [parseAbiItem("function balanceOf(address) view returns (uint256)")],
            functionName: "balanceOf",
            args: [payer.address],
          });
        const balance = await balanceOf();
        for (const [i, request] of requests.entries()) {
          const record = records[i];
          if (record?.state !== "settled") continue;
          const retry = await fetch(`${base}/v1/json-diff`, jsonPost(request, payments[i]));
          expect(retry.status).toBe(200);
          expect(paymentReceipt(retry)?.transaction).toBe(record.txHash);
          expect((await retry.json()).equal).toBe(false);
        }
        expect(await balanceOf()).toBe(balance);
      },
      420_000,
    );
  },
);
