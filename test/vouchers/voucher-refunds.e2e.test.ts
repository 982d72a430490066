/**
 * Cooperative refunds (x402 batch-settlement `refund` payloads) on the local chain, asked by the official
 * client itself: @x402/evm's BatchSettlementEvmScheme.refund(url), which probes the URL with a GET, signs
 * the zero-charge voucher and reads the PAYMENT-RESPONSE. Over HTTP it asks at a paid GET route (a
 * product's download: any route of the channel will do, the channel does not depend on the route); over
 * MCP through a fetch that carries the same two requests as tool calls (the x402 MCP transport).
 * The payer gets back exactly the rest (deposit − charged), a second refund moves nothing, a refund while a
 * call holds the channel waits for it, and the channel is reused after a refund.
 */

import fs from "node:fs";
import type { Client } from "@modelcontextprotocol/sdk/client/index.js";
import {
  decodePaymentResponseHeader,
  decodePaymentSignatureHeader,
  encodePaymentRequiredHeader,
  encodePaymentResponseHeader,
} from "@x402/core/http";
import { toClientEvmSigner } from "@x402/evm";
import {
  BatchSettlementEvmScheme,
  InMemoryClientChannelStorage,
  updateChannelFromSettle,
} from "@x402/evm/batch-settlement/client";
import { wrapFetchWithPayment, x402Client } from "@x402/fetch";
import { createPublicClient, http } from "viem";
import { privateKeyToAccount } from "viem/accounts";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { BATCH_SETTLEMENT_ADDRESS, batchSettlementAbi } from "../../src/chain/batch-settlement.ts";
import { devPrivateKey } from "../../src/chain/dev-accounts.ts";
import { unitConvert } from "../../src/operations/unit-convert/index.ts";
import { openStore } from "../../src/store/open-store.ts";
import type { Store } from "../../src/store/store.ts";
import { buildOneRelease } from "../helpers/one-release.ts";
import { jsonPost, startTestService, type TestService, usdcBalances } from "../helpers/service.ts";
import { callTool, connectMcp, termsOf } from "../mcp/paying-mcp-client.ts";

const PRODUCT = "csv-json-quality-toolkit";

