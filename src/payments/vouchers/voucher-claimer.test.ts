import type { PaymentPayload, PaymentRequirements, SettleResponse } from "@x402/core/types";
import pino from "pino";
import { describe, expect, it } from "vitest";
import type { ChannelRecord, VoucherChannelStore } from "../../store/voucher-channels.ts";
import { type ChannelOnchain, VoucherClaimer } from "./voucher-claimer.ts";
import { withdrawalClosesBeforeClaim } from "./withdrawal-watch.ts";

const PAY_TO = "0x70997970c51812dc3a010c7d01b50e0d17dc79c8";
const quote = {
  scheme: "batch-settlement",
  network: "eip155:8453",
  asset: "0x833589fcd6edb6e08f4c7c32d4f71b54bda02913",
  amount: "10000",
  payTo: PAY_TO,
  maxTimeoutSeconds: 60,
  extra: {},
} as PaymentRequirements;

const channel = (
  id: string,
  charged: string,
  onchain?: Partial<ChannelRecord["onchain"]>,
): ChannelRecord => ({
  channelId: id,
  network: quote.network,
  config: {
    payer: "0x15d34aaf54267db7d7c367839aaf71a00a2c6a65",
    payerAuthorizer: "0x15d34aaf54267db7d7c367839aaf71a00a2c6a65",
    receiver: PAY_TO,
    receiverAuthorizer: "0xf39fd6e51aad88f6f4ce6ab8827279cfffb92266",
    token: quote.asset,
    withdrawDelay: 900,
    salt: `0x${"00".repeat(32)}`,
  },
  chargedCumulativeAmount: charged,
  signedMaxClaimable: charged,
  signature: "0xsig",
  onchain: { balance: "1000000", totalClaimed: "0", withdrawRequestedAt: 0, refundNonce: "0", ...onchain },
  onchainSyncedAt: 1,
  lastRequestAt: 1,
});

/** A claimer over fixed channels and chain state, recording what it asks the facilitator. */
function claimerOf(
  channels: ChannelRecord[],
  chain: Record<string, ChannelOnchain>,
  settle?: SettleResponse[],
) {
  const asked: Record<string, unknown>[] = [];
  const answers = [...(settle ?? [])];
  const claimer = new VoucherClaimer({
    store: { channels: async () => channels } as VoucherChannelStore,
    facilitator: {
      settle: async (payment: PaymentPayload) => {
        asked.push(payment.payload);
        return (
          answers.shift() ?? ({ success: true, transaction: "0x1", network: quote.network } as SettleResponse)
        );
      },
    },
    quote,
    readChannel: async (id) => chain[id] ?? { balance: 0n, totalClaimed: 0n },
    threshold: 50_000n,
    intervalMs: 60_000,
    log: pino({ level: "silent" }),
  });
  return { claimer, asked };
}

describe("the voucher claimer's policy", () => {
  it("claims a channel at once when its unclaimed value reaches the threshold or a withdrawal is pending, not before", async () => {
    const chain = { "0xa": { balance: 1_000_000n, totalClaimed: 0n } };
    const roundAfter = async (charge: (claimer: VoucherClaimer) => void) => {
      const { claimer, asked } = claimerOf([channel("0xa", "40000")], chain);
      charge(claimer);
      await new Promise((resolve) => setTimeout(resolve, 0)); // the fakes answer within one tick
      return asked.length > 0;
    };
    expect(await roundAfter((claimer) => claimer.charged(channel("0xa", "40000")))).toBe(false);
    expect(
      await roundAfter((claimer) => claimer.charged(channel("0xa", "40000", { totalClaimed: "0" }))),
    ).toBe(false);
    expect(await roundAfter((claimer) => claimer.charged(channel("0xa", "50000")))).toBe(true);
    expect(
      await roundAfter((claimer) => claimer.charged(channel("0xa", "60000", { totalClaimed: "20000" }))),
    ).toBe(false);
    expect(
      await roundAfter((claimer) => claimer.charged(channel("0xa", "10000", { withdrawRequestedAt: 5 }))),
    ).toBe(true);
    expect(await roundAfter((claimer) => claimer.charged(channel("0xa", "10000"), true))).toBe(true);
  });

  it("never claims above a channel's balance (a withdrawal took the rest), which would revert the whole batch", async () => {
    const { claimer, asked } = claimerOf([channel("0xa", "30000"), channel("0xb", "20000")], {
      "0xa": { balance: 10_000n, totalClaimed: 0n },
      "0xb": { balance: 1_000_000n, totalClaimed: 0n },
    });
    await claimer.claimAll();
    const claim = asked.find((payload) => payload.type === "claim") as {
      claims: { voucher: { maxClaimableAmount: string }; totalClaimed: string }[];
    };
    expect(claim.claims.map((row) => [row.voucher.maxClaimableAmount, row.totalClaimed])).toEqual([
      ["30000", "10000"],
      ["20000", "20000"],
    ]);
  });

  it("settles again on the next round when a settle failed, and not once it went through", async () => {
    const { claimer, asked } = claimerOf(
      [channel("0xa", "30000")],
      { "0xa": { balance: 1_000_000n, totalClaimed: 30_000n } },
      [
        {
          success: false,
          errorReason: "invalid_batch_settlement_evm_settle_transaction_failed",
        } as SettleResponse,
      ],
    );
    await claimer.claimAll();
    await claimer.claimAll();
    await claimer.claimAll();
    expect(asked.map((payload) => payload.type)).toEqual(["settle", "settle"]);
  });
});

describe("a pending withdrawal's deadline against a claim's landing", () => {
  it("refuses from the moment a claim could no longer land before the withdrawal finalizes", () => {
    const requestedAt = 1_000;
    const delay = 900;
    const landing = 30_000;
    const deadlineMs = (requestedAt + delay) * 1000;
    expect(withdrawalClosesBeforeClaim({ withdrawRequestedAt: 0 }, delay, deadlineMs, landing)).toBe(false);
    expect(
      withdrawalClosesBeforeClaim(
        { withdrawRequestedAt: requestedAt },
        delay,
        deadlineMs - landing - 1,
        landing,
      ),
    ).toBe(false);
    expect(
      withdrawalClosesBeforeClaim({ withdrawRequestedAt: requestedAt }, delay, deadlineMs - landing, landing),
    ).toBe(true);
  });
});
