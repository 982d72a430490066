import pino from "pino";
import { createPublicClient, parseAbiItem, http as viemHttp } from "viem";
import { privateKeyToAccount } from "viem/accounts";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { devAccounts, devPrivateKey } from "../../src/chain/dev-accounts.ts";
import { type LocalChain, startLocalChain } from "../../src/chain/local-chain.ts";
import { createPayer, type Payer, paymentReceipt } from "../../src/client/paying-fetch.ts";
import { BASE_USDC_ADDRESS } from "../../src/config.ts";
import { csvCleanup } from "../../src/operations/csv-cleanup/index.ts";
import { openStore } from "../../src/store/open-store.ts";
import type { SettlementTransactionRecord } from "../../src/store/store.ts";
import { chainRpc } from "../helpers/payment-faults.ts";
import { until } from "../helpers/processes.ts";
import { freePort, jsonPost, startTestService, type TestService } from "../helpers/service.ts";

const TRANSFER = parseAbiItem("event Transfer(address indexed from, address indexed to, uint256 value)");

/**
 * The settler's nonces after the chain lost its transactions (a node restart, a mempool eviction, a
 * reorg, a chain restored from an earlier state), in self mode on a real anvil: no settlement may
 * wait behind the missing nonces. The settler finds the gap by itself and sends the lost transactions
 * again (the same signed bytes: the same hashes the ledger holds); the ledger records what was lost
 * and what became of it; what can no longer land is marked, counted and never left `settled` silently.
 * Before the fix every paid call after the gap waited for its receipt until the settlement timeout and
 * answered 503, until the gap was filled by hand.
 */