describe("cooperative refunds through the official batch-settlement client", () => {
  let service: TestService;
  let ledger: Store;
  let work: string;
  let productUrl: string;
  let mcp: Client;

  beforeAll(async () => {
    const built = await buildOneRelease(PRODUCT, "utility402-refunds-");
    work = built.work;
    service = await startTestService(
      { X402_VOUCHERS: "on", RELEASES_DIR: built.releasesDir },
      { operations: [unitConvert, built.product] },
    );
    productUrl = `${service.url}${built.product.path}`;
    ledger = await openStore(service.config.database);
    mcp = await connectMcp(service.url);
  });
  afterAll(async () => {
    await mcp?.close();
    await ledger?.close();
    await service?.stop();
    if (work) fs.rmSync(work, { recursive: true, force: true });
  });

  function payer(key: number) {
    const rpcUrl = service.localChain?.rpcUrl as string;
    const publicClient = createPublicClient({ transport: http(rpcUrl), pollingInterval: 50 });
    const account = privateKeyToAccount(devPrivateKey(key));
    const storage = new InMemoryClientChannelStorage();
    const scheme = new BatchSettlementEvmScheme(toClientEvmSigner(account, publicClient as never), {
      storage,
    });
    const client = new x402Client().register(service.config.payment.network, scheme);
    const pay = wrapFetchWithPayment(fetch, client);
    const balanceOf = usdcBalances(rpcUrl);
    const channelOnChain = async (channelId: string) => {
      const [balance, totalClaimed] = (await publicClient.readContract({
        address: BATCH_SETTLEMENT_ADDRESS,
        abi: batchSettlementAbi,
        functionName: "channels",
        args: [channelId as `0x${string}`],
      })) as [bigint, bigint];
      return { balance, totalClaimed };
    };
    /** `calls` paid unit conversions; the channel id and the price. */
    const convert = async (calls: number) => {
      let channelId = "";
      let price = 0n;
      for (let i = 0; i < calls; i++) {
        const answer = await pay(`${service.url}${unitConvert.path}`, jsonPost(unitConvert.example.input));
        expect(answer.status, await answer.clone().text()).toBe(200);
        const settled = decodePaymentResponseHeader(answer.headers.get("payment-response") as string);
        channelId = (settled.extra as { channelState: { channelId: string } }).channelState.channelId;
        price = BigInt(settled.extra?.chargedAmount as string);
      }
      return { channelId, price };
    };
    return { account, scheme, storage, balanceOf, channelOnChain, convert, client };
  }

  it("a full refund returns exactly deposit − charged; a second one moves nothing; the channel is reused after", async () => {
    const { account, scheme, balanceOf, channelOnChain, convert } = payer(5);
    const before = await balanceOf(account.address);
    const { channelId, price } = await convert(3);
    const charged = 3n * price;
    const deposited = (await channelOnChain(channelId)).balance;
    expect(await balanceOf(account.address)).toBe(before - deposited);

    // The official client's refund, at another route of the same channel (a product's download URL).
    const sent: string[] = [];
    const recording: typeof fetch = async (request, init) => {
      const header = new Headers(init?.headers).get("payment-signature");
      if (header) sent.push(header);
      return fetch(request, init);
    };
    const refunded = await scheme.refund(productUrl, { fetch: recording });
    expect(refunded).toMatchObject({ success: true, amount: String(deposited - charged) });
    // The payer is out of exactly what it was charged; the chain claimed it in the refund's transaction.
    expect(await balanceOf(account.address)).toBe(before - charged);
    expect(await channelOnChain(channelId)).toEqual({ balance: charged, totalClaimed: charged });
    const refund = decodePaymentSignatureHeader(sent[0] as string).payload as {
      type: string;
      voucher: { maxClaimableAmount: string };
    };
    expect(refund).toMatchObject({ type: "refund", voucher: { maxClaimableAmount: String(charged) } });
    const channel = await ledger.vouchers.getChannel(channelId);
    expect(channel?.chargedCumulativeAmount).toBe(String(charged));
    expect(channel?.onchain).toMatchObject({ balance: String(charged), totalClaimed: String(charged) });
    expect(await ledger.vouchers.charges(channelId)).toHaveLength(3);

    // The same refund payload again: nothing left beyond what was charged; nothing moves.
    const again = await fetch(productUrl, { headers: { "payment-signature": sent[0] as string } });
    expect(again.status).toBe(402);
    expect(((await again.json()) as { reason: string }).reason).toBe(
      "invalid_batch_settlement_evm_refund_no_balance",
    );
    expect(await balanceOf(account.address)).toBe(before - charged);
    // The client knows its channel is empty and does not ask.
    await expect(scheme.refund(productUrl)).rejects.toThrow(/no remaining balance/);

    // Paying again deposits into the same channel and follows the charged amount.
    await convert(1);
    expect((await ledger.vouchers.getChannel(channelId))?.chargedCumulativeAmount).toBe(
      String(charged + price),
    );
    expect(await ledger.vouchers.charges(channelId)).toHaveLength(4);
  });

  it("a partial refund returns exactly the amount asked; the channel keeps serving vouchers", async () => {
    const { account, scheme, balanceOf, channelOnChain, convert } = payer(6);
    const { channelId, price } = await convert(2);
    const deposited = (await channelOnChain(channelId)).balance;
    const beforeRefund = await balanceOf(account.address);
    const asked = (deposited - 2n * price) / 2n;
    const refunded = await scheme.refund(productUrl, { amount: String(asked) });
    expect(refunded).toMatchObject({ success: true, amount: String(asked) });
    expect(await balanceOf(account.address)).toBe(beforeRefund + asked);
    expect(await channelOnChain(channelId)).toEqual({ balance: deposited - asked, totalClaimed: 2n * price });
    await convert(2);
    expect((await ledger.vouchers.getChannel(channelId))?.chargedCumulativeAmount).toBe(String(4n * price));
    // Asking for more than the rest gets exactly the rest: the payer is out of exactly the four charges.
    const rest = await scheme.refund(productUrl, { amount: String(deposited) });
    expect(rest).toMatchObject({ success: true, amount: String(deposited - asked - 4n * price) });
    expect(await balanceOf(account.address)).toBe(beforeRefund + deposited - 4n * price);
  });

  it("a refund while a call holds the channel gets channel_busy and nothing moves; after the call it refunds", async () => {
    const { account, scheme, balanceOf, channelOnChain, convert } = payer(7);
    const { channelId, price } = await convert(1);
    const deposited = (await channelOnChain(channelId)).balance;
    // A call in flight (here or at another instance) holds the channel's lease until it commits.
    const inFlight = "a-call-in-flight";
    const held = await ledger.vouchers.takeChannel({
      channelId,
      owner: inFlight,
      now: Date.now(),
      leaseUntil: Date.now() + 600_000,
    });
    expect(held?.kind).toBe("begun");
    const before = await balanceOf(account.address);
    await expect(scheme.refund(productUrl)).rejects.toThrow(/channel_busy/);
    expect(await balanceOf(account.address)).toBe(before);
    expect((await channelOnChain(channelId)).balance).toBe(deposited);
    await ledger.vouchers.releaseCall(channelId, inFlight);
    const refunded = await scheme.refund(productUrl);
    expect(refunded).toMatchObject({ success: true, amount: String(deposited - price) });
    expect(await balanceOf(account.address)).toBe(before + deposited - price);
  });

  it("a refund through the MCP door: the same client, its two requests carried as tool calls", async () => {
    const { account, scheme, storage, balanceOf, channelOnChain, client } = payer(8);
    const args = unitConvert.example.input as Record<string, unknown>;
    const payment = await client.createPaymentPayload(termsOf(await callTool(mcp, unitConvert.id, args)));
    const paid = await callTool(mcp, unitConvert.id, args, payment);
    expect(paid.isError, JSON.stringify(paid).slice(0, 300)).toBeFalsy();
    const receipt = paid._meta?.["x402/payment-response"] as {
      extra: { chargedAmount: string; channelState: { channelId: string; chargedCumulativeAmount: string } };
    };
    const channelId = receipt.extra.channelState.channelId;
    const price = BigInt(payment.accepted.amount);
    // The client's state follows the receipt as its HTTP hook does with PAYMENT-RESPONSE.
    await updateChannelFromSettle(storage, {
      server: {
        chargedAmount: receipt.extra.chargedAmount,
        chargedCumulativeAmount: receipt.extra.channelState.chargedCumulativeAmount,
      },
      local: {
        channelId: channelId as `0x${string}`,
        requestAmount: payment.accepted.amount,
        depositAmount: (payment.payload as { deposit: { amount: string } }).deposit.amount,
      },
    });
    const deposited = (await channelOnChain(channelId)).balance;
    const before = await balanceOf(account.address);
    const refunded = await scheme.refund(`${service.url}/mcp-tool/${unitConvert.id}`, {
      fetch: mcpFetch(mcp, unitConvert.id, args),
    });
    expect(refunded).toMatchObject({ success: true, amount: String(deposited - price) });
    expect(await balanceOf(account.address)).toBe(before + deposited - price);
    expect(await ledger.vouchers.charges(channelId)).toHaveLength(1);
  });
});

/**
 * A fetch for the official client that carries its requests as MCP tool calls (the x402 MCP transport):
 * no PAYMENT-SIGNATURE → the unpaid call's terms as a 402 with PAYMENT-REQUIRED; with one → the call with
 * the payment in `_meta["x402/payment"]`, its receipt as PAYMENT-RESPONSE (or its 402 again).
 */
function mcpFetch(mcp: Client, tool: string, args: Record<string, unknown>): typeof fetch {
  return async (_request, init) => {
    const header = new Headers(init?.headers).get("payment-signature");
    const result = await callTool(mcp, tool, args, header ? decodePaymentSignatureHeader(header) : undefined);
    const receipt = (result._meta?.["x402/payment-response"] ??
      result.structuredContent?.["x402/payment-response"]) as Parameters<
      typeof encodePaymentResponseHeader
    >[0];
    const headers = new Headers(receipt ? { "payment-response": encodePaymentResponseHeader(receipt) } : {});
    if (!result.isError)
      return new Response(JSON.stringify(result.structuredContent), { status: 200, headers });
    headers.set("payment-required", encodePaymentRequiredHeader(termsOf(result)));
    return new Response(JSON.stringify(result.structuredContent), { status: 402, headers });
  };
}
