import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { registerExactEvmScheme } from "@x402/evm/exact/client";
import { wrapFetchWithPayment, x402Client } from "@x402/fetch";
import fc from "fast-check";
import pino from "pino";
import { privateKeyToAccount } from "viem/accounts";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import {
  dayIn,
  guardClient,
  recordReceipts,
  type SpendPolicy,
} from "../../products/agent-safe-paid-work-kit/lib/index.mjs";
import { devAccount, devPrivateKey } from "../../src/chain/dev-accounts.ts";
import { type LocalChain, startLocalChain } from "../../src/chain/local-chain.ts";
import { BASE_USDC_ADDRESS } from "../../src/config.ts";
import {
  finalizeHead,
  mineAtNow,
  type Offer,
  type Receipt,
  startHostileSeller,
  startOtherChainRpc,
} from "../helpers/hostile-x402-seller.ts";
import { chainRpc } from "../helpers/payment-faults.ts";
import { freePort } from "../helpers/service.ts";

/**
 * The agent-safe paid work kit's guard against a generated hostile seller, model-based: the real
 * @x402/fetch + @x402/evm client signs real EIP-3009 authorizations, a local chain (anvil with
 * Circle's USDC) is the oracle, and after every step one invariant is checked: of everything the
 * seller holds, what the chain has honoured or could still honour never exceeds any limit of the
 * policy (per payment, per day in the policy's time zone, per payee per day, payments per minute),
 * and nothing goes to a payee or asset the policy does not allow.
 *
 * The seller is generated: x402 v1 or v2, one to three offered entries whose prices change between
 * quotes, validity down to 2 s, receipts honest (settled on chain), absent, lying (an invented
 * transaction) or `success: false` (settling anyway, or not); it takes any authorization it holds to
 * the chain whenever it likes, before or after validBefore. Between steps the clock moves (the
 * test's Date and the chain's block time together; the chain finalizes the new head, or not yet),
 * and the buyer's process restarts (a new guard on the same ledger file). The chain itself is
 * hostile too: the seller forks the head and later reorganises back to the fork (never below the
 * finalized block), then takes every authorization it holds to the chain at the fork's time; and
 * the policy's RPC may be served by another chain (its own chain id, which never saw the nonces). Seeded: GUARD_MODEL_SEED replays a run, GUARD_MODEL_RUNS sets how many.
 */

const SEED = Number(process.env.GUARD_MODEL_SEED ?? Math.floor(Math.random() * 2 ** 31));
const RUNS = Number(process.env.GUARD_MODEL_RUNS ?? 15);

const PAYEES = [devAccount(1).address, devAccount(5).address] as const;
const BLOCKED = devAccount(6).address;
const OTHER_ASSET = "0x1111111111111111111111111111111111111111" as const;
const payerKey = devPrivateKey(2);

type Step =
  | {
      kind: "terms";
      version: 1 | 2;
      quotes: Offer[][];
      maxTimeoutSeconds: number;
      receipt: Receipt;
    }
  | { kind: "pay"; concurrent: number; guards: number }
  | { kind: "advance"; seconds: number; finalize: boolean }
  | { kind: "fork" }
  | { kind: "reorg" }
  | { kind: "settle"; pick: number }
  | { kind: "restart" };

const offer = fc.record({
  amount: fc.constantFrom("1", "9999", "10000", "20000", "35000", "50000", "60000"),
  payTo: fc.constantFrom<`0x${string}`>(...PAYEES, ...PAYEES, BLOCKED),
  asset: fc.constantFrom<`0x${string}` | undefined>(undefined, undefined, undefined, OTHER_ASSET),
});
const terms = fc.record({
  kind: fc.constant("terms" as const),
  version: fc.constantFrom(1 as const, 2 as const),
  quotes: fc.array(fc.array(offer, { minLength: 1, maxLength: 3 }), { minLength: 1, maxLength: 3 }),
  maxTimeoutSeconds: fc.constantFrom(2, 2, 3, 5, 30, 300),
  receipt: fc.constantFrom<Receipt>("honest", "none", "lying", "false", "false-but-settled"),
});
const step: fc.Arbitrary<Step> = fc.oneof(
  { weight: 2, arbitrary: terms },
  {
    weight: 5,
    arbitrary: fc.record({
      kind: fc.constant("pay" as const),
      concurrent: fc.integer({ min: 1, max: 4 }),
      guards: fc.integer({ min: 1, max: 2 }),
    }),
  },
  {
    weight: 3,
    arbitrary: fc.record({
      kind: fc.constant("advance" as const),
      seconds: fc.constantFrom(1, 2, 3, 10, 61, 600, 4 * 3600, 9 * 3600),
      finalize: fc.boolean(),
    }),
  },
  { weight: 2, arbitrary: fc.record({ kind: fc.constant("fork" as const) }) },
  { weight: 2, arbitrary: fc.record({ kind: fc.constant("reorg" as const) }) },
  { weight: 3, arbitrary: fc.record({ kind: fc.constant("settle" as const), pick: fc.nat() }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant("restart" as const) }) },
);
const scenario = fc.record({
  timeZone: fc.constantFrom("UTC", "Asia/Tokyo", "America/New_York", "Pacific/Chatham"),
  rpc: fc.constantFrom("own chain" as const, "own chain" as const, "another chain" as const),
  first: terms,
  steps: fc.array(step, { minLength: 5, maxLength: 25 }),
});

