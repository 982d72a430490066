/**
 * Generated sequences of paid calls and refunds on one channel, on the local chain with the official
 * client: calls, partial and full refunds, a refund payload replayed, a refund while a call holds the
 * channel, and a call and a refund sent at the same moment. After every step the money is checked against
 * the chain and the ledger:
 *   - all the payer's USDC that left it sits in the channel (refunds came back, nothing went elsewhere);
 *   - charged = price × delivered answers = the ledger's rows;
 *   - claimed ≤ charged, and the payer is never out of less than it was charged;
 *   - right after a refund that moved money, everything charged is claimed (nothing left to lose).
 * A failure prints fast-check's seed and path (FC_SEED / FC_PATH replay it: docs/testing.md).
 */

import fs from "node:fs";
import { decodePaymentResponseHeader } from "@x402/core/http";
import { toClientEvmSigner } from "@x402/evm";
import { BatchSettlementEvmScheme, InMemoryClientChannelStorage } from "@x402/evm/batch-settlement/client";
import { wrapFetchWithPayment, x402Client } from "@x402/fetch";
import fc from "fast-check";
import { createPublicClient, http, keccak256, toHex } from "viem";
import { privateKeyToAccount } from "viem/accounts";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { BATCH_SETTLEMENT_ADDRESS, batchSettlementAbi } from "../../src/chain/batch-settlement.ts";
import { devPrivateKey } from "../../src/chain/dev-accounts.ts";
import { unitConvert } from "../../src/operations/unit-convert/index.ts";
import { openStore } from "../../src/store/open-store.ts";
import type { Store } from "../../src/store/store.ts";
import { buildOneRelease } from "../helpers/one-release.ts";
import { jsonPost, startTestService, type TestService, usdcBalances } from "../helpers/service.ts";

type Step =
  | { kind: "pay" }
  | { kind: "refund"; percent: number | null }
  | { kind: "replayRefund" }
  | { kind: "busyRefund" }
  | { kind: "payAndRefundAtOnce" };

const step: fc.Arbitrary<Step> = fc.oneof(
  { weight: 4, arbitrary: fc.constant({ kind: "pay" as const }) },
  {
    weight: 2,
    arbitrary: fc.record({
      kind: fc.constant("refund" as const),
      percent: fc.option(fc.integer({ min: 1, max: 150 }), { nil: null }),
    }),
  },
  { weight: 1, arbitrary: fc.constant({ kind: "replayRefund" as const }) },
  { weight: 1, arbitrary: fc.constant({ kind: "busyRefund" as const }) },
  { weight: 1, arbitrary: fc.constant({ kind: "payAndRefundAtOnce" as const }) },
);