describe("settlement after the chain lost the settler's transactions", () => {
  let chain: LocalChain;
  let service: TestService;
  let client: ReturnType<typeof createPublicClient>;
  const payers = [2, 3, 4, 5].map((i) => createPayer(devPrivateKey(i)));
  const settler = privateKeyToAccount(devPrivateKey(0)).address;
  const payTo = devAccounts().payTo.address;
  let calls = 0;

  const rpc = (method: string, params: unknown[] = []) => chainRpc(chain.rpcUrl, method, params);

  /** A paid csv-cleanup call, signed by the next payer. */
  const paidCall = async () => {
    const url = `${service.url}/v1/csv-cleanup`;
    const body = { rows: [{ id: `gap-${++calls}` }], keyColumns: ["id"] };
    const payer = payers[calls % payers.length] as Payer;
    const headers = await payer.signPayment(await fetch(url, jsonPost(body)));
    return fetch(url, jsonPost(body, headers));
  };

  const withStore = async <T>(read: (store: Awaited<ReturnType<typeof openStore>>) => Promise<T>) => {
    const store = await openStore(service.config.database);
    try {
      return await read(store);
    } finally {
      await store.close();
    }
  };
  const journal = () => withStore((store) => store.settlementTransactions());
  const byHash = (records: SettlementTransactionRecord[], hash: string) =>
    records.find((record) => record.txHash === hash);

  /** What the ledger says was settled: in total, and the part whose transfer the chain does not hold. */
  const ledgerSums = () =>
    withStore(async (store) => {
      const settled = (await store.revenueByOperationAndDay()).reduce(
        (sum, row) => sum + BigInt(row.atomicAmount),
        0n,
      );
      const unbacked = (await store.settlementTransactions())
        .filter(
          (record) =>
            record.paymentState === "settled" && (record.state === "reverted" || record.state === "lost"),
        )
        .reduce((sum, record) => sum + BigInt(record.amount ?? 0), 0n);
      return { settled, unbacked };
    });

  /** Every USDC transfer to payTo on the chain as it stands (this chain's payTo is paid by this service only). */
  const onChainToPayTo = async () => {
    const logs = await client.getLogs({
      address: BASE_USDC_ADDRESS,
      event: TRANSFER,
      args: { to: payTo },
      fromBlock: 0n,
    });
    return logs.reduce((sum, log) => sum + (log.args.value ?? 0n), 0n);
  };
  const pendingNonce = () => client.getTransactionCount({ address: settler, blockTag: "pending" });

  beforeAll(async () => {
    chain = await startLocalChain({ port: await freePort(), log: pino({ level: "silent" }) });
    client = createPublicClient({ transport: viemHttp(chain.rpcUrl) });
    service = await startTestService(
      {
        PAYMENT_MODE: "self",
        X402_SETTLER_PRIVATE_KEY: devPrivateKey(0),
        RPC_URL: chain.rpcUrl,
        X402_PAY_TO: payTo,
        // Long enough for a repair on a loaded machine, short enough that waiting it out shows as a 503.
        X402_SETTLEMENT_TIMEOUT_MS: "25000",
      },
      { operations: [csvCleanup] },
    );
    // A first settlement: the settler's nonce is known to the service.
    expect((await paidCall()).status).toBe(200);
  }, 180_000);

  afterAll(async () => {
    await service?.stop();
    await chain?.stop();
  });

  it("sends again the settlements dropped from the mempool, and later calls settle", async () => {
    const before = await pendingNonce();
    await rpc("evm_setAutomine", [false]);
    const inFlight = [paidCall(), paidCall(), paidCall(), paidCall()];
    // All four broadcast and waiting in the mempool; then the node loses them.
    await until("four settlements in the mempool", async () => {
      const status = (await rpc("txpool_status")) as { pending: string };
      return Number(status.pending) >= 4 ? true : undefined;
    });
    await rpc("anvil_dropAllTransactions");
    await rpc("evm_setAutomine", [true]);
    expect(await pendingNonce()).toBe(before);

    const responses = await Promise.all(inFlight);
    expect(responses.map((response) => response.status)).toEqual([200, 200, 200, 200]);
    const hashes = responses.map((response) => paymentReceipt(response)?.transaction as string);
    // Settled with the very transactions first sent: each was dropped, sent again and landed.
    const records = await journal();
    for (const hash of hashes) {
      expect(byHash(records, hash)).toMatchObject({ state: "landed", kind: "call", paymentState: "settled" });
      expect(byHash(records, hash)?.resent).toBeGreaterThanOrEqual(1);
      expect((await client.getTransactionReceipt({ hash: hash as `0x${string}` })).status).toBe("success");
    }
    // Nothing waits behind a gap any more.
    const after = await Promise.all([paidCall(), paidCall()]);
    expect(after.map((response) => response.status)).toEqual([200, 200]);
    expect(await pendingNonce()).toBe(before + 6);
    const { settled, unbacked } = await ledgerSums();
    expect(unbacked).toBe(0n);
    expect(await onChainToPayTo()).toBe(settled);
  }, 180_000);

  it("makes settled payments true again when the chain is restored to a state before them", async () => {
    const snapshot = await rpc("evm_snapshot");
    const responses = await Promise.all([paidCall(), paidCall(), paidCall()]);
    expect(responses.map((response) => response.status)).toEqual([200, 200, 200]);
    const hashes = responses.map((response) => paymentReceipt(response)?.transaction as `0x${string}`);
    const beforeRestore = await onChainToPayTo();
    // The chain goes back (a restart from an older state, a reorg): three settled transfers vanish.
    await rpc("evm_revert", [snapshot]);
    expect(
      await client.getTransactionReceipt({ hash: hashes[0] as `0x${string}` }).catch(() => null),
    ).toBeNull();

    // Without anyone's help the same transactions land again, and the ledger says what happened.
    const records = await until(
      "the vanished settlements to land again",
      async () => {
        const recorded = await journal();
        return hashes.every((hash) => byHash(recorded, hash)?.state === "landed") ? recorded : undefined;
      },
      60_000,
    );
    for (const hash of hashes)
      expect(byHash(records, hash)).toMatchObject({ paymentState: "settled", resent: 1 });
    expect(await onChainToPayTo()).toBe(beforeRestore);
    expect((await paidCall()).status).toBe(200);
    const { settled, unbacked } = await ledgerSums();
    expect(unbacked).toBe(0n);
    expect(await onChainToPayTo()).toBe(settled);
  }, 180_000);

  // Last: the chain's clock moves a week ahead, past every authorization signed from now on.
  it("marks and counts a settled payment whose vanished transfer can no longer land", async () => {
    const snapshot = await rpc("evm_snapshot");
    const response = await paidCall();
    expect(response.status).toBe(200);
    const hash = paymentReceipt(response)?.transaction as `0x${string}`;
    // Restored to before it, a week later: the authorization has expired, its transfer cannot happen.
    await rpc("evm_revert", [snapshot]);
    await rpc("evm_increaseTime", [7 * 24 * 3600]);

    const record = await until(
      "the vanished settlement to be marked",
      async () => {
        const found = byHash(await journal(), hash);
        return found && found.state !== "dropped" && found.state !== "resent" ? found : undefined;
      },
      60_000,
    );
    // The ledger keeps the payment, marked: its transaction ran again and reverted (no transfer).
    expect(record).toMatchObject({ state: "reverted", paymentState: "settled", operationId: "csv-cleanup" });
    const metrics = await (await fetch(`${service.url}/metrics`)).text();
    expect(metrics).toMatch(/utility402_settlement_transactions_lost_total\{event="reverted"\} 1\b/);
    // The chain holds exactly what the ledger says was settled, less what is marked unbacked.
    const { settled, unbacked } = await ledgerSums();
    expect(unbacked).toBe(BigInt(record.amount as string));
    expect(await onChainToPayTo()).toBe(settled - unbacked);
    // The reverted transaction took its nonce: no gap is left behind.
    const mined = await client.getTransactionCount({ address: settler, blockTag: "latest" });
    expect(await pendingNonce()).toBe(mined);
  }, 180_000);
});
