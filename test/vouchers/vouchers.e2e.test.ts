/**
 * Vouchers end to end on the local chain with the official clients only: `@x402/fetch` with @x402/evm's
 * batch-settlement client scheme (registered alone, so it picks the batch-settlement entry) pays a sync
 * operation N times through one channel. The chain sees one deposit and no transfer per call; the ledger
 * has one row per delivered call; the client's own channel state follows the server's (PAYMENT-RESPONSE).
 */

import {
  decodePaymentRequiredHeader,
  decodePaymentResponseHeader,
  decodePaymentSignatureHeader,
  encodePaymentSignatureHeader,
} from "@x402/core/http";
import { toClientEvmSigner } from "@x402/evm";
import {
  BatchSettlementEvmScheme,
  computeChannelId,
  InMemoryClientChannelStorage,
  signVoucher,
} from "@x402/evm/batch-settlement/client";
import { wrapFetchWithPayment, x402Client } from "@x402/fetch";
import { createPublicClient, http } from "viem";
import { generatePrivateKey, privateKeyToAccount } from "viem/accounts";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { BATCH_SETTLEMENT_ADDRESS, batchSettlementAbi } from "../../src/chain/batch-settlement.ts";
import { devPrivateKey } from "../../src/chain/dev-accounts.ts";
import { jsonDiff } from "../../src/operations/json-diff/index.ts";
import { unitConvert } from "../../src/operations/unit-convert/index.ts";
import { openStore } from "../../src/store/open-store.ts";
import type { Store } from "../../src/store/store.ts";
import { startTestService, type TestService, usdcBalances } from "../helpers/service.ts";

const CALLS = 12;

