/**
 * The claim policy under generated histories (fast-check, seed printed): on one channel of the official
 * client, against the contract on the local chain, sequences of paid calls, answers lost on the way back,
 * replays of a lost answer's request, concurrent calls, a payer's withdrawal (initiateWithdraw), the chain's
 * clock moved towards its deadline (evm_increaseTime) and the withdrawal finalized. After every step:
 * - charged = delivered: the ledger's charges on the channel are exactly the 200s the service answered;
 * - claimed ≤ signed: the chain's totalClaimed is at most the highest voucher the client signed, and at
 *   most what was charged;
 * - nothing claimable is lost before the withdrawal deadline: once a withdrawal finalized, the chain shows
 *   every delivered charge claimed;
 * - a call the service accepts while a withdrawal is pending leaves time for its claim to land.
 * Cooperative refunds are not in the histories: this branch's gate refuses `refund` payloads.
 */
import { decodePaymentSignatureHeader } from "@x402/core/http";
import { InMemoryClientChannelStorage } from "@x402/evm/batch-settlement/client";
import { wrapFetchWithPayment } from "@x402/fetch";
import fc from "fast-check";
import { createWalletClient, http } from "viem";
import { privateKeyToAccount } from "viem/accounts";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { BATCH_SETTLEMENT_ADDRESS, batchSettlementAbi } from "../../src/chain/batch-settlement.ts";
import { devPrivateKey } from "../../src/chain/dev-accounts.ts";
import { jsonDiff } from "../../src/operations/json-diff/index.ts";
import { openStore } from "../../src/store/open-store.ts";
import type { Store } from "../../src/store/store.ts";
import { until } from "../helpers/processes.ts";
import { startTestService, type TestService } from "../helpers/service.ts";
import { officialVoucherClient, voucherChain } from "./voucher-chain.ts";

const PRICE = 10_000n; // json-diff, $0.01
const WITHDRAW_DELAY = 900; // the contract's least: the tightest window the claimer must meet
const WATCH_INTERVAL_MS = 200;
const PAYER = devPrivateKey(4);
const RUNS = Number(process.env.VOUCHER_CLAIMS_RUNS ?? 6);

type Step =
  | { kind: "pay" }
  | { kind: "lost" }
  | { kind: "replay" }
  | { kind: "concurrent"; calls: number }
  | { kind: "withdraw" }
  | { kind: "advance"; seconds: number }
  | { kind: "finalize" };

const step: fc.Arbitrary<Step> = fc.oneof(
  { weight: 5, arbitrary: fc.constant({ kind: "pay" as const }) },
  { weight: 2, arbitrary: fc.constant({ kind: "lost" as const }) },
  { weight: 2, arbitrary: fc.constant({ kind: "replay" as const }) },
  {
    weight: 2,
    arbitrary: fc.record({ kind: fc.constant("concurrent" as const), calls: fc.integer({ min: 2, max: 3 }) }),
  },
  { weight: 3, arbitrary: fc.constant({ kind: "withdraw" as const }) },
  {
    weight: 2,
    arbitrary: fc.record({
      kind: fc.constant("advance" as const),
      seconds: fc.integer({ min: 60, max: WITHDRAW_DELAY }),
    }),
  },
  { weight: 2, arbitrary: fc.constant({ kind: "finalize" as const }) },
);

