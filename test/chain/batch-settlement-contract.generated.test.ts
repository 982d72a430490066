/**
 * Model-based test of x402BatchSettlement on the local chain: generated sequences of deposits,
 * vouchers, claims (valid and out of bounds), refunds, timed withdrawals, clock jumps and settles run
 * against the contract and against a small model of one channel (balance, totalClaimed, pending
 * withdrawal, refund nonce, receiver's claimed/settled). After every step the chain must equal the
 * model, each refused step must fail with the error the model predicts, and the invariants hold:
 * tokens are conserved (payer + receiver + what the escrow gained = what the payer started with),
 * totalClaimed ≤ the largest voucher signed, balance ≥ totalClaimed.
 *
 * Seed: printed; FC_SEED=<seed> replays a run (docs/testing.md).
 */
import fc from "fast-check";
import type { Hex } from "viem";
import { generatePrivateKey, privateKeyToAccount } from "viem/accounts";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  BATCH_SETTLEMENT_ADDRESS,
  type ChannelConfig,
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
} from "./batch-settlement-fixture.ts";

const SEED = Number(process.env.FC_SEED ?? Date.now() % 2 ** 31);
const PAYER_FUNDS = 200_000n;
const DELAY = 900;

type Step =
  | { kind: "deposit"; amount: bigint }
  | { kind: "voucher"; increase: bigint }
  | { kind: "claim"; target: bigint }
  | { kind: "refund"; amount: bigint }
  | { kind: "initiate"; amount: bigint }
  | { kind: "advance"; seconds: number }
  | { kind: "finalize" }
  | { kind: "settle" };

const amount = (max: number) => fc.integer({ min: 1, max }).map(BigInt);
const step: fc.Arbitrary<Step> = fc.oneof(
  { weight: 3, arbitrary: fc.record({ kind: fc.constant("deposit" as const), amount: amount(120_000) }) },
  { weight: 4, arbitrary: fc.record({ kind: fc.constant("voucher" as const), increase: amount(30_000) }) },
  {
    weight: 4,
    arbitrary: fc.record({
      kind: fc.constant("claim" as const),
      target: fc.integer({ min: 0, max: 160_000 }).map(BigInt),
    }),
  },
  { weight: 2, arbitrary: fc.record({ kind: fc.constant("refund" as const), amount: amount(80_000) }) },
  { weight: 2, arbitrary: fc.record({ kind: fc.constant("initiate" as const), amount: amount(80_000) }) },
  {
    weight: 2,
    arbitrary: fc.record({ kind: fc.constant("advance" as const), seconds: fc.constantFrom(60, 600, DELAY) }),
  },
  { weight: 2, arbitrary: fc.record({ kind: fc.constant("finalize" as const) }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant("settle" as const) }) },
);

interface Model {
  wallet: bigint;
  balance: bigint;
  totalClaimed: bigint;
  signedMax: bigint;
  signature?: Hex;
  pending?: { amount: bigint; at: number };
  nonce: bigint;
  settled: bigint;
}

let t: EscrowChain;
beforeAll(async () => {
  t = await startEscrowChain();
});
afterAll(async () => {
  await t?.stop();
});

/** Math.min for bigints. */
function smaller(a: bigint, b: bigint): bigint {
  if (a < b) return a;
  return b;
}

async function latestTimestamp(): Promise<number> {
  return Number((await t.client.getBlock()).timestamp);
}

