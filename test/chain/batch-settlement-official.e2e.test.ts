/**
 * Our x402BatchSettlement against the official `@x402/evm` batch-settlement code, unchanged: the
 * client scheme builds the deposit (reading our `channels` to recover state), the official
 * facilitator verifies and submits it to our contract, the client's vouchers verify against our
 * EIP-712 (the facilitator's `claimWithSignature`, signed by its own ClaimBatch code), and the
 * facilitator's settle and refund paths run on our contract.
 */

import type { PaymentPayload, PaymentRequirements } from "@x402/core/types";
import { toClientEvmSigner, toFacilitatorEvmSigner } from "@x402/evm";
import {
  BatchSettlementEvmScheme as BatchSettlementClient,
  InMemoryClientChannelStorage,
  signVoucher,
} from "@x402/evm/batch-settlement/client";
import { BatchSettlementEvmScheme as BatchSettlementFacilitator } from "@x402/evm/batch-settlement/facilitator";
import { createWalletClient, type Hex, http, toFunctionSelector } from "viem";
import { base } from "viem/chains";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  type ChannelConfig,
  channelIdOf,
  type EscrowChain,
  NETWORK,
  startEscrowChain,
  USDC,
} from "./batch-settlement-fixture.ts";

let t: EscrowChain;
beforeAll(async () => {
  t = await startEscrowChain();
});
afterAll(async () => {
  await t?.stop();
});

function facilitator(): BatchSettlementFacilitator {
  const chain = { ...base, rpcUrls: { default: { http: [t.chain.rpcUrl] } } };
  const wallet = createWalletClient({ chain, transport: http(t.chain.rpcUrl), account: t.relayer });
  const signer = toFacilitatorEvmSigner({
    address: t.relayer.address,
    readContract: (args) => t.client.readContract(args as never),
    verifyTypedData: (args) => t.client.verifyTypedData(args as never),
    writeContract: (args) => wallet.writeContract(args as never),
    sendTransaction: (args) => wallet.sendTransaction(args),
    waitForTransactionReceipt: (args) => t.client.waitForTransactionReceipt(args),
    getCode: (args) => t.client.getCode(args),
  });
  // The receiver authorizer's key signs ClaimBatch and Refund with the facilitator's own code.
  return new BatchSettlementFacilitator(signer, t.receiverAuthorizer);
}