describe("paid work kit guard: model-based, against a generated hostile seller on a local chain", () => {
  let chain: LocalChain;
  const dirs: string[] = [];
  // The policy's RPC served by another chain: its own id, and it never saw the payer's nonces.
  let otherChain: Awaited<ReturnType<typeof startOtherChainRpc>>;
  beforeAll(async () => {
    chain = await startLocalChain({ port: await freePort(), log: pino({ level: "silent" }) });
    otherChain = await startOtherChainRpc(chain.rpcUrl);
    // One clock for the signer, the guard and the seller (Date only: timers and I/O run as usual);
    // the chain's block time is moved with it.
    vi.useFakeTimers({ toFake: ["Date"] });
    const latest = (await chainRpc(chain.rpcUrl, "eth_getBlockByNumber", ["latest", false])) as {
      timestamp: string;
    };
    vi.setSystemTime(Math.max(Date.now(), (Number(BigInt(latest.timestamp)) + 1) * 1000));
  }, 120_000);
  afterAll(async () => {
    vi.useRealTimers();
    await otherChain?.close();
    await chain?.stop();
    for (const dir of dirs) fs.rmSync(dir, { recursive: true, force: true });
  });

  it(`never lets the seller hold more than the policy allows (seed ${SEED}, ${RUNS} runs)`, async () => {
    console.log(`paid-work-kit model: seed ${SEED}, ${RUNS} runs (replay with GUARD_MODEL_SEED=${SEED})`);
    let stepsRun = 0;
    const seen = { signed: 0, refused: 0, usedOnChain: 0, v1: 0, reorgs: 0, otherChain: 0 };
    await fc.assert(
      fc.asyncProperty(scenario, async ({ timeZone, rpc, first, steps }) => {
        const dir = fs.mkdtempSync(path.join(os.tmpdir(), "utility402-guard-model-"));
        dirs.push(dir);
        const ledgerPath = path.join(dir, "ledger.jsonl");
        const policy: SpendPolicy = {
          version: 1,
          networks: ["eip155:8453"],
          assets: [BASE_USDC_ADDRESS],
          maxPerPayment: "50000",
          maxPerDay: "100000",
          maxPerPayeePerDay: "70000",
          maxPaymentsPerMinute: 6,
          blockedPayees: [BLOCKED],
          timeZone,
          rpc: { "eip155:8453": rpc === "own chain" ? chain.rpcUrl : otherChain.url },
        };
        if (rpc === "another chain") seen.otherChain++;
        let fork: { id: string; block: bigint } | undefined;
        const termsOf = (s: Extract<Step, { kind: "terms" }>) => ({
          version: s.version,
          offers: (quote: number) => s.quotes[quote % s.quotes.length] as Offer[],
          maxTimeoutSeconds: s.maxTimeoutSeconds,
          receipt: s.receipt,
        });
        const seller = await startHostileSeller({
          rpcUrl: chain.rpcUrl,
          relayer: devAccount(0),
          terms: termsOf(first),
        });
        const guardedFetch = () => {
          const client = guardClient(
            registerExactEvmScheme(new x402Client(), { signer: privateKeyToAccount(payerKey) }),
            { policy, ledgerPath },
          );
          return wrapFetchWithPayment(recordReceipts(fetch, client), client);
        };
        // Two guards on one ledger file: two processes of the same agent, spending from one budget.
        let guards = [guardedFetch(), guardedFetch()];
        const log: string[] = [`rpc: ${rpc}`];

        const checkInvariant = async () => {
          const { time, used } = await seller.chainView();
          const live = seller.held.filter((a, i) => used[i] || BigInt(a.validBefore) > time);
          const byDay = new Map<string, bigint>();
          const byDayPayee = new Map<string, bigint>();
          for (const a of live) {
            const day = dayIn(timeZone, new Date(a.receivedAt));
            byDay.set(day, (byDay.get(day) ?? 0n) + BigInt(a.value));
            const key = `${day} ${a.to.toLowerCase()}`;
            byDayPayee.set(key, (byDayPayee.get(key) ?? 0n) + BigInt(a.value));
          }
          const problems: string[] = [];
          for (const [day, sum] of byDay) {
            if (sum > BigInt(policy.maxPerDay))
              problems.push(`day ${day}: ${sum} > maxPerDay ${policy.maxPerDay}`);
          }
          for (const [key, sum] of byDayPayee) {
            if (sum > BigInt(policy.maxPerPayeePerDay as string)) {
              problems.push(`${key}: ${sum} > maxPerPayeePerDay ${policy.maxPerPayeePerDay}`);
            }
          }
          for (const a of seller.held) {
            if (BigInt(a.value) > BigInt(policy.maxPerPayment))
              problems.push(`${a.nonce}: ${a.value} > maxPerPayment`);
            if (a.to.toLowerCase() === BLOCKED.toLowerCase())
              problems.push(`${a.nonce}: paid a blocked payee`);
            const inMinute = seller.held.filter(
              (b) => b.receivedAt <= a.receivedAt && b.receivedAt > a.receivedAt - 60_000,
            );
            if (inMinute.length > (policy.maxPaymentsPerMinute as number)) {
              problems.push(`${inMinute.length} payments within a minute`);
            }
          }
          if (problems.length > 0) {
            const held = seller.held.map(
              (a, i) =>
                `${a.value}→${a.to.slice(0, 6)} v${a.version} validBefore ${a.validBefore} used ${used[i]}`,
            );
            throw new Error(
              `invariant broken after: ${log.join(" | ")}\n${[...new Set(problems)].join("\n")}\nchain time ${time}; held:\n${held.join("\n")}`,
            );
          }
        };

        try {
          for (const s of steps) {
            stepsRun++;
            switch (s.kind) {
              case "terms":
                seller.setTerms(termsOf(s));
                log.push(
                  `terms v${s.version} ${s.receipt} ${s.maxTimeoutSeconds}s ${JSON.stringify(s.quotes.map((q) => q.map((o) => o.amount)))}`,
                );
                break;
              case "pay": {
                const results = await Promise.allSettled(
                  Array.from({ length: s.concurrent }, (_, i) =>
                    (guards[i % s.guards] as typeof fetch)(seller.url),
                  ),
                );
                seen.refused += results.filter((r) => r.status === "rejected").length;
                for (const result of results) {
                  // A refusal by the guard (or by the client's own spend controls, for a token it does not
                  // know) is the work being done; anything else is a defect to see.
                  if (
                    result.status === "rejected" &&
                    !/spend policy|budget guard|rejected by spendControls/.test(
                      String(result.reason?.message),
                    )
                  ) {
                    throw result.reason;
                  }
                }
                log.push(
                  `pay×${s.concurrent}/${s.guards}: ${results.map((r) => (r.status === "fulfilled" ? r.value.status : "refused")).join(",")}`,
                );
                break;
              }
              case "advance":
                vi.setSystemTime(Date.now() + s.seconds * 1000);
                await mineAtNow(chain.rpcUrl);
                if (s.finalize) await finalizeHead(chain.rpcUrl);
                log.push(`+${s.seconds}s${s.finalize ? " finalized" : ""}`);
                break;
              case "fork": {
                const head = (await chainRpc(chain.rpcUrl, "eth_blockNumber", [])) as string;
                fork = {
                  id: (await chainRpc(chain.rpcUrl, "evm_snapshot", [])) as string,
                  block: BigInt(head),
                };
                log.push(`fork at ${fork.block}`);
                break;
              }
              case "reorg": {
                // A reorganisation replaces only blocks that are not final yet.
                const finalized = (await chainRpc(chain.rpcUrl, "eth_getBlockByNumber", [
                  "finalized",
                  false,
                ])) as {
                  number: string;
                };
                if (!fork || fork.block < BigInt(finalized.number)) {
                  log.push("reorg: none possible");
                  break;
                }
                await chainRpc(chain.rpcUrl, "evm_revert", [fork.id]);
                log.push(`reorg to ${fork.block}`);
                fork = undefined;
                seen.reorgs++;
                for (const held of [...seller.held]) {
                  const { settled } = await seller.settle(held, { atChainTime: true });
                  if (settled) log.push(`settle ${held.value} after the reorg`);
                }
                break;
              }
              case "settle": {
                const target = seller.held[s.pick % Math.max(1, seller.held.length)];
                if (target) log.push(`settle ${target.value}: ${(await seller.settle(target)).settled}`);
                break;
              }
              case "restart":
                guards = [guardedFetch(), guardedFetch()];
                log.push("restart");
                break;
            }
            await checkInvariant();
          }
          const { used } = await seller.chainView();
          seen.signed += seller.held.length;
          seen.v1 += seller.held.filter((a) => a.version === 1).length;
          seen.usedOnChain += used.filter(Boolean).length;
        } finally {
          await seller.close();
        }
      }),
      { seed: SEED, numRuns: RUNS, endOnFailure: true },
    );
    console.log(
      `paid-work-kit model: ${RUNS} runs, ${stepsRun} steps, invariant held after each; ${seen.signed} authorizations signed (${seen.v1} x402 v1), ${seen.usedOnChain} used on chain, ${seen.refused} payments refused, ${seen.reorgs} reorganisations, ${seen.otherChain} runs with the RPC of another chain`,
    );
    // The generator must reach what it is for: payments made, refused, and taken to the chain.
    expect(stepsRun).toBeGreaterThan(RUNS * 5);
    expect(seen.signed).toBeGreaterThan(RUNS);
    expect(seen.usedOnChain).toBeGreaterThan(0);
    expect(seen.refused).toBeGreaterThan(0);
  }, 900_000);
});
