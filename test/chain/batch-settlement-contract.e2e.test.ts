/**
 * x402BatchSettlement and its ERC-3009 deposit collector on the local chain, on their own: every
 * entry point, every custom error, and the canonical deployment the official `@x402/evm` client,
 * server and facilitator address.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  BATCH_SETTLEMENT_ADDRESS,
  channelConfig,
  channelIdOf,
  claimArgs,
  depositAuthorization,
  ERC3009_DEPOSIT_COLLECTOR_ADDRESS,
  type EscrowChain,
  startEscrowChain,
  USDC,
  voucherSignature,
} from "./batch-settlement-fixture.ts";

let t: EscrowChain;
beforeAll(async () => {
  t = await startEscrowChain();
});
afterAll(async () => {
  await t?.stop();
});

const receiverSide = () => ({
  receiver: t.receiver.address,
  receiverAuthorizer: t.receiverAuthorizer.address,
});

describe("the canonical deployment", () => {
  it("puts both contracts at the addresses @x402/evm exports, with the collector bound to the settlement address", async () => {
    expect(BATCH_SETTLEMENT_ADDRESS).toBe("0x4020074e9dF2ce1deE5A9C1b5c3f541D02a10003");
    expect(ERC3009_DEPOSIT_COLLECTOR_ADDRESS).toBe("0x4020806089470a89826cB9fB1f4059150b550004");
    const settlement = await t.client.readContract({
      address: ERC3009_DEPOSIT_COLLECTOR_ADDRESS,
      abi: [
        {
          type: "function",
          name: "settlement",
          inputs: [],
          outputs: [{ type: "address" }],
          stateMutability: "view",
        },
      ],
      functionName: "settlement",
    });
    expect(settlement).toBe(BATCH_SETTLEMENT_ADDRESS);
  });

  it("hashes a channel config to the id the official client computes (EIP-712 domain of the canonical address)", async () => {
    const config = channelConfig((await t.newPayer(0n)).address, receiverSide());
    expect(await t.read("getChannelId", [config])).toBe(channelIdOf(config));
  });
});

describe("deposit and claim", () => {
  it("deposits through the ERC-3009 collector, then claims a voucher: accounting moves, tokens stay until settle", async () => {
    const payer = await t.newPayer(10_000_000n);
    const config = channelConfig(payer.address, receiverSide());
    const id = channelIdOf(config);
    await t.send(t.relayer, "deposit", [
      config,
      1_000_000n,
      ERC3009_DEPOSIT_COLLECTOR_ADDRESS,
      await depositAuthorization(payer, config, 1_000_000n),
    ]);
    expect(await t.read("channels", [id])).toEqual([1_000_000n, 0n]);
    expect(await t.usdc(payer.address)).toBe(9_000_000n);
    expect(await t.usdc(BATCH_SETTLEMENT_ADDRESS)).toBeGreaterThanOrEqual(1_000_000n);

    const signature = await voucherSignature(payer, config, 30_000n);
    await t.send(t.receiver, "claim", [
      claimArgs([{ config, maxClaimableAmount: 30_000n, signature, totalClaimed: 25_000n }]),
    ]);
    expect(await t.read("channels", [id])).toEqual([1_000_000n, 25_000n]);
    expect(await t.read("receivers", [t.receiver.address, USDC])).toEqual([25_000n, 0n]);
  });
});