/** Runs one step on chain and in the model; a refused step must be refused with the predicted error. */
async function run(
  s: Step,
  m: Model,
  ctx: { payer: ReturnType<typeof privateKeyToAccount>; config: ChannelConfig },
): Promise<void> {
  const { payer, config } = ctx;
  const available = m.balance - m.totalClaimed;
  const expectRevert = async (fn: string, args: readonly unknown[], error: string) =>
    expect(
      await t.revertOf(t.relayer, fn, args),
      `${fn} ${JSON.stringify(s, (_, v) => (typeof v === "bigint" ? `${v}` : v))}`,
    ).toBe(error);
  switch (s.kind) {
    case "deposit": {
      const args = [
        config,
        s.amount,
        ERC3009_DEPOSIT_COLLECTOR_ADDRESS,
        await depositAuthorization(payer, config, s.amount),
      ];
      if (s.amount > m.wallet) return expectRevert("deposit", args, "ERC20: transfer amount exceeds balance");
      await t.send(t.relayer, "deposit", args);
      m.wallet -= s.amount;
      m.balance += s.amount;
      return;
    }
    case "voucher":
      m.signedMax += s.increase;
      m.signature = await voucherSignature(payer, config, m.signedMax);
      return;
    case "claim": {
      if (!m.signature) return;
      const rows = [
        { config, maxClaimableAmount: m.signedMax, signature: m.signature, totalClaimed: s.target },
      ];
      const args = [claimArgs(rows), await signClaimBatch(t.receiverAuthorizer, rows)];
      if (s.target > m.signedMax) return expectRevert("claimWithSignature", args, "ClaimExceedsVoucher");
      if (s.target > m.balance) return expectRevert("claimWithSignature", args, "ClaimExceedsBalance");
      if (s.target < m.totalClaimed) return expectRevert("claimWithSignature", args, "ClaimBelowClaimed");
      await t.send(t.relayer, "claimWithSignature", args);
      m.totalClaimed = s.target;
      return;
    }
    case "refund": {
      const args = [
        config,
        s.amount,
        m.nonce,
        await signRefund(t.receiverAuthorizer, config, m.nonce, s.amount),
      ];
      await t.send(t.relayer, "refundWithSignature", args);
      m.nonce += 1n;
      const refunded = smaller(s.amount, available);
      m.balance -= refunded;
      m.wallet += refunded;
      if (m.pending && refunded > 0n) {
        if (refunded >= m.pending.amount) m.pending = undefined;
        else m.pending.amount -= refunded;
      }
      // Replaying the same signature is refused: the nonce has moved on.
      return expectRevert("refundWithSignature", args, "InvalidRefundNonce");
    }
    case "initiate": {
      const args = [config, s.amount];
      if (m.pending)
        return expect(await t.revertOf(payer, "initiateWithdraw", args)).toBe("WithdrawAlreadyPending");
      if (s.amount > available)
        return expect(await t.revertOf(payer, "initiateWithdraw", args)).toBe("WithdrawExceedsAvailable");
      const hash = await t.send(payer, "initiateWithdraw", args);
      const receipt = await t.client.getTransactionReceipt({ hash });
      m.pending = {
        amount: s.amount,
        at: Number((await t.client.getBlock({ blockNumber: receipt.blockNumber })).timestamp),
      };
      return;
    }
    case "advance":
      return t.advance(s.seconds);
    case "finalize": {
      if (!m.pending)
        return expect(await t.revertOf(payer, "finalizeWithdraw", [config])).toBe("NoPendingWithdrawal");
      const due = m.pending.at + DELAY;
      const now = await latestTimestamp();
      // The next block's timestamp is later than the latest by an amount the model does not know:
      // predict only with a margin, and step the clock past the boundary otherwise.
      if (now + 30 < due)
        return expect(await t.revertOf(payer, "finalizeWithdraw", [config])).toBe("WithdrawDelayNotElapsed");
      if (now < due) await t.advance(due - now);
      await t.send(payer, "finalizeWithdraw", [config]);
      const withdrawn = smaller(m.pending.amount, available);
      m.balance -= withdrawn;
      m.wallet += withdrawn;
      m.pending = undefined;
      return;
    }
    case "settle":
      await t.send(t.relayer, "settle", [config.receiver, USDC]);
      m.settled = m.totalClaimed;
      return;
  }
}

describe("x402BatchSettlement against a model of one channel", () => {
  it("keeps the chain equal to the model and the invariants after every generated step", async () => {
    console.log(`batch-settlement contract model: fast-check seed ${SEED} (FC_SEED=${SEED} replays it)`);
    let steps = 0;
    await fc.assert(
      fc.asyncProperty(fc.array(step, { minLength: 1, maxLength: 12 }), async (generated) => {
        const payer = await t.newPayer(PAYER_FUNDS);
        // A fresh receiver per run: its totals and balance are this run's alone.
        const receiver = privateKeyToAccount(generatePrivateKey()).address;
        const config = channelConfig(payer.address, {
          receiver,
          receiverAuthorizer: t.receiverAuthorizer.address,
        });
        const id = channelIdOf(config);
        const escrowStart = await t.usdc(BATCH_SETTLEMENT_ADDRESS);
        const m: Model = {
          wallet: PAYER_FUNDS,
          balance: 0n,
          totalClaimed: 0n,
          signedMax: 0n,
          nonce: 0n,
          settled: 0n,
        };
        for (const s of generated) {
          await run(s, m, { payer, config });
          steps += 1;
          const [balance, totalClaimed] = await t.read<[bigint, bigint]>("channels", [id]);
          expect([balance, totalClaimed]).toEqual([m.balance, m.totalClaimed]);
          const [pendingAmount, initiatedAt] = await t.read<[bigint, number]>("pendingWithdrawals", [id]);
          expect([pendingAmount, initiatedAt]).toEqual(
            m.pending ? [m.pending.amount, m.pending.at] : [0n, 0],
          );
          expect(await t.read("refundNonce", [id])).toBe(m.nonce);
          expect(await t.read("receivers", [receiver, USDC])).toEqual([m.totalClaimed, m.settled]);
          const wallet = await t.usdc(payer.address);
          const received = await t.usdc(receiver);
          const escrowGained = (await t.usdc(BATCH_SETTLEMENT_ADDRESS)) - escrowStart;
          expect(wallet).toBe(m.wallet);
          expect(received).toBe(m.settled);
          expect(wallet + received + escrowGained).toBe(PAYER_FUNDS);
          expect(escrowGained).toBe(balance - m.settled);
          expect(totalClaimed <= m.signedMax).toBe(true);
          expect(balance >= totalClaimed).toBe(true);
        }
      }),
      { seed: SEED, numRuns: Number(process.env.FC_NUM_RUNS ?? 30), endOnFailure: true },
    );
    console.log(`batch-settlement contract model: ${steps} steps checked`);
    expect(steps).toBeGreaterThan(0);
  }, 600_000);
});
