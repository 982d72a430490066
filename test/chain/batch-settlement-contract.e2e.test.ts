/**
 * x402BatchSettlement and its ERC-3009 deposit collector on the local chain, on their own: every
 * entry point, every custom error, and the canonical deployment the official `@x402/evm` client,
 * server and facilitator address.
 */
import { encodeFunctionData, type Hex, type PrivateKeyAccount, parseEventLogs } from "viem";
import { generatePrivateKey, privateKeyToAccount } from "viem/accounts";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { batchSettlementAbi, erc3009DepositCollectorAbi } from "../../src/chain/batch-settlement.ts";
import {
  BATCH_SETTLEMENT_ADDRESS,
  type ChannelConfig,
  type ClaimRow,
  channelConfig,
  channelIdOf,
  claimArgs,
  depositAuthorization,
  ERC3009_DEPOSIT_COLLECTOR_ADDRESS,
  type EscrowChain,
  signClaimBatch,
  signRefund,
  startEscrowChain,
  USDC,
  voucherSignature,
  ZERO,
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
const stranger = privateKeyToAccount(generatePrivateKey());

/** A funded payer with a channel holding `amount`. */
async function openChannel(
  amount: bigint,
  overrides: Partial<ChannelConfig> = {},
): Promise<{ payer: PrivateKeyAccount; config: ChannelConfig; id: Hex }> {
  const payer = await t.newPayer(amount * 2n);
  const config = channelConfig(payer.address, { ...receiverSide(), ...overrides });
  await t.send(t.relayer, "deposit", [
    config,
    amount,
    ERC3009_DEPOSIT_COLLECTOR_ADDRESS,
    await depositAuthorization(payer, config, amount),
  ]);
  return { payer, config, id: channelIdOf(config) };
}

async function claimRow(
  payer: PrivateKeyAccount,
  config: ChannelConfig,
  max: bigint,
  total = max,
): Promise<ClaimRow> {
  return {
    config,
    maxClaimableAmount: max,
    signature: await voucherSignature(payer, config, max),
    totalClaimed: total,
  };
}

async function eventsOf(hash: Hex) {
  const receipt = await t.client.getTransactionReceipt({ hash });
  return parseEventLogs({ abi: batchSettlementAbi, logs: receipt.logs }) as unknown as {
    eventName: string;
    args: Record<string, unknown>;
  }[];
}

describe("the canonical deployment", () => {
  it("puts both contracts at the addresses @x402/evm exports, with the collector bound to the settlement address", async () => {
    expect(BATCH_SETTLEMENT_ADDRESS).toBe("0x4020074e9dF2ce1deE5A9C1b5c3f541D02a10003");
    expect(ERC3009_DEPOSIT_COLLECTOR_ADDRESS).toBe("0x4020806089470a89826cB9fB1f4059150b550004");
    const settlement = await t.client.readContract({
      address: ERC3009_DEPOSIT_COLLECTOR_ADDRESS,
      abi: erc3009DepositCollectorAbi,
      functionName: "settlement",
    });
    expect(settlement).toBe(BATCH_SETTLEMENT_ADDRESS);
    const domain = await t.read<readonly unknown[]>("eip712Domain", []);
    expect(domain.slice(1, 5)).toEqual(["x402 Batch Settlement", "1", 8453n, BATCH_SETTLEMENT_ADDRESS]);
  });

  it("hashes a channel config to the id the official client computes (EIP-712 domain of the canonical address)", async () => {
    const config = channelConfig((await t.newPayer(0n)).address, receiverSide());
    expect(await t.read("getChannelId", [config])).toBe(channelIdOf(config));
  });
});

describe("deposit", () => {
  it("deposits through the ERC-3009 collector: ChannelCreated on the first deposit only, top-ups add up", async () => {
    const { payer, config, id } = await openChannel(1_000_000n);
    expect(await t.read("channels", [id])).toEqual([1_000_000n, 0n]);
    expect(await t.usdc(payer.address)).toBe(1_000_000n);
    const topUp = await t.send(t.relayer, "deposit", [
      config,
      500_000n,
      ERC3009_DEPOSIT_COLLECTOR_ADDRESS,
      await depositAuthorization(payer, config, 500_000n),
    ]);
    expect(await t.read("channels", [id])).toEqual([1_500_000n, 0n]);
    const names = (await eventsOf(topUp)).map((event) => event.eventName);
    expect(names).toContain("Deposited");
    expect(names).not.toContain("ChannelCreated");
  });

  it("refuses a replayed authorization, one signed for another channel, an expired one, and any other caller of the collector", async () => {
    const payer = await t.newPayer(10_000_000n);
    const config = channelConfig(payer.address, receiverSide());
    const data = await depositAuthorization(payer, config, 100_000n);
    await t.send(t.relayer, "deposit", [config, 100_000n, ERC3009_DEPOSIT_COLLECTOR_ADDRESS, data]);
    const deposit = (c: ChannelConfig, amount: bigint, d: Hex) =>
      t.revertOf(t.relayer, "deposit", [c, amount, ERC3009_DEPOSIT_COLLECTOR_ADDRESS, d]);
    expect(await deposit(config, 100_000n, data)).toBe("FiatTokenV2: authorization is used or canceled");
    // Signed for this channel, submitted for another config of the same payer: the nonce binds the channel.
    const other = channelConfig(payer.address, receiverSide());
    expect(await deposit(other, 100_000n, await depositAuthorization(payer, config, 100_000n))).toBe(
      "FiatTokenV2: invalid signature",
    );
    // Another amount than signed.
    expect(await deposit(config, 100_001n, await depositAuthorization(payer, config, 100_000n))).toBe(
      "FiatTokenV2: invalid signature",
    );
    expect(
      await deposit(
        config,
        100_000n,
        await depositAuthorization(payer, config, 100_000n, { validBefore: 1n }),
      ),
    ).toBe("FiatTokenV2: authorization is expired");
    expect(
      await deposit(
        config,
        100_000n,
        await depositAuthorization(payer, config, 100_000n, { validAfter: 2n ** 39n }),
      ),
    ).toBe("FiatTokenV2: authorization is not yet valid");
    // A payer who cannot fund the deposit.
    expect(await deposit(config, 20_000_000n, await depositAuthorization(payer, config, 20_000_000n))).toBe(
      "ERC20: transfer amount exceeds balance",
    );
    const direct = await t.client
      .simulateContract({
        address: ERC3009_DEPOSIT_COLLECTOR_ADDRESS,
        abi: erc3009DepositCollectorAbi,
        functionName: "collect",
        args: [
          payer.address,
          USDC,
          100_000n,
          channelIdOf(config),
          await depositAuthorization(payer, config, 100_000n),
        ],
        account: stranger,
      })
      .catch((error) => error);
    expect(String(direct)).toContain("OnlySettlement");
  });

  it("refuses a zero amount, a zero address, a withdraw delay outside 15 min – 30 days, and a uint128 overflow", async () => {
    const payer = await t.newPayer(0n);
    const deposit = async (config: ChannelConfig, amount: bigint) =>
      t.revertOf(t.relayer, "deposit", [
        config,
        amount,
        ERC3009_DEPOSIT_COLLECTOR_ADDRESS,
        await depositAuthorization(payer, config, amount),
      ]);
    const config = channelConfig(payer.address, receiverSide());
    expect(await deposit(config, 0n)).toBe("ZeroAmount");
    expect(await deposit({ ...config, receiverAuthorizer: ZERO }, 1n)).toBe("ZeroAddress");
    expect(await deposit({ ...config, receiver: ZERO }, 1n)).toBe("ZeroAddress");
    expect(await deposit({ ...config, token: ZERO }, 1n)).toBe("ZeroAddress");
    expect(await deposit({ ...config, withdrawDelay: 899 }, 1n)).toBe("WithdrawDelayOutOfRange");
    expect(await deposit({ ...config, withdrawDelay: 2_592_001 }, 1n)).toBe("WithdrawDelayOutOfRange");

    const max = 2n ** 128n - 1n;
    const whale = await t.newPayer(0n);
    await t.asUsdcAdmin("mint", [whale.address, max + 1n]);
    const big = channelConfig(whale.address, receiverSide());
    await t.send(t.relayer, "deposit", [
      big,
      max,
      ERC3009_DEPOSIT_COLLECTOR_ADDRESS,
      await depositAuthorization(whale, big, max),
    ]);
    expect(
      await t.revertOf(t.relayer, "deposit", [
        big,
        1n,
        ERC3009_DEPOSIT_COLLECTOR_ADDRESS,
        await depositAuthorization(whale, big, 1n),
      ]),
    ).toBe("AmountOverflow");
  });

  it("credits only what arrived, and cannot be re-entered through a hostile collector", async () => {
    const hostile = await t.deployTestContract("HostileCollector");
    const config = channelConfig((await t.newPayer(0n)).address, receiverSide());
    expect(await t.revertOf(t.relayer, "deposit", [config, 1n, hostile.address, "0x"])).toBe(
      "DepositAmountMismatch",
    );
    await t.sendTo(t.relayer, hostile, "setReenter", [true]);
    expect(await t.revertOf(t.relayer, "deposit", [config, 1n, hostile.address, "0x"])).toBe("Reentrancy");
  });
});

describe("claim", () => {
  it("claims by the receiver or the receiver authorizer, up to the voucher and the balance, never below what is claimed", async () => {
    const { payer, config, id } = await openChannel(100_000n);
    const row = await claimRow(payer, config, 30_000n, 20_000n);
    await t.send(t.receiver, "claim", [claimArgs([row])]);
    expect(await t.read("channels", [id])).toEqual([100_000n, 20_000n]);
    await t.send(t.receiverAuthorizer, "claim", [claimArgs([{ ...row, totalClaimed: 30_000n }])]);
    expect(await t.read("channels", [id])).toEqual([100_000n, 30_000n]);
    // The same total again is a no-op (no event), a lower one is refused.
    const again = await t.send(t.receiver, "claim", [claimArgs([{ ...row, totalClaimed: 30_000n }])]);
    expect((await eventsOf(again)).map((event) => event.eventName)).toEqual([]);
    expect(await t.revertOf(t.receiver, "claim", [claimArgs([{ ...row, totalClaimed: 10_000n }])])).toBe(
      "ClaimBelowClaimed",
    );
    expect(await t.revertOf(t.receiver, "claim", [claimArgs([{ ...row, totalClaimed: 30_001n }])])).toBe(
      "ClaimExceedsVoucher",
    );
    expect(
      await t.revertOf(t.receiver, "claim", [claimArgs([await claimRow(payer, config, 100_001n)])]),
    ).toBe("ClaimExceedsBalance");
    expect(await t.revertOf(stranger, "claim", [claimArgs([row])])).toBe("NotReceiverOrAuthorizer");
    expect(await t.revertOf(t.receiver, "claim", [[]])).toBe("EmptyClaims");
  });

  it("refuses a forged voucher: another signer, another amount, another channel, a malleable (high-s) twin", async () => {
    const { payer, config } = await openChannel(100_000n);
    const claim = (row: ClaimRow) => t.revertOf(t.receiver, "claim", [claimArgs([row])]);
    expect(
      await claim({
        ...(await claimRow(payer, config, 5_000n)),
        signature: await voucherSignature(stranger, config, 5_000n),
      }),
    ).toBe("InvalidVoucherSignature");
    expect(
      await claim({
        ...(await claimRow(payer, config, 5_000n)),
        maxClaimableAmount: 6_000n,
        totalClaimed: 6_000n,
      }),
    ).toBe("InvalidVoucherSignature");
    const { config: other } = await openChannel(100_000n);
    expect(await claim({ ...(await claimRow(payer, config, 5_000n)), config: other })).toBe(
      "InvalidVoucherSignature",
    );
    const good = await claimRow(payer, config, 5_000n);
    const s = BigInt(`0x${good.signature.slice(66, 130)}`);
    const n = 0xfffffffffffffffffffffffffffffffebaaedce6af48a03bbfd25e8cd0364141n;
    const v = Number.parseInt(good.signature.slice(130), 16);
    const twin =
      `${good.signature.slice(0, 66)}${(n - s).toString(16).padStart(64, "0")}${(v === 27 ? 28 : 27).toString(16)}` as Hex;
    expect(await claim({ ...good, signature: twin })).toBe("InvalidVoucherSignature");
    expect(await claim({ ...good, signature: "0x1234" })).toBe("InvalidVoucherSignature");
  });

  it("verifies against the payer itself when no payer authorizer is committed", async () => {
    const { payer, config, id } = await openChannel(50_000n, { payerAuthorizer: ZERO });
    const row = await claimRow(payer, config, 7_000n);
    expect(
      await t.revertOf(t.receiver, "claim", [
        claimArgs([{ ...row, signature: await voucherSignature(stranger, config, 7_000n) }]),
      ]),
    ).toBe("InvalidVoucherSignature");
    await t.send(t.receiver, "claim", [claimArgs([row])]);
    expect(await t.read("channels", [id])).toEqual([50_000n, 7_000n]);
  });

  it("verifies a contract wallet payer by EIP-1271, for its ERC-3009 deposit (USDC) and its vouchers (our contract)", async () => {
    const owner = privateKeyToAccount(generatePrivateKey());
    const wallet = await t.deployTestContract("Erc1271Wallet", [owner.address]);
    await t.asUsdcAdmin("mint", [wallet.address, 100_000n]);
    // The owner's key signs every digest for the wallet (`from` / payer = the wallet).
    const walletSigner = { ...owner, address: wallet.address };
    const config = channelConfig(wallet.address, { ...receiverSide(), payerAuthorizer: ZERO });
    const id = channelIdOf(config);
    await t.send(t.relayer, "deposit", [
      config,
      60_000n,
      ERC3009_DEPOSIT_COLLECTOR_ADDRESS,
      await depositAuthorization(walletSigner, config, 60_000n),
    ]);
    expect(await t.read("channels", [id])).toEqual([60_000n, 0n]);
    const row = await claimRow(walletSigner, config, 4_000n);
    const forged = {
      ...row,
      signature: await voucherSignature({ ...stranger, address: wallet.address }, config, 4_000n),
    };
    expect(await t.revertOf(t.receiver, "claim", [claimArgs([forged])])).toBe("InvalidVoucherSignature");
    await t.send(t.receiver, "claim", [claimArgs([row])]);
    expect(await t.read("channels", [id])).toEqual([60_000n, 4_000n]);
  });

  it("claimWithSignature: many channels in one call on one ClaimBatch signature, relayed by anyone", async () => {
    // One after another: funding a payer impersonates the USDC admin.
    const channels = [await openChannel(10_000n), await openChannel(20_000n), await openChannel(30_000n)];
    const rows = await Promise.all(
      channels.map(({ payer, config }, i) =>
        claimRow(payer, config, BigInt(1_000 * (i + 1)), BigInt(900 * (i + 1))),
      ),
    );
    const before = (await t.read<[bigint, bigint]>("receivers", [t.receiver.address, USDC]))[0];
    const signature = await signClaimBatch(t.receiverAuthorizer, rows);
    expect(await t.read("getClaimBatchDigest", [claimArgs(rows)])).toMatch(/^0x[0-9a-f]{64}$/);
    const hash = await t.send(t.relayer, "claimWithSignature", [claimArgs(rows), signature]);
    expect((await eventsOf(hash)).filter((event) => event.eventName === "Claimed")).toHaveLength(3);
    for (const [i, { id }] of channels.entries()) {
      expect((await t.read<[bigint, bigint]>("channels", [id]))[1]).toBe(BigInt(900 * (i + 1)));
    }
    expect((await t.read<[bigint, bigint]>("receivers", [t.receiver.address, USDC]))[0]).toBe(
      before + 5_400n,
    );
    // Replaying the same batch changes nothing.
    await t.send(t.relayer, "claimWithSignature", [claimArgs(rows), signature]);
    expect((await t.read<[bigint, bigint]>("receivers", [t.receiver.address, USDC]))[0]).toBe(
      before + 5_400n,
    );

    const tampered = [{ ...rows[0], totalClaimed: 1_000n } as ClaimRow, ...rows.slice(1)];
    expect(await t.revertOf(t.relayer, "claimWithSignature", [claimArgs(tampered), signature])).toBe(
      "InvalidAuthorizerSignature",
    );
    expect(
      await t.revertOf(t.relayer, "claimWithSignature", [
        claimArgs(rows),
        await signClaimBatch(stranger, rows),
      ]),
    ).toBe("InvalidAuthorizerSignature");
    const foreign = await openChannel(10_000n, { receiverAuthorizer: stranger.address });
    const mixed = [...rows, await claimRow(foreign.payer, foreign.config, 1_000n)];
    expect(
      await t.revertOf(t.relayer, "claimWithSignature", [
        claimArgs(mixed),
        await signClaimBatch(t.receiverAuthorizer, mixed),
      ]),
    ).toBe("ReceiverAuthorizerMismatch");
    expect(await t.revertOf(t.relayer, "claimWithSignature", [[], signature])).toBe("EmptyClaims");
  });
});

describe("settle", () => {
  it("sweeps everything claimed and unsettled to the receiver in one transfer; a second settle moves nothing", async () => {
    const { payer, config } = await openChannel(40_000n);
    await t.send(t.receiver, "claim", [claimArgs([await claimRow(payer, config, 12_345n)])]);
    const [claimed, settled] = await t.read<[bigint, bigint]>("receivers", [t.receiver.address, USDC]);
    const before = await t.usdc(t.receiver.address);
    const hash = await t.send(t.relayer, "settle", [t.receiver.address, USDC]);
    expect(await t.usdc(t.receiver.address)).toBe(before + claimed - settled);
    const settledEvent = (await eventsOf(hash)).find((event) => event.eventName === "Settled");
    expect(settledEvent?.args).toEqual({
      receiver: t.receiver.address,
      token: USDC,
      sender: t.relayer.address,
      amount: claimed - settled,
    });
    expect(await t.read("receivers", [t.receiver.address, USDC])).toEqual([claimed, claimed]);
    const noop = await t.send(t.relayer, "settle", [t.receiver.address, USDC]);
    expect(await eventsOf(noop)).toEqual([]);
    expect(await t.usdc(t.receiver.address)).toBe(before + claimed - settled);
  });
});

describe("refund", () => {
  it("refund: by the receiver side only, capped at the unclaimed escrow, nonce first (a no-op refund still advances it)", async () => {
    const { payer, config, id } = await openChannel(100_000n);
    await t.send(t.receiver, "claim", [claimArgs([await claimRow(payer, config, 30_000n)])]);
    expect(await t.revertOf(stranger, "refund", [config, 1n])).toBe("NotReceiverOrAuthorizer");
    expect(await t.revertOf(t.receiver, "refund", [config, 0n])).toBe("ZeroAmount");
    const payerBefore = await t.usdc(payer.address);
    await t.send(t.receiver, "refund", [config, 20_000n]);
    expect(await t.read("channels", [id])).toEqual([80_000n, 30_000n]);
    expect(await t.read("refundNonce", [id])).toBe(1n);
    const all = await t.send(t.receiverAuthorizer, "refund", [config, 10n ** 30n]);
    expect(await t.read("channels", [id])).toEqual([30_000n, 30_000n]);
    expect(await t.usdc(payer.address)).toBe(payerBefore + 70_000n);
    expect((await eventsOf(all)).map((event) => event.eventName)).toEqual(["Refunded"]);
    const nothing = await t.send(t.receiver, "refund", [config, 5n]);
    expect(await eventsOf(nothing)).toEqual([]);
    expect(await t.read("refundNonce", [id])).toBe(3n);
  });

  it("refundWithSignature: the authorizer's Refund for the current nonce, once; a direct refund voids a pre-signed one", async () => {
    const { payer, config, id } = await openChannel(100_000n);
    const signature = await signRefund(t.receiverAuthorizer, config, 0n, 40_000n);
    expect(await t.read("getRefundDigest", [id, 0n, 40_000n])).toMatch(/^0x[0-9a-f]{64}$/);
    expect(await t.revertOf(t.relayer, "refundWithSignature", [config, 40_001n, 0n, signature])).toBe(
      "InvalidAuthorizerSignature",
    );
    expect(
      await t.revertOf(t.relayer, "refundWithSignature", [
        config,
        40_000n,
        0n,
        await signRefund(stranger, config, 0n, 40_000n),
      ]),
    ).toBe("InvalidAuthorizerSignature");
    expect(await t.revertOf(t.relayer, "refundWithSignature", [config, 40_000n, 1n, signature])).toBe(
      "InvalidRefundNonce",
    );
    const before = await t.usdc(payer.address);
    await t.send(t.relayer, "refundWithSignature", [config, 40_000n, 0n, signature]);
    expect(await t.usdc(payer.address)).toBe(before + 40_000n);
    expect(await t.read("refundNonce", [id])).toBe(1n);
    expect(await t.revertOf(t.relayer, "refundWithSignature", [config, 40_000n, 0n, signature])).toBe(
      "InvalidRefundNonce",
    );

    const presigned = await signRefund(t.receiverAuthorizer, config, 1n, 10_000n);
    await t.send(t.receiver, "refund", [config, 1_000n]);
    expect(await t.revertOf(t.relayer, "refundWithSignature", [config, 10_000n, 1n, presigned])).toBe(
      "InvalidRefundNonce",
    );
  });

  it("a full refund closes a never-claimed channel (ChannelClosed), and a top-up reopens it (ChannelCreated again)", async () => {
    const { payer, config, id } = await openChannel(10_000n);
    const closed = await t.send(t.receiver, "refund", [config, 10_000n]);
    expect((await eventsOf(closed)).map((event) => event.eventName)).toEqual(["Refunded", "ChannelClosed"]);
    expect(await t.read("channels", [id])).toEqual([0n, 0n]);
    const reopened = await t.send(t.relayer, "deposit", [
      config,
      1_000n,
      ERC3009_DEPOSIT_COLLECTOR_ADDRESS,
      await depositAuthorization(payer, config, 1_000n),
    ]);
    expect((await eventsOf(reopened)).map((event) => event.eventName)).toEqual([
      "ChannelCreated",
      "Deposited",
    ]);
  });

  it("fails as a whole when the token refuses the transfer (a blacklisted payer)", async () => {
    const { payer, config } = await openChannel(10_000n);
    await t.asUsdcAdmin("blacklist", [payer.address]);
    try {
      expect(await t.revertOf(t.receiver, "refund", [config, 1_000n])).toBe("TransferFailed");
    } finally {
      await t.asUsdcAdmin("unBlacklist", [payer.address]);
    }
  });
});

describe("timed withdrawal", () => {
  it("initiate by the payer (or its authorizer) up to the unclaimed escrow; finalize after the delay, capped by claims made meanwhile", async () => {
    const payerAuthorizer = await t.newPayer(0n);
    const { payer, config, id } = await openChannel(100_000n, { withdrawDelay: 3_600 });
    const withAuthorizer = await openChannel(10_000n, { payerAuthorizer: payerAuthorizer.address });
    await t.send(t.receiver, "claim", [claimArgs([await claimRow(payer, config, 10_000n)])]);

    expect(await t.revertOf(stranger, "initiateWithdraw", [config, 1n])).toBe("NotPayerOrAuthorizer");
    expect(await t.revertOf(t.receiver, "initiateWithdraw", [config, 1n])).toBe("NotPayerOrAuthorizer");
    expect(await t.revertOf(payer, "initiateWithdraw", [config, 0n])).toBe("ZeroAmount");
    expect(await t.revertOf(payer, "initiateWithdraw", [config, 90_001n])).toBe("WithdrawExceedsAvailable");
    expect(await t.revertOf(payer, "finalizeWithdraw", [config])).toBe("NoPendingWithdrawal");
    await t.send(payer, "initiateWithdraw", [config, 90_000n]);
    const [amount, initiatedAt] = await t.read<[bigint, number]>("pendingWithdrawals", [id]);
    expect(amount).toBe(90_000n);
    expect(initiatedAt).toBeGreaterThan(0);
    expect(await t.revertOf(payer, "initiateWithdraw", [config, 1n])).toBe("WithdrawAlreadyPending");
    expect(await t.revertOf(payer, "finalizeWithdraw", [config])).toBe("WithdrawDelayNotElapsed");

    // The receiver claims within the grace period; the withdrawal gets what is left unclaimed.
    await t.send(t.receiver, "claim", [claimArgs([await claimRow(payer, config, 25_000n)])]);
    // Up to a minute before the delay ends (the next block's timestamp is later than the latest by
    // an amount a loaded machine decides), then past it.
    const due = initiatedAt + 3_600;
    await t.advance(due - 60 - Number((await t.client.getBlock()).timestamp));
    expect(await t.revertOf(payer, "finalizeWithdraw", [config])).toBe("WithdrawDelayNotElapsed");
    await t.advance(60);
    expect(await t.revertOf(stranger, "finalizeWithdraw", [config])).toBe("NotPayerOrAuthorizer");
    const before = await t.usdc(payer.address);
    await t.send(payer, "finalizeWithdraw", [config]);
    expect(await t.usdc(payer.address)).toBe(before + 75_000n);
    expect(await t.read("channels", [id])).toEqual([25_000n, 25_000n]);
    expect(await t.read("pendingWithdrawals", [id])).toEqual([0n, 0]);

    // The payer authorizer may act too; the funds still go to the payer.
    const authorizerBefore = await t.usdc(payerAuthorizer.address);
    const payerBefore = await t.usdc(withAuthorizer.payer.address);
    await t.send(payerAuthorizer, "initiateWithdraw", [withAuthorizer.config, 10_000n]);
    await t.advance(900);
    await t.send(payerAuthorizer, "finalizeWithdraw", [withAuthorizer.config]);
    expect(await t.usdc(withAuthorizer.payer.address)).toBe(payerBefore + 10_000n);
    expect(await t.usdc(payerAuthorizer.address)).toBe(authorizerBefore);
    expect(await t.read("channels", [withAuthorizer.id])).toEqual([0n, 0n]);
  });

  it("a cooperative refund shrinks a pending withdrawal, and cancels it when it covers it", async () => {
    const { payer, config, id } = await openChannel(100_000n);
    await t.send(payer, "initiateWithdraw", [config, 50_000n]);
    await t.send(t.receiver, "refund", [config, 20_000n]);
    expect((await t.read<[bigint, number]>("pendingWithdrawals", [id]))[0]).toBe(30_000n);
    const hash = await t.send(t.receiver, "refund", [config, 30_000n]);
    expect((await eventsOf(hash)).map((event) => event.eventName)).toContain("WithdrawCancelled");
    expect(await t.read("pendingWithdrawals", [id])).toEqual([0n, 0]);
    expect(await t.read("channels", [id])).toEqual([50_000n, 0n]);
  });
});

describe("multicall", () => {
  it("runs a claim and a refund in one transaction (the facilitator's refund path), or neither", async () => {
    const { payer, config, id } = await openChannel(100_000n);
    const rows = [await claimRow(payer, config, 15_000n)];
    const claimCall = encodeFunctionData({
      abi: batchSettlementAbi,
      functionName: "claimWithSignature",
      args: [claimArgs(rows), await signClaimBatch(t.receiverAuthorizer, rows)],
    });
    const refundCall = (amount: bigint, signature: Hex) =>
      encodeFunctionData({
        abi: batchSettlementAbi,
        functionName: "refundWithSignature",
        args: [config, amount, 0n, signature],
      });
    expect(
      await t.revertOf(t.relayer, "multicall", [
        [claimCall, refundCall(85_000n, await signRefund(stranger, config, 0n, 85_000n))],
      ]),
    ).toBe("InvalidAuthorizerSignature");
    expect(await t.read("channels", [id])).toEqual([100_000n, 0n]);
    await t.send(t.relayer, "multicall", [
      [claimCall, refundCall(85_000n, await signRefund(t.receiverAuthorizer, config, 0n, 85_000n))],
    ]);
    expect(await t.read("channels", [id])).toEqual([15_000n, 15_000n]);
    expect(await t.read("refundNonce", [id])).toBe(1n);
  });
});