describe("vouchers through the official @x402/fetch batch-settlement client", () => {
  let service: TestService;
  let ledger: Store;
  let balanceOf: ReturnType<typeof usdcBalances>;

  beforeAll(async () => {
    service = await startTestService({ X402_VOUCHERS: "on" }, { operations: [unitConvert, jsonDiff] });
    balanceOf = usdcBalances(service.localChain?.rpcUrl as string);
    ledger = await openStore(service.config.database);
  });
  afterAll(async () => {
    await ledger?.close();
    await service?.stop();
  });

  it(`${CALLS} paid calls through one channel: one deposit, no transfer per call, a ledger row each`, async () => {
    const rpcUrl = service.localChain?.rpcUrl as string;
    const publicClient = createPublicClient({ transport: http(rpcUrl), pollingInterval: 50 });
    const account = privateKeyToAccount(devPrivateKey(6));
    const storage = new InMemoryClientChannelStorage();
    const client = new x402Client().register(
      service.config.payment.network,
      new BatchSettlementEvmScheme(toClientEvmSigner(account, publicClient as never), { storage }),
    );
    const pay = wrapFetchWithPayment(fetch, client);
    const url = `${service.url}${unitConvert.path}`;
    const input = unitConvert.example.input;

    const unpaid = await fetch(url, jsonInit(input));
    expect(unpaid.status).toBe(402);
    const quote = decodePaymentRequiredHeader(unpaid.headers.get("payment-required") as string).accepts.find(
      (entry) => entry.scheme === "batch-settlement",
    );
    if (!quote) throw new Error("no batch-settlement entry in the 402");
    const price = BigInt(quote.amount);
    const payerBefore = await balanceOf(account.address);
    const payToBefore = await balanceOf(service.payTo);
    const blockBefore = await publicClient.getBlockNumber();

    const responses = [];
    for (let i = 0; i < CALLS; i++) {
      const answer = await pay(url, jsonInit(input));
      const body = await answer.text();
      expect(answer.status, body).toBe(200);
      responses.push(decodePaymentResponseHeader(answer.headers.get("payment-response") as string));
    }

    // The PAYMENT-RESPONSE of each call: the charge and the channel's cumulative after it.
    responses.forEach((settled, i) => {
      expect(settled).toMatchObject({ success: true, amount: quote.amount });
      expect(settled.extra).toMatchObject({
        chargedAmount: quote.amount,
        channelState: { chargedCumulativeAmount: String(price * BigInt(i + 1)) },
      });
    });
    const first = responses[0]?.extra as { channelState: { channelId: string } } | undefined;
    if (!first) throw new Error("no PAYMENT-RESPONSE");
    const channelId = first.channelState.channelId;

    // On chain: one deposit (the payer's USDC went into the channel once); payTo received nothing per call.
    const [balance, totalClaimed] = (await publicClient.readContract({
      address: BATCH_SETTLEMENT_ADDRESS,
      abi: batchSettlementAbi,
      functionName: "channels",
      args: [channelId],
    })) as [bigint, bigint];
    expect(totalClaimed).toBe(0n);
    expect(await balanceOf(account.address)).toBe(payerBefore - balance);
    expect(await balanceOf(service.payTo)).toBe(payToBefore);
    let transactions = 0;
    for (let block = blockBefore + 1n; block <= (await publicClient.getBlockNumber()); block++) {
      transactions += (await publicClient.getBlock({ blockNumber: block })).transactions.length;
    }
    expect(transactions).toBe(1);

    // The ledger: one row per delivered call, cumulative by the price; the channel charged in total.
    const charges = await ledger.vouchers.charges(channelId);
    expect(charges.map((charge) => charge.cumulative)).toEqual(
      Array.from({ length: CALLS }, (_, i) => String(price * BigInt(i + 1))),
    );
    expect(charges.every((charge) => charge.operationId === unitConvert.id && charge.door === "http")).toBe(
      true,
    );
    const channel = await ledger.vouchers.getChannel(channelId);
    expect(channel?.chargedCumulativeAmount).toBe(String(price * BigInt(CALLS)));
    expect(channel?.onchain?.balance).toBe(String(balance));
    // The client's own state agrees with the server's.
    expect((await storage.get(channelId.toLowerCase()))?.chargedCumulativeAmount).toBe(
      String(price * BigInt(CALLS)),
    );
  });

  it("a client that lost its channel state gets the corrective 402 and recovers from it, charged once", async () => {
    const { pay } = officialClient(devPrivateKey(7));
    const url = `${service.url}${unitConvert.path}`;
    const input = unitConvert.example.input;
    let channelId = "";
    let charged = 0n;
    for (let i = 0; i < 3; i++) {
      const answer = await pay(url, jsonInit(input));
      expect(answer.status).toBe(200);
      const settled = decodePaymentResponseHeader(answer.headers.get("payment-response") as string);
      const state = (
        settled.extra as { channelState: { channelId: string; chargedCumulativeAmount: string } }
      ).channelState;
      channelId = state.channelId;
      charged = BigInt(state.chargedCumulativeAmount);
    }
    const price = charged / 3n;
    // The same wallet, a fresh client: it reads the chain (nothing claimed yet) and signs a voucher at one
    // price; the service answers the corrective 402 and the client signs the next voucher from it.
    const sent: string[] = [];
    const recording: typeof fetch = async (request, init) => {
      const header = paymentSignatureOf(request, init);
      if (header) sent.push(header);
      return fetch(request, init);
    };
    const fresh = officialClient(devPrivateKey(7));
    const answer = await wrapFetchWithPayment(recording, fresh.client)(url, jsonInit(input));
    expect(answer.status, await answer.clone().text()).toBe(200);
    const ceilings = sent.map(
      (header) =>
        (decodePaymentSignatureHeader(header).payload as { voucher: { maxClaimableAmount: string } }).voucher
          .maxClaimableAmount,
    );
    expect(ceilings).toEqual([String(price), String(charged + price)]);
    const channel = await ledger.vouchers.getChannel(channelId);
    expect(channel?.chargedCumulativeAmount).toBe(String(charged + price));
    expect(await ledger.vouchers.charges(channelId)).toHaveLength(4);
  });

  it("refuses a voucher signed by another key and a voucher on a channel never funded, charging nothing and keeping no row", async () => {
    const { pay, storage, publicClient } = officialClient(devPrivateKey(8));
    const url = `${service.url}${unitConvert.path}`;
    const input = unitConvert.example.input;
    expect((await pay(url, jsonInit(input))).status).toBe(200);

    // The client's next payment, its voucher re-signed by a stranger's key.
    const sent: string[] = [];
    const capture: typeof fetch = async (request, init) => {
      const header = paymentSignatureOf(request, init);
      if (header) sent.push(header);
      return new Response(null, { status: 599 });
    };
    const { client } = officialClient(devPrivateKey(8), storage);
    await wrapFetchWithPayment(async (request, init) => {
      const header = paymentSignatureOf(request, init);
      return header ? capture(request, init) : fetch(request, init);
    }, client)(url, jsonInit(input));
    const payment = decodePaymentSignatureHeader(sent[0] as string);
    const voucher = (payment.payload as { voucher: { channelId: `0x${string}`; maxClaimableAmount: string } })
      .voucher;
    const stranger = toClientEvmSigner(privateKeyToAccount(generatePrivateKey()), publicClient as never);
    const forged = await signVoucher(
      stranger,
      voucher.channelId,
      voucher.maxClaimableAmount,
      payment.accepted.network,
    );
    const chargedBefore = (await ledger.vouchers.getChannel(voucher.channelId.toLowerCase()))
      ?.chargedCumulativeAmount;
    const refused = await fetch(url, {
      ...jsonInit(input),
      headers: {
        "content-type": "application/json",
        "payment-signature": encodePaymentSignatureHeader({
          ...payment,
          payload: { ...payment.payload, voucher: { ...voucher, signature: forged.signature } },
        }),
      },
    });
    expect(refused.status).toBe(402);
    expect(((await refused.json()) as { reason: string }).reason).toBe(
      "invalid_batch_settlement_evm_voucher_signature",
    );
    expect((await ledger.vouchers.getChannel(voucher.channelId.toLowerCase()))?.chargedCumulativeAmount).toBe(
      chargedBefore,
    );

    // A voucher on a channel of another salt, never deposited to: the facilitator finds no balance; no row is kept.
    const salt = `0x${"ab".repeat(32)}` as const;
    const unfunded = officialClient(devPrivateKey(8), undefined, salt);
    const config = unfunded.scheme.buildChannelConfig(payment.accepted);
    const id = computeChannelId(config, payment.accepted.network).toLowerCase();
    await unfunded.storage.set(id, { chargedCumulativeAmount: "0", balance: "100000000", totalClaimed: "0" });
    const answer = await unfunded.pay(url, jsonInit(input));
    expect(answer.status).toBe(402);
    expect(await ledger.vouchers.getChannel(id)).toBeUndefined();
  });

  /** The official client: @x402/fetch with the batch-settlement scheme alone, on its own channel storage. */
  function officialClient(
    privateKey: `0x${string}`,
    storage = new InMemoryClientChannelStorage(),
    salt?: `0x${string}`,
  ) {
    const rpcUrl = service.localChain?.rpcUrl as string;
    const publicClient = createPublicClient({ transport: http(rpcUrl), pollingInterval: 50 });
    const account = privateKeyToAccount(privateKey);
    const scheme = new BatchSettlementEvmScheme(toClientEvmSigner(account, publicClient as never), {
      storage,
      ...(salt ? { salt } : {}),
    });
    const client = new x402Client().register(service.config.payment.network, scheme);
    return { pay: wrapFetchWithPayment(fetch, client), client, scheme, storage, publicClient, account };
  }
});

