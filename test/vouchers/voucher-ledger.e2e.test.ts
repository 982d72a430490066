/**
 * `utility402 ledger` per voucher channel, run as the operator runs it (its own process, the service's
 * store and chain): charged (the ledger), claimed and settled (the chain), and at risk (charged, not
 * claimed) with the payer's withdrawal deadline once one is initiated on chain. The channel goes through
 * the states a real one does: paid by vouchers (all at risk), a withdrawal initiated by the payer (the
 * deadline shows), a cooperative refund (claims everything charged: nothing at risk, claimed but not
 * settled yet), a settle to payTo (settled). Without the chain the report falls back to the store's mirror.
 */

import { execFile } from "node:child_process";
import { promisify } from "node:util";
import { decodePaymentResponseHeader } from "@x402/core/http";
import { toClientEvmSigner } from "@x402/evm";
import { BatchSettlementEvmScheme, InMemoryClientChannelStorage } from "@x402/evm/batch-settlement/client";
import { wrapFetchWithPayment, x402Client } from "@x402/fetch";
import { createPublicClient, createWalletClient, getAddress, http } from "viem";
import { privateKeyToAccount } from "viem/accounts";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { BATCH_SETTLEMENT_ADDRESS, batchSettlementAbi } from "../../src/chain/batch-settlement.ts";
import { devPrivateKey } from "../../src/chain/dev-accounts.ts";
import { BASE_USDC_ADDRESS } from "../../src/config.ts";
import { unitConvert } from "../../src/operations/unit-convert/index.ts";
import {
  type ChannelLedgerRow,
  formatChannelLedger,
  readChannelLedger,
} from "../../src/payments/ledger/voucher-ledger.ts";
import { openStore } from "../../src/store/open-store.ts";
import type { Store } from "../../src/store/store.ts";
import { buildOneRelease } from "../helpers/one-release.ts";
import { BIN, baseEnv } from "../helpers/processes.ts";
import { databaseUrlOf, jsonPost, startTestService, type TestService } from "../helpers/service.ts";

const run = promisify(execFile);

