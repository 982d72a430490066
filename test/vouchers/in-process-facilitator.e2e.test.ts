/**
 * The in-process facilitator of local and self modes, as `serve` builds it (createPaymentBackend), with
 * @x402/evm's batch-settlement facilitator registered on our settler signer: /supported lists the scheme
 * with the settler as receiver authorizer, so the voucher terms go live with X402_VOUCHERS=on; the official
 * client's deposit, its vouchers, a claim signed by the settler and a settle to payTo all go through it
 * against our contract on the local chain, the transactions sent by our nonce allocator.
 */

import os from "node:os";
import type { PaymentPayload, PaymentRequirements } from "@x402/core/types";
import { toClientEvmSigner } from "@x402/evm";
import {
  BatchSettlementEvmScheme as BatchSettlementClient,
  InMemoryClientChannelStorage,
} from "@x402/evm/batch-settlement/client";
import type { Hex } from "viem";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { devPrivateKey } from "../../src/chain/dev-accounts.ts";
import { loadConfig } from "../../src/config.ts";
import { createPaymentBackend, type PaymentBackend } from "../../src/payments/facilitator/facilitator.ts";
import { resolveVoucherOffer } from "../../src/payments/vouchers/voucher-offer.ts";
import { BATCH_SETTLEMENT, voucherRequirements } from "../../src/payments/vouchers/voucher-terms.ts";
import {
  type ChannelConfig,
  channelIdOf,
  type EscrowChain,
  startEscrowChain,
  USDC,
} from "../chain/batch-settlement-fixture.ts";

let t: EscrowChain;
let backend: PaymentBackend;
const config = loadConfig({ DATA_DIR: os.tmpdir(), LOG_LEVEL: "silent", X402_VOUCHERS: "on" });

beforeAll(async () => {
  t = await startEscrowChain();
  backend = createPaymentBackend(config.payment, {
    privateKey: devPrivateKey(0),
    rpcUrl: t.chain.rpcUrl,
    pollingIntervalMs: 20,
  });
});
afterAll(async () => {
  backend?.stop();
  await t?.stop();
});

describe("the in-process facilitator with batch-settlement", () => {
  it("lists batch-settlement with the settler as receiver authorizer, so the voucher terms are offered", async () => {
    const supported = await backend.facilitator.getSupported();
    const kind = supported.kinds.find((k) => k.scheme === BATCH_SETTLEMENT);
    expect(kind).toMatchObject({ x402Version: 2, network: config.payment.network });
    expect(String(kind?.extra?.receiverAuthorizer).toLowerCase()).toBe(t.relayer.address.toLowerCase());
    const offer = await resolveVoucherOffer({
      vouchers: config.payment.vouchers,
      network: config.payment.network,
      facilitator: backend.facilitator,
      settlerAddress: backend.settlerAddress,
      timeoutMs: 5_000,
      chainReadable: true,
    });
    expect(offer.offer?.receiverAuthorizer).toBe(backend.settlerAddress);
    // Switched off, the same facilitator leaves exact alone.
    const off = await resolveVoucherOffer({
      vouchers: { ...config.payment.vouchers, enabled: false },
      network: config.payment.network,
      facilitator: backend.facilitator,
      settlerAddress: backend.settlerAddress,
      timeoutMs: 5_000,
      chainReadable: true,
    });
    expect(off.offer).toBeUndefined();
  });

  it("verifies and settles the official client's deposit, checks its vouchers, claims with the settler's signature and settles to payTo", async () => {
    const offer = await resolveVoucherOffer({
      vouchers: config.payment.vouchers,
      network: config.payment.network,
      facilitator: backend.facilitator,
      settlerAddress: backend.settlerAddress,
      timeoutMs: 5_000,
      chainReadable: true,
    });
    if (!offer.offer) throw new Error(offer.why);
    const exact: PaymentRequirements = {
      scheme: "exact",
      network: config.payment.network,
      asset: USDC,
      amount: "1000",
      payTo: t.receiver.address,
      maxTimeoutSeconds: 300,
      extra: { name: config.payment.assetName, version: config.payment.assetVersion },
    };
    const requirements = voucherRequirements(exact, config.payment, offer.offer);
    const payer = await t.newPayer(10_000_000n);
    const storage = new InMemoryClientChannelStorage();
    const client = new BatchSettlementClient(toClientEvmSigner(payer, t.client), { storage });
    const envelope = (payload: unknown): PaymentPayload => ({
      x402Version: 2,
      accepted: requirements,
      payload: payload as PaymentPayload["payload"],
    });
    const deposit = (await client.createPaymentPayload(2, requirements)).payload as {
      type: string;
      channelConfig: ChannelConfig;
      voucher: { channelId: Hex; maxClaimableAmount: string; signature: Hex };
      deposit: { amount: string };
    };
    expect(deposit.type).toBe("deposit");
    const id = channelIdOf(deposit.channelConfig);
    expect(await backend.facilitator.verify(envelope(deposit), requirements)).toMatchObject({
      isValid: true,
    });
    const deposited = await backend.facilitator.settle(envelope(deposit), requirements);
    expect(deposited).toMatchObject({ success: true, amount: deposit.deposit.amount });
    expect(await t.read("channels", [id])).toEqual([BigInt(deposit.deposit.amount), 0n]);

    await storage.set(id.toLowerCase(), {
      chargedCumulativeAmount: "1000",
      balance: deposit.deposit.amount,
      totalClaimed: "0",
    });
    const voucher = (await client.createPaymentPayload(2, requirements)).payload as typeof deposit;
    expect(voucher.type).toBe("voucher");
    expect(await backend.facilitator.verify(envelope(voucher), requirements)).toMatchObject({
      isValid: true,
    });

    // The claim carries no authorizer signature: the in-process facilitator signs ClaimBatch with the settler's key.
    const claimed = await backend.facilitator.settle(
      envelope({
        type: "claim",
        claims: [
          {
            voucher: {
              channel: deposit.channelConfig,
              maxClaimableAmount: voucher.voucher.maxClaimableAmount,
            },
            signature: voucher.voucher.signature,
            totalClaimed: "2000",
          },
        ],
      }),
      requirements,
    );
    expect(claimed).toMatchObject({ success: true });
    expect(await t.read("channels", [id])).toEqual([BigInt(deposit.deposit.amount), 2_000n]);
    const before = await t.usdc(t.receiver.address);
    const settled = await backend.facilitator.settle(
      envelope({ type: "settle", receiver: t.receiver.address, token: USDC }),
      requirements,
    );
    expect(settled).toMatchObject({ success: true, amount: "2000" });
    expect(await t.usdc(t.receiver.address)).toBe(before + 2_000n);
  });
});