describe("the claimer: vouchers answered are claimed and settled to payTo", () => {
  let service: TestService;
  let ledger: Store;
  afterAll(async () => {
    await ledger?.close();
    await service?.stop();
  });

  it("payTo's balance rises by exactly the sum of the delivered charges; the chain shows them claimed", async () => {
    service = await startTestService(
      { X402_VOUCHERS: "on", X402_VOUCHER_CLAIM_INTERVAL_MS: "1000" },
      { operations: [unitConvert] },
    );
    ledger = await openStore(service.config.database);
    const rpcUrl = service.localChain?.rpcUrl as string;
    const balanceOf = usdcBalances(rpcUrl);
    const publicClient = createPublicClient({ transport: http(rpcUrl), pollingInterval: 50 });
    const account = privateKeyToAccount(devPrivateKey(5));
    const client = new x402Client().register(
      service.config.payment.network,
      new BatchSettlementEvmScheme(toClientEvmSigner(account, publicClient as never), {
        storage: new InMemoryClientChannelStorage(),
      }),
    );
    const pay = wrapFetchWithPayment(fetch, client);
    const payToBefore = await balanceOf(service.payTo);
    const url = `${service.url}${unitConvert.path}`;
    let channelId = "";
    for (let i = 0; i < 5; i++) {
      const answer = await pay(url, jsonInit(unitConvert.example.input));
      expect(answer.status).toBe(200);
      const settled = decodePaymentResponseHeader(answer.headers.get("payment-response") as string);
      channelId = (settled.extra as { channelState: { channelId: string } }).channelState.channelId;
    }
    const charges = await ledger.vouchers.charges(channelId);
    const delivered = charges.reduce((sum, charge) => sum + BigInt(charge.amount), 0n);
    expect(charges).toHaveLength(5);
    // The claimer's timer (1 s) claims and settles, maybe in more than one round (one may have run between
    // the calls): wait until all of it arrived, never past it (a hang guard, not a timing assertion).
    for (let tries = 0; (await balanceOf(service.payTo)) < payToBefore + delivered && tries < 600; tries++) {
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    expect(await balanceOf(service.payTo)).toBe(payToBefore + delivered);
    const [, totalClaimed] = (await publicClient.readContract({
      address: BATCH_SETTLEMENT_ADDRESS,
      abi: batchSettlementAbi,
      functionName: "channels",
      args: [channelId as `0x${string}`],
    })) as [bigint, bigint];
    expect(totalClaimed).toBe(delivered);
  });
});

/** The PAYMENT-SIGNATURE of a request as @x402/fetch sends it (a Request) or as a test does (init). */
const paymentSignatureOf = (request: Parameters<typeof fetch>[0], init?: RequestInit) =>
  (typeof request === "object" && "headers" in request ? request.headers : new Headers(init?.headers)).get(
    "payment-signature",
  );

const jsonInit = (body: unknown): RequestInit => ({
  method: "POST",
  headers: { "content-type": "application/json" },
  body: JSON.stringify(body),
});