describe("utility402 ledger: each voucher channel's charged, claimed, settled and at risk", () => {
  let service: TestService;
  let ledger: Store;
  let work: string;
  let productUrl: string;

  beforeAll(async () => {
    const built = await buildOneRelease("csv-json-quality-toolkit", "utility402-voucher-ledger-");
    work = built.work;
    service = await startTestService(
      { X402_VOUCHERS: "on", RELEASES_DIR: built.releasesDir },
      { operations: [unitConvert, built.product] },
    );
    productUrl = `${service.url}${built.product.path}`;
    ledger = await openStore(service.config.database);
  });
  afterAll(async () => {
    await ledger?.close();
    await service?.stop();
    const { rmSync } = await import("node:fs");
    if (work) rmSync(work, { recursive: true, force: true });
  });

  /** The operator's command against this service's store and chain (a process start costs seconds: twice only). */
  async function ledgerCommand(args: string[]) {
    const env = {
      ...baseEnv,
      DATA_DIR: service.dataDir,
      DATABASE_URL: databaseUrlOf(service.config),
      LOCAL_CHAIN_PORT: String(service.config.localChain.port),
      LOCAL_CHAIN_STATE: "none",
    };
    return (await run(process.execPath, [BIN, "ledger", ...args], { env })).stdout;
  }
  /** What the command reports, read in this process between the steps; the chain at `rpcUrl`. */
  const report = async (rpcUrl = service.localChain?.rpcUrl) =>
    readChannelLedger(await ledger.vouchers.channels(), rpcUrl);

  it("follows one channel through vouchers, a withdrawal, a refund and a settle", async () => {
    const rpcUrl = service.localChain?.rpcUrl as string;
    const publicClient = createPublicClient({ transport: http(rpcUrl), pollingInterval: 50 });
    const account = privateKeyToAccount(devPrivateKey(5));
    const scheme = new BatchSettlementEvmScheme(toClientEvmSigner(account, publicClient as never), {
      storage: new InMemoryClientChannelStorage(),
    });
    const pay = wrapFetchWithPayment(
      fetch,
      new x402Client().register(service.config.payment.network, scheme),
    );
    let channelId = "";
    let price = 0n;
    for (let i = 0; i < 3; i++) {
      const answer = await pay(`${service.url}${unitConvert.path}`, jsonPost(unitConvert.example.input));
      expect(answer.status).toBe(200);
      const settled = decodePaymentResponseHeader(answer.headers.get("payment-response") as string);
      channelId = (settled.extra as { channelState: { channelId: string } }).channelState.channelId;
      price = BigInt(settled.extra?.chargedAmount as string);
    }
    const charged = String(3n * price);
    const row = async (rpcUrl?: string) =>
      (await report(rpcUrl)).find((entry) => entry.channelId === channelId.toLowerCase());

    // Paid by vouchers, nothing claimed: all of it at risk, no withdrawal.
    expect(await row()).toEqual({
      channelId: channelId.toLowerCase(),
      payer: account.address.toLowerCase(),
      receiver: service.payTo.toLowerCase(),
      charged,
      claimed: "0",
      settled: "0",
      atRisk: charged,
      withdrawDeadline: null,
      source: "chain",
    });
    expect(formatChannelLedger(await report())).toMatch(
      new RegExp(
        `${channelId.toLowerCase()}\\s+${account.address.toLowerCase()}\\s+0\\.030000\\s+0\\.000000\\s+0\\.000000\\s+0\\.030000\\s+-`,
      ),
    );

    // The payer initiates a timed withdrawal: the deadline (initiation + withdrawDelay) shows.
    const stored = await ledger.vouchers.getChannel(channelId.toLowerCase());
    const config = stored?.config as NonNullable<typeof stored>["config"];
    const wallet = createWalletClient({ account, transport: http(rpcUrl) });
    const contractConfig = {
      payer: getAddress(config.payer),
      payerAuthorizer: getAddress(config.payerAuthorizer),
      receiver: getAddress(config.receiver),
      receiverAuthorizer: getAddress(config.receiverAuthorizer),
      token: getAddress(config.token),
      withdrawDelay: config.withdrawDelay,
      salt: config.salt as `0x${string}`,
    };
    const initiated = await publicClient.waitForTransactionReceipt({
      hash: await wallet.writeContract({
        chain: null,
        address: BATCH_SETTLEMENT_ADDRESS,
        abi: batchSettlementAbi,
        functionName: "initiateWithdraw",
        args: [contractConfig, 1n],
      }),
    });
    const block = await publicClient.getBlock({ blockNumber: initiated.blockNumber });
    const deadline = new Date((Number(block.timestamp) + config.withdrawDelay) * 1000).toISOString();
    // (A claimer that claims at once on a withdrawal moves at risk to claimed: their sum stays what was charged.)
    const withdrawing = await row();
    expect(withdrawing).toMatchObject({ charged, withdrawDeadline: deadline });
    expect(BigInt(withdrawing?.claimed ?? "") + BigInt(withdrawing?.atRisk ?? "")).toBe(3n * price);
    const text = await ledgerCommand([]);
    expect(text).toContain("Voucher channels");
    expect(text).toContain(deadline);

    // A cooperative refund claims everything charged: nothing at risk; claimed, not yet settled to payTo.
    expect(await scheme.refund(productUrl)).toMatchObject({ success: true });
    expect(await row()).toMatchObject({ charged, claimed: charged, settled: null, atRisk: "0" });

    // Anyone may settle the receiver's claims to it: now settled.
    await publicClient.waitForTransactionReceipt({
      hash: await wallet.writeContract({
        chain: null,
        address: BATCH_SETTLEMENT_ADDRESS,
        abi: batchSettlementAbi,
        functionName: "settle",
        args: [service.payTo, BASE_USDC_ADDRESS],
      }),
    });
    const settledRow = await row();
    expect(settledRow).toMatchObject({ charged, claimed: charged, settled: charged, atRisk: "0" });
    const json = JSON.parse(await ledgerCommand(["--channels", "--json"])) as ChannelLedgerRow[];
    expect(json.find((entry) => entry.channelId === channelId.toLowerCase())).toEqual(settledRow);

    // No chain where it looks: the store's last mirror (the refund's), and the report says so.
    const noChain = "http://127.0.0.1:1";
    expect(await row(noChain)).toMatchObject({
      charged,
      claimed: charged,
      settled: null,
      atRisk: "0",
      source: "store",
    });
    expect(formatChannelLedger(await report(noChain))).toContain("as last mirrored in the store");
  });
});