describe("generated calls and refunds on one channel: the money adds up after every step", () => {
  let service: TestService;
  let ledger: Store;
  let work: string;
  let productUrl: string;
  let run = 0;

  beforeAll(async () => {
    const built = await buildOneRelease("csv-json-quality-toolkit", "utility402-refunds-generated-");
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
    if (work) fs.rmSync(work, { recursive: true, force: true });
  });

  it("conserves the payer's money, charges only what was delivered, claims everything charged on a refund", async () => {
    const rpcUrl = service.localChain?.rpcUrl as string;
    const publicClient = createPublicClient({ transport: http(rpcUrl), pollingInterval: 50 });
    const account = privateKeyToAccount(devPrivateKey(9));
    const balanceOf = usdcBalances(rpcUrl);
    await fc.assert(
      fc.asyncProperty(fc.array(step, { minLength: 1, maxLength: 7 }), async (steps) => {
        // A channel of its own per generated case (another salt), so cases never see each other's state.
        const salt = keccak256(toHex(`refunds-generated-${run++}`));
        const storage = new InMemoryClientChannelStorage();
        const scheme = new BatchSettlementEvmScheme(toClientEvmSigner(account, publicClient as never), {
          storage,
          salt,
        });
        const pay = wrapFetchWithPayment(
          fetch,
          new x402Client().register(service.config.payment.network, scheme),
        );
        const payerStart = await balanceOf(account.address);
        let delivered = 0n;
        let price = 0n;
        let channelId = "";
        let lastRefund: string | undefined;

        const call = async () => {
          const answer = await pay(`${service.url}${unitConvert.path}`, jsonPost(unitConvert.example.input));
          if (answer.status !== 200) return false;
          const settled = decodePaymentResponseHeader(answer.headers.get("payment-response") as string);
          channelId = (settled.extra as { channelState: { channelId: string } }).channelState.channelId;
          price = BigInt(settled.extra?.chargedAmount as string);
          delivered++;
          return true;
        };
        const refund = async (amount?: string) => {
          const recording: typeof fetch = async (request, init) => {
            const header = new Headers(init?.headers).get("payment-signature");
            if (header) lastRefund = header;
            return fetch(request, init);
          };
          return scheme.refund(productUrl, { fetch: recording, ...(amount ? { amount } : {}) });
        };
        const chain = async () => {
          const [balance, totalClaimed] = (await publicClient.readContract({
            address: BATCH_SETTLEMENT_ADDRESS,
            abi: batchSettlementAbi,
            functionName: "channels",
            args: [channelId as `0x${string}`],
          })) as [bigint, bigint];
          return { balance, totalClaimed };
        };
        const check = async (refunded: boolean) => {
          if (!channelId) return;
          const { balance, totalClaimed } = await chain();
          const channel = await ledger.vouchers.getChannel(channelId.toLowerCase());
          const charged = BigInt(channel?.chargedCumulativeAmount ?? "0");
          const out = payerStart - (await balanceOf(account.address));
          expect(out, "the payer's money that left it is in the channel").toBe(balance);
          expect(charged, "charged = price × delivered").toBe(price * delivered);
          expect(BigInt((await ledger.vouchers.charges(channelId.toLowerCase())).length)).toBe(delivered);
          expect(totalClaimed <= charged, "claimed ≤ charged").toBe(true);
          expect(out >= charged, "the payer is out of at least what it was charged").toBe(true);
          if (refunded) expect(totalClaimed, "a refund claims everything charged").toBe(charged);
        };

        await call();
        await check(false);
        for (const next of steps) {
          if (next.kind === "pay") {
            await call();
            await check(false);
          } else if (next.kind === "refund") {
            const { balance } = await chain();
            const rest = balance - price * delivered;
            const amount =
              next.percent === null ? undefined : String((rest * BigInt(next.percent)) / 100n || 1n);
            const outcome = await refund(amount).then(
              (settled) => settled,
              (error: Error) => error,
            );
            if (rest === 0n) expect(outcome).toBeInstanceOf(Error);
            else {
              const expected = amount === undefined || BigInt(amount) > rest ? rest : BigInt(amount);
              expect(outcome).toMatchObject({ success: true, amount: String(expected) });
            }
            await check(rest > 0n);
          } else if (next.kind === "replayRefund") {
            if (!lastRefund) continue;
            const { balance } = await chain();
            const rest = balance - price * delivered;
            const answer = await fetch(productUrl, { headers: { "payment-signature": lastRefund } });
            // The same signed refund again is a refund again (the payer's own money back, capped to the
            // rest) when its voucher still equals the charged amount; else nothing moves.
            if (answer.status === 200) expect(rest > 0n).toBe(true);
            else expect(answer.status).toBe(402);
            await check(answer.status === 200);
          } else if (next.kind === "busyRefund") {
            const owner = `in-flight-${run}`;
            const now = Date.now();
            await ledger.vouchers.takeChannel({
              channelId: channelId.toLowerCase(),
              owner,
              now,
              leaseUntil: now + 600_000,
            });
            const { balance } = await chain();
            await expect(refund()).rejects.toThrow();
            expect((await chain()).balance).toBe(balance);
            await ledger.vouchers.releaseCall(channelId.toLowerCase(), owner);
            await check(false);
          } else {
            // A call and a refund at the same moment: whichever takes the channel first goes, the other
            // waits (channel_busy) or follows the new state; the money adds up either way.
            // (A call after the refund may charge again: then not everything charged is claimed yet.)
            await Promise.allSettled([call(), refund()]);
            await check(false);
          }
        }
      }),
      { numRuns: 12, verbose: 1 },
    );
  });
});
