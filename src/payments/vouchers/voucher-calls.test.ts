import { createHash } from "node:crypto";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import fc from "fast-check";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { dropSchema, freshSchemaName, testDatabaseUrl } from "../../../test/helpers/postgres.ts";
import { PostgresStore } from "../../store/postgres/postgres-store.ts";
import { SqliteStore } from "../../store/sqlite/sqlite-store.ts";
import type { Store, StoredOutcome } from "../../store/store.ts";
import type { ChannelConfig } from "../../store/voucher-channels.ts";
import { type HandlerResult, type VoucherCall, VoucherCalls, type VoucherVerdict } from "./voucher-calls.ts";

/**
 * Voucher-paid calls on both stores, each with two instances sharing one database (two SQLite handles
 * on one file, two PostgreSQL pools on one schema). The chain is a model here (a balance and a
 * totalClaimed per channel, vouchers "signed" by a hash of the payer's secret): this tests the server's
 * channel state, its serialisation and its ledger; the chain-backed run is the e2e test's.
 */

interface Instances {
  stores: [Store, Store];
  dispose(): Promise<void>;
}

const LEASE_MS = 60_000;
const signature = (channelId: string, max: bigint | string, secret = "payer-secret") =>
  `0x${createHash("sha256").update(`${secret}:${channelId}:${max}`).digest("hex")}`;

/** The stand-in chain: what the facilitator's verify would read and check. */
class ModelChain {
  readonly channels = new Map<string, { balance: bigint; totalClaimed: bigint }>();
  verify(channelId: string, max: string, sig: string): VoucherVerdict {
    const onchain = this.channels.get(channelId);
    if (!onchain || onchain.balance === 0n)
      return { valid: false, reason: "invalid_batch_settlement_evm_channel_not_found" };
    if (sig !== signature(channelId, max))
      return { valid: false, reason: "invalid_batch_settlement_evm_voucher_signature" };
    if (BigInt(max) > onchain.balance)
      return { valid: false, reason: "invalid_batch_settlement_evm_cumulative_exceeds_balance" };
    return {
      valid: true,
      syncedAt: Date.now(),
      onchain: {
        balance: onchain.balance.toString(),
        totalClaimed: onchain.totalClaimed.toString(),
        withdrawRequestedAt: 0,
        refundNonce: "0",
      },
    };
  }
}

const config = (channelId: string): ChannelConfig => ({
  payer: `0x${channelId.slice(2, 42)}`,
  payerAuthorizer: `0x${"1".repeat(40)}`,
  receiver: `0x${"2".repeat(40)}`,
  receiverAuthorizer: `0x${"3".repeat(40)}`,
  token: `0x${"4".repeat(40)}`,
  withdrawDelay: 86_400,
  salt: `0x${"0".repeat(64)}`,
});

const answer = (body: string): StoredOutcome => ({
  status: 200,
  headers: { "content-type": "application/json" },
  body,
});

interface CallSpec {
  channelId: string;
  max: string;
  sig?: string;
  requestHash: string;
  price: bigint;
  handler?: "ok" | "fails" | "throws";
  body?: string;
  delayMs?: number;
}

function voucherCall(chain: ModelChain, spec: CallSpec): VoucherCall {
  const sig = spec.sig ?? signature(spec.channelId, spec.max);
  return {
    channelId: spec.channelId,
    network: "eip155:8453",
    config: config(spec.channelId),
    voucher: { maxClaimableAmount: spec.max, signature: sig },
    payloadHash: createHash("sha256").update(`${spec.channelId}:${spec.max}:${sig}`).digest("hex"),
    requestHash: spec.requestHash,
    door: "http",
    operationId: "unit-convert",
    requestId: `req-${spec.requestHash}`,
    price: spec.price.toString(),
    verify: async () => chain.verify(spec.channelId, spec.max, sig),
    run: async (): Promise<HandlerResult> => {
      if (spec.delayMs) await new Promise((resolve) => setTimeout(resolve, spec.delayMs));
      if (spec.handler === "throws") throw new Error("handler crashed");
      if (spec.handler === "fails") return { ok: false, outcome: answer('{"error":"upstream"}') };
      return { ok: true, outcome: answer(spec.body ?? `{"request":"${spec.requestHash}"}`) };
    },
  };
}

