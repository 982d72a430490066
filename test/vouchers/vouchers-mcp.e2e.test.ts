/**
 * Vouchers through the MCP door: the official MCP SDK client calls a paid tool, the payment built by
 * @x402/core's x402Client with @x402/evm's batch-settlement client scheme from the tool's terms; the
 * client's channel state follows each result's `_meta["x402/payment-response"]` through the official
 * updateChannelFromSettle (what its HTTP hook does with PAYMENT-RESPONSE).
 */

import type { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { x402Client } from "@x402/core/client";
import { toClientEvmSigner } from "@x402/evm";
import {
  BatchSettlementEvmScheme,
  InMemoryClientChannelStorage,
  updateChannelFromSettle,
} from "@x402/evm/batch-settlement/client";
import { createPublicClient, http } from "viem";
import { privateKeyToAccount } from "viem/accounts";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { devPrivateKey } from "../../src/chain/dev-accounts.ts";
import { unitConvert } from "../../src/operations/unit-convert/index.ts";
import { openStore } from "../../src/store/open-store.ts";
import type { Store } from "../../src/store/store.ts";
import { startTestService, type TestService, usdcBalances } from "../helpers/service.ts";
import { callTool, connectMcp, termsOf } from "../mcp/paying-mcp-client.ts";

describe("vouchers through the MCP door", () => {
  let service: TestService;
  let ledger: Store;
  let mcp: Client;

  beforeAll(async () => {
    service = await startTestService({ X402_VOUCHERS: "on" }, { operations: [unitConvert] });
    ledger = await openStore(service.config.database);
    mcp = await connectMcp(service.url);
  });
  afterAll(async () => {
    await mcp?.close();
    await ledger?.close();
    await service?.stop();
  });

  it("three paid tool calls: one deposit, then vouchers; a ledger row each at the mcp door; payTo untouched", async () => {
    const rpcUrl = service.localChain?.rpcUrl as string;
    const publicClient = createPublicClient({ transport: http(rpcUrl), pollingInterval: 50 });
    const account = privateKeyToAccount(devPrivateKey(9));
    const storage = new InMemoryClientChannelStorage();
    const client = new x402Client().register(
      service.config.payment.network,
      new BatchSettlementEvmScheme(toClientEvmSigner(account, publicClient as never), { storage }),
    );
    const balanceOf = usdcBalances(rpcUrl);
    const payToBefore = await balanceOf(service.payTo);
    const args = unitConvert.example.input as Record<string, unknown>;
    const types: string[] = [];
    let channelId = "0x" as `0x${string}`;
    for (let i = 0; i < 3; i++) {
      const terms = termsOf(await callTool(mcp, unitConvert.id, args));
      expect(terms.accepts.map((entry) => entry.scheme)).toEqual(["exact", "batch-settlement"]);
      const payment = await client.createPaymentPayload(terms);
      const payload = payment.payload as { type: string; deposit?: { amount: string } };
      types.push(payload.type);
      const result = await callTool(mcp, unitConvert.id, args, payment);
      expect(result.isError, JSON.stringify(result).slice(0, 400)).toBeFalsy();
      const settled = result._meta?.["x402/payment-response"] as {
        success: boolean;
        extra: {
          chargedAmount: string;
          channelState: { channelId: `0x${string}`; chargedCumulativeAmount: string };
        };
      };
      expect(settled.success).toBe(true);
      channelId = settled.extra.channelState.channelId;
      await updateChannelFromSettle(storage, {
        server: {
          chargedAmount: settled.extra.chargedAmount,
          chargedCumulativeAmount: settled.extra.channelState.chargedCumulativeAmount,
        },
        local: {
          channelId,
          requestAmount: payment.accepted.amount,
          ...(payload.deposit ? { depositAmount: payload.deposit.amount } : {}),
        },
      });
    }
    expect(types).toEqual(["deposit", "voucher", "voucher"]);
    const charges = await ledger.vouchers.charges(channelId);
    expect(charges.map((charge) => charge.door)).toEqual(["mcp", "mcp", "mcp"]);
    expect(await balanceOf(service.payTo)).toBe(payToBefore);
  });
});