describe("the official @x402/evm batch-settlement client and facilitator on our contract", () => {
  it("deposit, vouchers, claim, settle and refund, end to end", async () => {
    const payer = await t.newPayer(1_000_000n);
    const requirements: PaymentRequirements = {
      scheme: "batch-settlement",
      network: NETWORK as PaymentRequirements["network"],
      amount: "1000",
      asset: USDC,
      payTo: t.receiver.address,
      maxTimeoutSeconds: 300,
      extra: {
        receiverAuthorizer: t.receiverAuthorizer.address,
        withdrawDelay: 900,
        name: "USD Coin",
        version: "2",
        minDeposit: "100000",
      },
    };
    const storage = new InMemoryClientChannelStorage();
    const client = new BatchSettlementClient(toClientEvmSigner(payer, t.client), { storage });
    const scheme = facilitator();
    const envelope = (payload: unknown): PaymentPayload => ({
      x402Version: 2,
      accepted: requirements,
      payload: payload as PaymentPayload["payload"],
    });

    // 1. The client builds a deposit (no channel yet: it read our `channels` and found none).
    const deposit = (await client.createPaymentPayload(2, requirements)).payload as {
      type: string;
      channelConfig: ChannelConfig;
      voucher: { channelId: Hex; maxClaimableAmount: string; signature: Hex };
      deposit: { amount: string };
    };
    expect(deposit.type).toBe("deposit");
    expect(deposit.deposit.amount).toBe("100000");
    const id = channelIdOf(deposit.channelConfig);
    expect(deposit.voucher.channelId).toBe(id);
    expect(await t.read("getChannelId", [deposit.channelConfig])).toBe(id);

    // 2. The official facilitator verifies it against our contract (incl. its simulated deposit) and submits it.
    const verified = await scheme.verify(envelope(deposit), requirements);
    expect(verified).toMatchObject({
      isValid: true,
      extra: { channelId: id, balance: "0", totalClaimed: "0", refundNonce: "0" },
    });
    const deposited = await scheme.settle(envelope(deposit), requirements);
    expect(deposited).toMatchObject({ success: true, amount: "100000" });
    expect(deposited.transaction).toMatch(/^0x[0-9a-f]{64}$/);
    expect(await t.read("channels", [id])).toEqual([100_000n, 0n]);
    expect(await t.usdc(payer.address)).toBe(900_000n);

    // 3. Two more paid requests: the client signs cumulative vouchers from its state (what its
    //    response hook records after each answer), and the facilitator verifies them on our chain state.
    let latest = deposit.voucher;
    for (const charged of ["1000", "2000"]) {
      await storage.set(id.toLowerCase(), {
        chargedCumulativeAmount: charged,
        balance: "100000",
        totalClaimed: "0",
      });
      const voucher = (await client.createPaymentPayload(2, requirements)).payload as typeof deposit;
      expect(voucher.type).toBe("voucher");
      expect(voucher.voucher.maxClaimableAmount).toBe(String(Number(charged) + 1000));
      expect(await scheme.verify(envelope(voucher), requirements)).toMatchObject({ isValid: true });
      latest = voucher.voucher;
    }

    // 4. The facilitator claims the latest voucher with its own ClaimBatch signature: our
    //    claimWithSignature accepts the official client's voucher signature.
    const claimed = await scheme.settle(
      envelope({
        type: "claim",
        claims: [
          {
            voucher: { channel: deposit.channelConfig, maxClaimableAmount: latest.maxClaimableAmount },
            signature: latest.signature,
            totalClaimed: "3000",
          },
        ],
      }),
      requirements,
    );
    expect(claimed).toMatchObject({ success: true });
    expect(await t.read("channels", [id])).toEqual([100_000n, 3_000n]);

    // 5. Settle: the facilitator reads our `receivers` and parses our `Settled` event for the amount.
    const receiverBefore = await t.usdc(t.receiver.address);
    const settled = await scheme.settle(
      envelope({ type: "settle", receiver: t.receiver.address, token: USDC }),
      requirements,
    );
    expect(settled).toMatchObject({ success: true, amount: "3000" });
    expect(await t.usdc(t.receiver.address)).toBe(receiverBefore + 3_000n);
    const nothing = await scheme.settle(
      envelope({ type: "settle", receiver: t.receiver.address, token: USDC }),
      requirements,
    );
    expect(nothing).toMatchObject({
      success: false,
      errorReason: "invalid_batch_settlement_evm_nothing_to_settle",
    });

    // 6. Cooperative refund of the rest: a zero-charge voucher at the charged total (3000), the
    //    facilitator's Refund signature.
    await storage.set(id.toLowerCase(), {
      chargedCumulativeAmount: "3000",
      balance: "100000",
      totalClaimed: "3000",
    });
    const refundVoucher = (await client.createPaymentPayload(2, { ...requirements, amount: "0" }))
      .payload as typeof deposit;
    const refund = {
      type: "refund",
      channelConfig: deposit.channelConfig,
      voucher: refundVoucher.voucher,
      amount: "97000",
      refundNonce: "0",
      // The zero-charge voucher as a claim row at the total already claimed: the facilitator sends
      // claimWithSignature + refundWithSignature through our multicall, the claim a no-op.
      claims: [
        {
          voucher: {
            channel: deposit.channelConfig,
            maxClaimableAmount: refundVoucher.voucher.maxClaimableAmount,
          },
          signature: refundVoucher.voucher.signature,
          totalClaimed: "3000",
        },
      ],
    };
    expect(await scheme.verify(envelope(refund), requirements)).toMatchObject({ isValid: true });
    const refunded = await scheme.settle(envelope(refund), requirements);
    expect(refunded).toMatchObject({
      success: true,
      amount: "97000",
      extra: { channelState: { balance: "3000", totalClaimed: "3000", refundNonce: "1" } },
    });
    expect(await t.usdc(payer.address)).toBe(997_000n);
    expect(await t.read("refundNonce", [id])).toBe(1n);
    // The same refund again: our contract refuses the used nonce, the facilitator reports it.
    const replay = await scheme.settle(envelope(refund), requirements);
    expect(replay).toMatchObject({ success: false });
  });

  it("a voucher of another key fails the official facilitator's check and our claim alike", async () => {
    const payer = await t.newPayer(1_000_000n);
    const other = await t.newPayer(0n);
    const requirements: PaymentRequirements = {
      scheme: "batch-settlement",
      network: NETWORK as PaymentRequirements["network"],
      amount: "500",
      asset: USDC,
      payTo: t.receiver.address,
      maxTimeoutSeconds: 300,
      extra: {
        receiverAuthorizer: t.receiverAuthorizer.address,
        withdrawDelay: 900,
        name: "USD Coin",
        version: "2",
      },
    };
    const client = new BatchSettlementClient(toClientEvmSigner(payer, t.client));
    const scheme = facilitator();
    const envelope = (payload: unknown): PaymentPayload => ({
      x402Version: 2,
      accepted: requirements,
      payload: payload as never,
    });
    const deposit = (await client.createPaymentPayload(2, requirements)).payload as {
      channelConfig: ChannelConfig;
      voucher: { maxClaimableAmount: string; signature: Hex };
    };
    expect(await scheme.settle(envelope(deposit), requirements)).toMatchObject({ success: true });
    // A voucher for the same channel signed by someone else (the official client's signer, another key).
    const forged = await signVoucher(other, channelIdOf(deposit.channelConfig), "500", NETWORK);
    const claim = {
      type: "claim",
      claims: [
        {
          voucher: { channel: deposit.channelConfig, maxClaimableAmount: "500" },
          signature: forged.signature,
          totalClaimed: "500",
        },
      ],
    };
    const result = await scheme.settle(envelope(claim), requirements);
    expect(result).toMatchObject({
      success: false,
      errorReason: "invalid_batch_settlement_evm_claim_simulation_failed",
    });
    // The official ABI has no custom errors: the message carries our error's selector.
    expect(result.errorMessage).toContain(toFunctionSelector("InvalidVoucherSignature(bytes32)"));
  });
});