describe("the claim policy under generated voucher histories", () => {
  let service: TestService;
  let ledger: Store;
  let runs = 0;
  /** What the histories did, printed: a property that exercised nothing proves nothing. */
  const seen = {
    delivered: 0,
    refusedClosing: 0,
    replayed: 0,
    withdrawals: 0,
    finalized: 0,
    claimedOnWithdrawal: 0,
  };

  beforeAll(async () => {
    // Before the service starts, so that it and the client read one clock, which the histories set to the chain's.
    vi.useFakeTimers({ toFake: ["Date"], shouldAdvanceTime: true });
    service = await startTestService(
      {
        X402_VOUCHERS: "on",
        X402_VOUCHER_WITHDRAW_DELAY_SECONDS: String(WITHDRAW_DELAY),
        X402_VOUCHER_WATCH_INTERVAL_MS: String(WATCH_INTERVAL_MS),
        // Five calls reach the threshold; the timer never fires within the test.
        X402_VOUCHER_CLAIM_THRESHOLD: String(PRICE * 5n),
        X402_VOUCHER_CLAIM_INTERVAL_MS: "86400000",
      },
      { operations: [jsonDiff] },
    );
    ledger = await openStore(service.config.database);
  });
  afterAll(async () => {
    vi.useRealTimers();
    await ledger?.close();
    await service?.stop();
  });

  it(`keeps charged = delivered, claimed ≤ signed, and loses nothing claimable before a withdrawal's deadline (${RUNS} histories)`, async () => {
    const rpcUrl = service.localChain?.rpcUrl as string;
    const on = voucherChain(rpcUrl);
    const network = service.config.payment.network as `${string}:${string}`;
    const url = `${service.url}${jsonDiff.path}`;
    const payerWallet = createWalletClient({ account: privateKeyToAccount(PAYER), transport: http(rpcUrl) });
    // From accepting a voucher to its claim landing, as the service counts it (serve.ts).
    const claimLandingSeconds = Math.ceil(
      (service.config.http.requestTimeoutMs +
        WATCH_INTERVAL_MS +
        service.config.payment.settlementTimeoutMs) /
        1000,
    );
    const chainNow = async () => Number((await on.client.getBlock({ blockTag: "latest" })).timestamp);
    const seed = Number(process.env.VOUCHER_CLAIMS_SEED ?? Date.now() % 2 ** 31);
    console.log(`voucher claims: seed ${seed} (VOUCHER_CLAIMS_SEED=${seed} replays it)`);

    await fc.assert(
      fc.asyncProperty(fc.array(step, { minLength: 8, maxLength: 20 }), async (steps) => {
        runs++;
        // The clock of this process (the client's and the in-process service's) follows the chain's, which
        // the histories move forward: an ERC-3009 deposit is signed valid until the client's now + timeout.
        // Never backwards: the service compares when its mirror was read with when the watch saw an event.
        vi.setSystemTime(Math.max(Date.now(), (await chainNow()) * 1000));
        // Each history on a channel of its own: the same payer, another salt.
        const salt =
          `0x${runs.toString(16).padStart(8, "0")}${Date.now().toString(16).padStart(56, "0")}` as const;
        const payer = officialVoucherClient(rpcUrl, network, PAYER, new InMemoryClientChannelStorage(), salt);

        let signed = 0n; // the highest voucher the client signed
        let delivered = 0n; // the sum of the 200s the service answered
        let channelId: string | undefined;
        let lost: { body: string; header: string; status: number; answer: string } | undefined;
        let withdrawal: { finalizableAt: number; claimedBefore: bigint } | undefined;
        let input = 0;
        const trail: string[] = [];

        /** A fetch that records every payment the client sends, and the answer's status. */
        const recording =
          (loseAnswer: boolean): typeof fetch =>
          async (request, init) => {
            const req = new Request(request, init);
            const header = req.headers.get("payment-signature");
            const body = await req.clone().text();
            const response = await fetch(req);
            if (!header) return response;
            const payload = decodePaymentSignatureHeader(header).payload as {
              voucher?: { channelId: string; maxClaimableAmount: string };
            };
            if (payload.voucher) {
              channelId ??= payload.voucher.channelId.toLowerCase();
              const ceiling = BigInt(payload.voucher.maxClaimableAmount);
              if (ceiling > signed) signed = ceiling;
            }
            const answer = await response.clone().text();
            if (response.status === 200) delivered += PRICE;
            if (loseAnswer) {
              lost = { body, header, status: response.status, answer };
              throw new TypeError("the answer was lost on the way back");
            }
            return response;
          };
        const payOnce = async (loseAnswer = false): Promise<number> => {
          const pay = wrapFetchWithPayment(recording(loseAnswer), payer.client);
          input++;
          const body = JSON.stringify({ before: { n: input, salt }, after: { n: input + 1 } });
          const closing = withdrawal && (await chainNow()) + claimLandingSeconds >= withdrawal.finalizableAt;
          const before = delivered;
          try {
            const response = await pay(url, {
              method: "POST",
              headers: { "content-type": "application/json" },
              body,
            });
            trail.push(`  -> ${response.status}`);
            await response.text();
          } catch (error) {
            // A lost answer, or the client giving up (it may refuse to sign): what the service answered counts.
            trail.push(`  -> ${loseAnswer ? "answer lost" : `client error: ${(error as Error).message}`}`);
          } // A call accepted while a withdrawal is pending must leave its claim the time to land.
          if (closing && delivered === before) seen.refusedClosing++;
          if (closing)
            expect(
              delivered,
              `accepted a voucher too close to the withdrawal's deadline\n${trail.join("\n")}`,
            ).toBe(before);
          seen.delivered += Number((delivered - before) / PRICE);
          return Number(delivered - before);
        };

        const check = async () => {
          if (!channelId) return;
          const charges = await ledger.vouchers.charges(channelId);
          const charged = charges.reduce((sum, charge) => sum + BigInt(charge.amount), 0n);
          const history = `\n${trail.join("\n")}`;
          expect(charged, `charged = delivered${history}`).toBe(delivered);
          const { totalClaimed } = await on.channel(channelId);
          expect(totalClaimed <= signed, `claimed ≤ signed${history}`).toBe(true);
          expect(totalClaimed <= charged, `claimed ≤ charged${history}`).toBe(true);
        };

        // Every history ends with a withdrawal that finalizes: nothing it answered may be lost to it.
        for (const next of [...steps, { kind: "withdraw" } as const, { kind: "finalize" } as const]) {
          trail.push(JSON.stringify(next));
          switch (next.kind) {
            case "pay":
              await payOnce();
              break;
            case "lost":
              await payOnce(true);
              break;
            case "replay": {
              if (!lost) break;
              const again = await fetch(url, {
                method: "POST",
                headers: { "content-type": "application/json", "payment-signature": lost.header },
                body: lost.body,
              });
              const answer = await again.text();
              // The kept answer to a delivered call, never a second charge; a refused one stays refused.
              if (lost.status === 200) {
                seen.replayed++;
                expect(again.status, `replay of a delivered call${trail.join("\n")}`).toBe(200);
                expect(JSON.parse(answer)).toEqual(JSON.parse(lost.answer));
              } else {
                expect(again.status).not.toBe(200);
              }
              break;
            }
            case "concurrent":
              await Promise.all(Array.from({ length: next.calls }, () => payOnce()));
              break;
            case "withdraw": {
              if (!channelId || withdrawal) break;
              const config = (await ledger.vouchers.getChannel(channelId))?.config;
              if (!config) break;
              // All the unclaimed escrow; a claim of the service landing meanwhile lowers it: read again.
              let initiated: { blockNumber: bigint } | undefined;
              let totalClaimed = 0n;
              for (let attempt = 0; attempt < 3 && !initiated; attempt++) {
                const state = await on.channel(channelId);
                totalClaimed = state.totalClaimed;
                if (state.balance <= state.totalClaimed) break;
                const hash = await payerWallet
                  .writeContract({
                    address: BATCH_SETTLEMENT_ADDRESS,
                    abi: batchSettlementAbi,
                    functionName: "initiateWithdraw",
                    args: [channelConfigArg(config), state.balance - state.totalClaimed],
                    chain: null,
                  })
                  .catch(() => undefined);
                const receipt = hash && (await on.client.waitForTransactionReceipt({ hash }));
                if (receipt && receipt.status === "success") initiated = receipt;
              }
              if (!initiated) break;
              const block = await on.client.getBlock({ blockNumber: initiated.blockNumber });
              withdrawal = {
                finalizableAt: Number(block.timestamp) + WITHDRAW_DELAY,
                claimedBefore: totalClaimed,
              };
              seen.withdrawals++;
              break;
            }
            case "advance": {
              if (!withdrawal) break;
              // The chain's clock moves, never past the deadline (that is "finalize"); the service's watch
              // reads the new time within an interval: the test waits a few of them before the next call.
              const room = withdrawal.finalizableAt - (await chainNow()) - 1;
              if (room <= 0) break;
              await on.rpc("evm_increaseTime", [Math.min(next.seconds, room)]);
              await on.rpc("evm_mine");
              await new Promise((resolve) => setTimeout(resolve, 10 * WATCH_INTERVAL_MS));
              break;
            }
            case "finalize": {
              if (!withdrawal || !channelId) break;
              // The delay is 900 s of the chain's time; the service gets up to a minute of real time to claim
              // (a hang guard: it claims within one watch interval and a claim's wait) before it passes.
              await until(
                "the pending withdrawal's channel claimed",
                async () =>
                  (await on.channel(channelId as string)).totalClaimed >= delivered ? true : undefined,
                60_000,
              ).catch(() => undefined);
              const wait = withdrawal.finalizableAt - (await chainNow());
              if (wait > 0) await on.rpc("evm_increaseTime", [wait]);
              await on.rpc("evm_mine");
              const config = (await ledger.vouchers.getChannel(channelId))?.config;
              const hash = await payerWallet.writeContract({
                address: BATCH_SETTLEMENT_ADDRESS,
                abi: batchSettlementAbi,
                functionName: "finalizeWithdraw",
                args: [channelConfigArg(config as NonNullable<typeof config>)],
                chain: null,
              });
              await on.client.waitForTransactionReceipt({ hash });
              const { claimedBefore } = withdrawal;
              withdrawal = undefined;
              seen.finalized++;
              const { totalClaimed } = await on.channel(channelId);
              if (totalClaimed > claimedBefore) seen.claimedOnWithdrawal++;
              expect(totalClaimed, `nothing claimable lost before the deadline\n${trail.join("\n")}`).toBe(
                delivered,
              );
              // Let the watch see the finalization before the next call (as "advance" does).
              await new Promise((resolve) => setTimeout(resolve, 10 * WATCH_INTERVAL_MS));
              break;
            }
          }
          await check();
        }
        if (process.env.VOUCHER_CLAIMS_TRACE) console.log(trail.join("\n"));
      }),
      { numRuns: RUNS, seed, endOnFailure: true },
    );
    console.log(`voucher claims: ${runs} histories passed (seed ${seed}): ${JSON.stringify(seen)}`);
    // Not vacuous: calls were delivered and withdrawals finalized against them.
    expect(seen.delivered).toBeGreaterThan(0);
    expect(seen.finalized).toBeGreaterThan(0);
  });
});

/** A stored channel config as the contract's ChannelConfig tuple. */
const channelConfigArg = (config: {
  payer: string;
  payerAuthorizer: string;
  receiver: string;
  receiverAuthorizer: string;
  token: string;
  withdrawDelay: number;
  salt: string;
}) => ({
  payer: config.payer as `0x${string}`,
  payerAuthorizer: config.payerAuthorizer as `0x${string}`,
  receiver: config.receiver as `0x${string}`,
  receiverAuthorizer: config.receiverAuthorizer as `0x${string}`,
  token: config.token as `0x${string}`,
  withdrawDelay: config.withdrawDelay,
  salt: config.salt as `0x${string}`,
});