function describeOnStores(name: string, open: () => Promise<Instances>) {
  describe(`voucher calls on ${name}, two instances`, () => {
    let instances: Instances;
    let calls: [VoucherCalls, VoucherCalls];
    let counter = 0;
    const freshChannel = () =>
      `0x${createHash("sha256").update(`${name}:${++counter}:${Math.random()}`).digest("hex")}`;

    beforeAll(async () => {
      instances = await open();
      calls = [
        new VoucherCalls({ store: instances.stores[0].vouchers, leaseMs: LEASE_MS }),
        new VoucherCalls({ store: instances.stores[1].vouchers, leaseMs: LEASE_MS }),
      ];
    });
    afterAll(async () => {
      await instances?.dispose();
    });

    it("charges a delivered call once, gives a retry of the same voucher the kept answer, and rejects an old voucher for another request", async () => {
      const chain = new ModelChain();
      const channelId = freshChannel();
      chain.channels.set(channelId, { balance: 100_000n, totalClaimed: 0n });
      const first = await calls[0].call(
        voucherCall(chain, { channelId, max: "1000", requestHash: "r1", price: 1000n }),
      );
      expect(first.kind).toBe("delivered");
      const retry = await calls[1].call(
        voucherCall(chain, { channelId, max: "1000", requestHash: "r1", price: 1000n }),
      );
      expect(retry).toEqual({ kind: "replayed", outcome: answer('{"request":"r1"}') });
      const old = await calls[1].call(
        voucherCall(chain, { channelId, max: "1000", requestHash: "r2", price: 1000n }),
      );
      expect(old.kind).toBe("mismatch");
      if (old.kind === "mismatch") {
        expect(old.channel.chargedCumulativeAmount).toBe("1000");
        expect(old.channel.signedMaxClaimable).toBe("1000");
        expect(old.channel.signature).toBe(signature(channelId, 1000n));
      }
      const charges = await instances.stores[0].vouchers.charges(channelId);
      expect(charges.map((c) => [c.amount, c.cumulative, c.door, c.operationId])).toEqual([
        ["1000", "1000", "http", "unit-convert"],
      ]);
    });

    it("takes the baseline of a channel it has no record of from the chain's totalClaimed, never from the voucher", async () => {
      const chain = new ModelChain();
      const channelId = freshChannel();
      chain.channels.set(channelId, { balance: 100_000n, totalClaimed: 5000n });
      // A client asking the server to charge from 0 again: the chain says 5000 were claimed.
      const behind = await calls[0].call(
        voucherCall(chain, { channelId, max: "1000", requestHash: "a", price: 1000n }),
      );
      expect(behind.kind).toBe("mismatch");
      const right = await calls[0].call(
        voucherCall(chain, { channelId, max: "6000", requestHash: "b", price: 1000n }),
      );
      expect(right.kind).toBe("delivered");
      expect((await instances.stores[1].vouchers.getChannel(channelId))?.chargedCumulativeAmount).toBe(
        "6000",
      );
    });

    it("a call whose channel another instance took over after its lease ran out is not charged and its answer withheld", async () => {
      const chain = new ModelChain();
      const channelId = freshChannel();
      chain.channels.set(channelId, { balance: 100_000n, totalClaimed: 0n });
      let clock = 1_000_000;
      const slow = new VoucherCalls({ store: instances.stores[0].vouchers, leaseMs: 1000, now: () => clock });
      const other = new VoucherCalls({
        store: instances.stores[1].vouchers,
        leaseMs: 1000,
        now: () => clock,
      });
      let overtaken: unknown;
      const stalled: VoucherCall = {
        ...voucherCall(chain, { channelId, max: "1000", requestHash: "slow", price: 1000n }),
        run: async () => {
          clock += 5000;
          overtaken = await other.call(
            voucherCall(chain, { channelId, max: "1000", requestHash: "fast", price: 1000n }),
          );
          return { ok: true, outcome: answer('{"slow":true}') };
        },
      };
      expect((await slow.call(stalled)).kind).toBe("lost");
      expect((overtaken as { kind: string }).kind).toBe("delivered");
      const charges = await instances.stores[0].vouchers.charges(channelId);
      expect(charges.map((c) => c.requestHash)).toEqual(["fast"]);
    });

    it("refuses malformed amounts before touching the store", async () => {
      const chain = new ModelChain();
      const channelId = freshChannel();
      for (const max of ["01000", "-1", "1e3", "", "1".repeat(40)]) {
        const outcome = await calls[0].call(
          voucherCall(chain, { channelId, max, requestHash: "x", price: 1000n }),
        );
        expect(outcome).toEqual({ kind: "refused", reason: "invalid_batch_settlement_evm_voucher_payload" });
      }
      expect(await instances.stores[0].vouchers.getChannel(channelId)).toBeUndefined();
    });

    /**
     * The model: per channel, the client's idea of the cumulative amount, the sum and count of the answers
     * the server delivered, and the vouchers whose answer the client lost. After every step the store's
     * charged amount and its ledger must equal what was delivered, exactly.
     */
    type Step =
      | {
          kind: "pay";
          channel: number;
          price: bigint;
          instance: 0 | 1;
          handler: "ok" | "fails" | "throws";
          lose: boolean;
        }
      | { kind: "retryLost"; channel: number; instance: 0 | 1 }
      | { kind: "replayOld"; channel: number; back: number; instance: 0 | 1 }
      | { kind: "forge"; channel: number; price: bigint }
      | { kind: "unfunded"; price: bigint; instance: 0 | 1 }
      | {
          kind: "concurrent";
          channel: number;
          price: bigint;
          sameRequest: boolean;
          delays: [number, number];
        };

    const channelIndex = fc.integer({ min: 0, max: 1 });
    const price = fc.constantFrom(1000n, 2500n, 10_000n);
    const instance = fc.constantFrom<0 | 1>(0, 1);
    const step: fc.Arbitrary<Step> = fc.oneof(
      {
        weight: 5,
        arbitrary: fc.record({
          kind: fc.constant("pay" as const),
          channel: channelIndex,
          price,
          instance,
          handler: fc.constantFrom<"ok" | "fails" | "throws">("ok", "ok", "ok", "fails", "throws"),
          lose: fc.boolean(),
        }),
      },
      {
        weight: 2,
        arbitrary: fc.record({ kind: fc.constant("retryLost" as const), channel: channelIndex, instance }),
      },
      {
        weight: 1,
        arbitrary: fc.record({
          kind: fc.constant("replayOld" as const),
          channel: channelIndex,
          back: fc.nat(5),
          instance,
        }),
      },
      {
        weight: 1,
        arbitrary: fc.record({ kind: fc.constant("forge" as const), channel: channelIndex, price }),
      },
      {
        weight: 1,
        arbitrary: fc.record({ kind: fc.constant("unfunded" as const), price, instance }),
      },
      {
        weight: 2,
        arbitrary: fc.record({
          kind: fc.constant("concurrent" as const),
          channel: channelIndex,
          price,
          sameRequest: fc.boolean(),
          delays: fc.tuple(fc.nat(3), fc.nat(3)),
        }),
      },
    );
    const scenario = fc.record({
      steps: fc.array(step, { minLength: 1, maxLength: 20 }),
      // The chain's totalClaimed when the server first sees the channel (its state lost, or a new channel).
      claimed: fc.tuple(fc.constantFrom(0n, 3000n), fc.constantFrom(0n, 3000n)),
      balance: fc.tuple(fc.constantFrom(20_000n, 1_000_000n), fc.constantFrom(20_000n, 1_000_000n)),
    });

    it("generated voucher sequences, lost answers, replays, forgeries and concurrent calls: charged = delivered after every step", async () => {
      await fc.assert(
        fc.asyncProperty(scenario, async ({ steps, claimed, balance }) => {
          const chain = new ModelChain();
          let requests = 0;
          const model = [0, 1].map((i) => {
            const channelId = freshChannel();
            chain.channels.set(channelId, {
              balance: balance[i] as bigint,
              totalClaimed: claimed[i] as bigint,
            });
            return {
              channelId,
              baseline: claimed[i] as bigint,
              clientCumulative: claimed[i] as bigint,
              delivered: 0n,
              deliveredCount: 0,
              bodies: new Map<string, { requestHash: string; body: string }>(),
              lost: undefined as CallSpec | undefined,
            };
          });
          const balanceOf = (i: number) => balance[i] as bigint;
          // Channels no deposit ever funded (anyone can sign configs): refused, and never given a row.
          const unfunded: string[] = [];

          for (const s of steps) {
            if (s.kind === "unfunded") {
              const channelId = freshChannel();
              unfunded.push(channelId);
              const spec = {
                channelId,
                max: s.price.toString(),
                requestHash: `q${++requests}`,
                price: s.price,
              };
              const outcome = await (calls[s.instance] as VoucherCalls).call(voucherCall(chain, spec));
              expect(outcome.kind).toBe("refused");
              for (const id of unfunded) {
                expect(
                  await instances.stores[0].vouchers.getChannel(id),
                  "no row for an unfunded channel",
                ).toBe(undefined);
              }
              continue;
            }
            const ch = model[s.channel] as (typeof model)[number];
            const charged = ch.baseline + ch.delivered;
            const record = (spec: CallSpec, outcome: Awaited<ReturnType<VoucherCalls["call"]>>) => {
              if (outcome.kind === "delivered") {
                expect(ch.bodies.has(spec.max), "one delivered answer per voucher ceiling").toBe(false);
                ch.delivered += spec.price;
                ch.deliveredCount++;
                ch.bodies.set(spec.max, { requestHash: spec.requestHash, body: outcome.outcome.body });
              }
              if (outcome.kind === "replayed") {
                expect(outcome.outcome.body).toBe(ch.bodies.get(spec.max)?.body);
              }
              if (outcome.kind === "mismatch") {
                // The corrective 402: the client adopts the server's charged amount (it checks the signature).
                expect(outcome.channel.signature ?? null).toBe(
                  outcome.channel.signedMaxClaimable === null
                    ? null
                    : signature(ch.channelId, outcome.channel.signedMaxClaimable),
                );
                ch.clientCumulative = BigInt(outcome.channel.chargedCumulativeAmount as string);
              }
            };
            if (s.kind === "pay") {
              const spec: CallSpec = {
                channelId: ch.channelId,
                max: (ch.clientCumulative + s.price).toString(),
                requestHash: `q${++requests}`,
                price: s.price,
                handler: s.handler,
              };
              const inSync = ch.clientCumulative === charged;
              const fits = charged + s.price <= balanceOf(s.channel);
              let outcome: Awaited<ReturnType<VoucherCalls["call"]>> | undefined;
              try {
                outcome = await calls[s.instance].call(voucherCall(chain, spec));
              } catch (error) {
                expect(s.handler).toBe("throws");
                expect(inSync && fits).toBe(true);
                expect(String(error)).toContain("handler crashed");
              }
              if (outcome) {
                const expected = !inSync
                  ? "mismatch"
                  : !fits
                    ? "refused"
                    : s.handler === "ok"
                      ? "delivered"
                      : "failed";
                expect(outcome.kind).toBe(expected);
                record(spec, outcome);
                if (outcome.kind === "delivered") {
                  if (s.lose) ch.lost = spec;
                  else ch.clientCumulative = BigInt(spec.max);
                }
              }
            } else if (s.kind === "retryLost") {
              if (!ch.lost) continue;
              const outcome = await calls[s.instance].call(voucherCall(chain, ch.lost));
              expect(outcome.kind).toBe("replayed");
              record(ch.lost, outcome);
              ch.clientCumulative =
                BigInt(ch.lost.max) > ch.clientCumulative ? BigInt(ch.lost.max) : ch.clientCumulative;
              ch.lost = undefined;
            } else if (s.kind === "replayOld") {
              const delivered = [...ch.bodies.keys()];
              const old = delivered[Math.max(0, delivered.length - 1 - s.back)];
              if (old === undefined) continue;
              const spec: CallSpec = {
                channelId: ch.channelId,
                max: old,
                requestHash: `q${++requests}`,
                price: 1000n,
              };
              const outcome = await calls[s.instance].call(voucherCall(chain, spec));
              expect(outcome.kind).toBe("mismatch");
              record(spec, outcome);
            } else if (s.kind === "forge") {
              const spec: CallSpec = {
                channelId: ch.channelId,
                max: (charged + s.price).toString(),
                sig: signature(ch.channelId, charged + s.price, "someone-else"),
                requestHash: `q${++requests}`,
                price: s.price,
              };
              const outcome = await calls[0].call(voucherCall(chain, spec));
              expect(outcome.kind).toBe("refused");
            } else {
              const max = (ch.clientCumulative + s.price).toString();
              const first = `q${++requests}`;
              const specs: CallSpec[] = [0, 1].map((i) => ({
                channelId: ch.channelId,
                max,
                requestHash: s.sameRequest ? first : `q${++requests}`,
                price: s.price,
                delayMs: s.delays[i],
              }));
              const outcomes = await Promise.all(
                specs.map((spec, i) => (calls[i] as VoucherCalls).call(voucherCall(chain, spec))),
              );
              const kinds = outcomes.map((o) => o.kind);
              expect(kinds.filter((k) => k === "delivered").length).toBeLessThanOrEqual(1);
              for (const kind of kinds) {
                expect(["delivered", "busy", "replayed", "mismatch", "refused"]).toContain(kind);
              }
              // A delivery first: the other call may replay it (it began after this one committed).
              const order = [0, 1].sort(
                (a, b) =>
                  Number(outcomes[b]?.kind === "delivered") - Number(outcomes[a]?.kind === "delivered"),
              );
              for (const i of order) record(specs[i] as CallSpec, outcomes[i] as (typeof outcomes)[number]);
              if (kinds.includes("delivered")) ch.clientCumulative = BigInt(max);
            }

            for (const m of model) {
              const stored = await instances.stores[1].vouchers.getChannel(m.channelId);
              const charges = await instances.stores[0].vouchers.charges(m.channelId);
              const storedCharged =
                stored?.chargedCumulativeAmount == null ? m.baseline : BigInt(stored.chargedCumulativeAmount);
              expect(storedCharged - m.baseline, "charged = delivered").toBe(m.delivered);
              expect(charges.length, "one ledger row per delivered call").toBe(m.deliveredCount);
              let cumulative = m.baseline;
              for (const c of charges) {
                cumulative += BigInt(c.amount);
                expect(c.cumulative).toBe(cumulative.toString());
                expect(c.signedMaxClaimable).toBe(c.cumulative);
              }
              if (stored?.signedMaxClaimable) {
                expect(BigInt(stored.signedMaxClaimable), "never beyond the balance").toBeLessThanOrEqual(
                  balanceOf(model.indexOf(m)),
                );
              }
            }
          }
        }),
        { numRuns: Number(process.env.FC_NUM_RUNS ?? 40) },
      );
    });
  });
}

describeOnStores("SQLite", async () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "utility402-vouchers-"));
  const file = path.join(dir, "store.sqlite");
  const stores: [Store, Store] = [new SqliteStore(file), new SqliteStore(file)];
  return {
    stores,
    dispose: async () => {
      await Promise.all(stores.map((store) => store.close()));
      fs.rmSync(dir, { recursive: true, force: true });
    },
  };
});

const databaseUrl = testDatabaseUrl();
if (databaseUrl) {
  describeOnStores("PostgreSQL", async () => {
    const schema = freshSchemaName("vouchers");
    const open = () => PostgresStore.open({ connectionString: databaseUrl, poolSize: 4, schema });
    const first = await open();
    const stores: [Store, Store] = [first, await open()];
    return {
      stores,
      dispose: async () => {
        await Promise.all(stores.map((store) => store.close()));
        await dropSchema(databaseUrl, schema);
      },
    };
  });
} else {
  describe.skip("voucher calls on PostgreSQL (set TEST_DATABASE_URL; always run in CI)", () => {});
}
