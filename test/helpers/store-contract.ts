import { afterEach, beforeEach, describe, expect, it } from "vitest";
import type { NewPayment, Store, StoredOutcome } from "../../src/store/store.ts";

/**
 * The behaviour every Store must have, run against each implementation (SQLite, PostgreSQL).
 * `open` gives a fresh, empty store; `dispose` removes what it left behind.
 */
export function describeStoreContract(
  name: string,
  open: () => Promise<{ store: Store; dispose?: () => Promise<void> }>,
): void {
  describe(`Store contract: ${name}`, () => {
    let store: Store;
    let dispose: (() => Promise<void>) | undefined;
    let counter = 0;

    beforeEach(async () => {
      ({ store, dispose } = await open());
    });
    afterEach(async () => {
      await store.close();
      await dispose?.();
    });

    const payment = (overrides: Partial<NewPayment> = {}): NewPayment => {
      counter++;
      const nonce = `0x${counter.toString(16).padStart(64, "0")}`;
      return {
        paymentKey: `eip155:8453:0xasset:0xpayer:${nonce}`,
        payloadHash: "a".repeat(64),
        requestHash: "b".repeat(64),
        operationId: "csv-cleanup",
        network: "eip155:8453",
        asset: "0xasset",
        amount: "2000000",
        payer: "0xpayer",
        payTo: "0xpayto",
        nonce,
        validBefore: 1_900_000_000,
        requestId: `req-${counter}`,
        leaseUntil: 1_000,
        ...overrides,
      };
    };
    const outcome = (body: string): StoredOutcome => ({
      status: 200,
      headers: { "content-type": "application/json" },
      body,
    });

    it("answers a ping", async () => {
      await expect(store.ping()).resolves.toBeUndefined();
    });

    it("reserves a payment once and keeps every field as given", async () => {
      const first = payment({ amount: "123456789012345678901234567890" });
      expect(await store.reservePayment(first)).toEqual({ reserved: true });
      const again = await store.reservePayment({
        ...first,
        requestId: "another",
        payloadHash: "c".repeat(64),
      });
      expect(again.reserved).toBe(false);
      const record = await store.getPayment(first.paymentKey);
      expect(record).toMatchObject({ ...first, state: "verified", txHash: null, error: null, outcome: null });
      expect(record?.pendingOutcome).toBeNull();
      expect(new Date(record?.createdAt as string).toISOString()).toBe(record?.createdAt);
      if (!again.reserved) expect(again.existing).toEqual(record);
      expect(await store.getPayment("no such key")).toBeUndefined();
    });

    it("lets exactly one of many concurrent reservations of the same payment win", async () => {
      const contested = payment();
      const results = await Promise.all(
        Array.from({ length: 20 }, (_, i) => store.reservePayment({ ...contested, requestId: `r${i}` })),
      );
      expect(results.filter((result) => result.reserved)).toHaveLength(1);
    });

    it("keeps a pending outcome only while the payment is unfinished", async () => {
      const p = payment();
      await store.reservePayment(p);
      await store.recordPendingOutcome(p.paymentKey, outcome('{"ok":1}'));
      expect((await store.getPayment(p.paymentKey))?.pendingOutcome).toEqual(outcome('{"ok":1}'));
      await store.completePayment(p.paymentKey, {
        state: "settled",
        txHash: "0xtx",
        outcome: outcome("done"),
      });
      await store.recordPendingOutcome(p.paymentKey, outcome("late"));
      const record = await store.getPayment(p.paymentKey);
      expect(record?.pendingOutcome).toBeNull();
      expect(record?.outcome).toEqual(outcome("done"));
    });

    it("hands over an unfinished payment only after its lease ran out, to one taker", async () => {
      const p = payment({ leaseUntil: 5_000 });
      await store.reservePayment(p);
      expect(await store.takeOverPayment(p.paymentKey, 4_999, 10_000)).toBe(false);
      const takers = await Promise.all(
        Array.from({ length: 10 }, () => store.takeOverPayment(p.paymentKey, 5_000, 20_000)),
      );
      expect(takers.filter(Boolean)).toHaveLength(1);
      expect((await store.getPayment(p.paymentKey))?.leaseUntil).toBe(20_000);
      // Only the holder of the current lease renews it.
      expect(await store.renewLease(p.paymentKey, 5_000, 25_000)).toBe(false);
      expect(await store.renewLease(p.paymentKey, 20_000, 30_000)).toBe(true);
      expect((await store.getPayment(p.paymentKey))?.leaseUntil).toBe(30_000);
      await store.releaseLease(p.paymentKey);
      expect(await store.takeOverPayment(p.paymentKey, 1, 40_000)).toBe(true);
      await store.completePayment(p.paymentKey, { state: "released", outcome: outcome("x") });
      expect(await store.takeOverPayment(p.paymentKey, Number.MAX_SAFE_INTEGER, 1)).toBe(false);
    });

    it("lists verified payments whose lease ran out, oldest lease first, and nothing final or held", async () => {
      const late = payment({ leaseUntil: 3_000 });
      const early = payment({ leaseUntil: 2_000 });
      const leased = payment({ leaseUntil: 9_000 });
      const done = payment({ leaseUntil: 1_000 });
      const held = payment({ leaseUntil: 1_000 });
      for (const p of [late, early, leased, done, held]) await store.reservePayment(p);
      await store.completePayment(done.paymentKey, { state: "released", outcome: outcome("x") });
      await store.holdPayment(held.paymentKey, {
        outcome: outcome("202"),
        held: { payload: {} as never, requirements: {} as never },
      });
      const keys = async (now: number, limit: number) =>
        (await store.orphanedPayments(now, limit)).map((record) => record.paymentKey);
      expect(await keys(5_000, 10)).toEqual([early.paymentKey, late.paymentKey]);
      expect(await keys(5_000, 1)).toEqual([early.paymentKey]);
      expect(await keys(2_500, 10)).toEqual([early.paymentKey]);
      expect(await keys(9_000, 10)).toEqual([early.paymentKey, late.paymentKey, leased.paymentKey]);
    });

    it("finishes a payment once; only a settlement may replace a release or a failure", async () => {
      const p = payment();
      await store.reservePayment(p);
      expect(
        await store.completePayment(p.paymentKey, { state: "released", error: "no", outcome: outcome("r") }),
      ).toBe(true);
      expect(await store.completePayment(p.paymentKey, { state: "failed", outcome: outcome("f") })).toBe(
        false,
      );
      expect(
        await store.completePayment(p.paymentKey, {
          state: "settled",
          txHash: "0xabc",
          outcome: outcome("s"),
        }),
      ).toBe(true);
      expect(await store.completePayment(p.paymentKey, { state: "released", outcome: outcome("r2") })).toBe(
        false,
      );
      expect(
        await store.completePayment(p.paymentKey, {
          state: "settled",
          txHash: "0xdef",
          outcome: outcome("s2"),
        }),
      ).toBe(false);
      expect(await store.getPayment(p.paymentKey)).toMatchObject({
        state: "settled",
        txHash: "0xabc",
        error: null,
        outcome: outcome("s"),
      });
    });

    it("lets only the lease holder write a release or a failure; a settlement always lands", async () => {
      const p = payment({ leaseUntil: 5_000 });
      await store.reservePayment(p);
      // The first owner stalled past its lease; another attempt took the payment over.
      expect(await store.takeOverPayment(p.paymentKey, 5_000, 20_000)).toBe(true);
      const stale = { lease: 5_000 };
      expect(
        await store.completePayment(p.paymentKey, { state: "released", outcome: outcome("r"), ...stale }),
      ).toBe(false);
      expect(
        await store.completePayment(p.paymentKey, { state: "failed", outcome: outcome("f"), ...stale }),
      ).toBe(false);
      expect((await store.getPayment(p.paymentKey))?.state).toBe("verified");
      // Money that moved is recorded whoever saw it.
      expect(
        await store.completePayment(p.paymentKey, {
          state: "settled",
          txHash: "0x1",
          outcome: outcome("s"),
          ...stale,
        }),
      ).toBe(true);
      const q = payment({ leaseUntil: 5_000 });
      await store.reservePayment(q);
      expect(
        await store.completePayment(q.paymentKey, { state: "released", outcome: outcome("r"), lease: 5_000 }),
      ).toBe(true);
    });

    it("admits a held payment only within the payer's cap and balance, counted one admission at a time", async () => {
      const brief = (payer: string) => payment({ operationId: "research-brief", amount: "5000000", payer });
      // 12 at once, funds for one: exactly one reserved, the others told the shortfall.
      const results = await Promise.all(
        Array.from({ length: 12 }, () =>
          store.reservePayment(brief("0xpoor"), { maxOutstanding: 3, balance: "5000000" }),
        ),
      );
      expect(results.filter((result) => result.reserved)).toHaveLength(1);
      const refusals = results.flatMap((result) => ("refused" in result ? [result.refused] : []));
      expect(refusals).toHaveLength(11);
      expect(refusals[0]).toEqual({
        why: "funds",
        outstanding: 1,
        outstandingAmount: "5000000",
        shortfall: "5000000",
      });
      // Well funded: the cap counts verified (in flight) and held payments alike.
      const rich = await Promise.all(
        Array.from({ length: 10 }, () =>
          store.reservePayment(brief("0xrich"), { maxOutstanding: 3, balance: "1000000000" }),
        ),
      );
      const richKeys = rich.flatMap((result, i) => (result.reserved ? [i] : []));
      expect(richKeys).toHaveLength(3);
      expect(rich.find((result) => "refused" in result)).toMatchObject({
        refused: { why: "cap", outstanding: 3 },
      });
      // Other operations' unfinished payments count against the balance, not the cap; final ones not at all.
      const sync = payment({ payer: "0xmixed", amount: "3000000" });
      await store.reservePayment(sync);
      const mixed = { maxOutstanding: 1, balance: "7000000" };
      expect(await store.reservePayment(brief("0xmixed"), mixed)).toMatchObject({
        refused: { why: "funds", outstanding: 0, outstandingAmount: "3000000", shortfall: "1000000" },
      });
      await store.completePayment(sync.paymentKey, { state: "released", outcome: outcome("x") });
      expect(await store.reservePayment(brief("0xmixed"), mixed)).toEqual({ reserved: true });
      // A payment already in the ledger is that payment, whatever the limits.
      const known = brief("0xmixed");
      await store.reservePayment(known);
      expect(await store.reservePayment(known, { maxOutstanding: 0, balance: "0" })).toMatchObject({
        reserved: false,
        existing: { paymentKey: known.paymentKey },
      });
    });

    it("sums settled revenue by operation and day, and counts payments by state", async () => {
      const settle = async (operationId: string, amount: string) => {
        const p = payment({ operationId, amount });
        await store.reservePayment(p);
        await store.completePayment(p.paymentKey, { state: "settled", txHash: "0x1", outcome: outcome("") });
      };
      await settle("csv-cleanup", "2000000");
      await settle("csv-cleanup", "2000000");
      await settle("json-diff", "10000");
      const released = payment({ operationId: "json-diff" });
      await store.reservePayment(released);
      await store.completePayment(released.paymentKey, { state: "released", outcome: outcome("") });
      await store.reservePayment(payment({ operationId: "json-diff" }));

      const day = new Date().toISOString().slice(0, 10);
      expect(await store.revenueByOperationAndDay()).toEqual([
        { day, operationId: "csv-cleanup", payments: 2, atomicAmount: "4000000" },
        { day, operationId: "json-diff", payments: 1, atomicAmount: "10000" },
      ]);
      const counts = await store.paymentCounts();
      expect(
        counts.sort((a, b) => `${a.operationId}${a.state}`.localeCompare(`${b.operationId}${b.state}`)),
      ).toEqual([
        { operationId: "csv-cleanup", state: "settled", count: 2 },
        { operationId: "json-diff", state: "released", count: 1 },
        { operationId: "json-diff", state: "settled", count: 1 },
        { operationId: "json-diff", state: "verified", count: 1 },
      ]);
    });

    it("gives a settlement account to one instance at a time until its claim lapses or is released", async () => {
      const account = "eip155:8453:0xsettler";
      const claim = (instanceId: string, now: number) =>
        store.claimSettler({ account, instanceId, now, leaseUntil: now + 30_000 });
      const contenders = await Promise.all(["a", "b", "c"].map((id) => claim(id, 1_000)));
      expect(contenders.filter((result) => result.claimed)).toHaveLength(1);
      const winner = ["a", "b", "c"][contenders.findIndex((result) => result.claimed)] as string;
      const loser = winner === "a" ? "b" : "a";
      expect(await claim(loser, 2_000)).toEqual({ claimed: false, holder: winner, leaseUntil: 31_000 });
      expect(await claim(winner, 10_000)).toEqual({ claimed: true });
      expect(await claim(loser, 39_999)).toMatchObject({ claimed: false, holder: winner });
      expect(await claim(loser, 40_000)).toEqual({ claimed: true });
      await store.releaseSettler(account, winner);
      expect(await claim(winner, 40_001)).toMatchObject({ claimed: false, holder: loser });
      await store.releaseSettler(account, loser);
      expect(await claim(winner, 40_002)).toEqual({ claimed: true });
    });

    it("keeps what became of a settlement transaction the chain lost, its latest event, with its payment", async () => {
      const settled = payment({ amount: "2000000" });
      await store.reservePayment(settled);
      await store.completePayment(settled.paymentKey, {
        state: "settled",
        txHash: "0xaa",
        outcome: outcome(""),
      });
      const note = { account: "0xsettler", nonce: 7, kind: "call" as const, resent: 0, at: 1_000 };
      await store.noteSettlementTransaction({ ...note, txHash: "0xaa", state: "dropped" });
      await store.noteSettlementTransaction({
        ...note,
        txHash: "0xaa",
        state: "resent",
        resent: 1,
        at: 2_000,
      });
      await store.noteSettlementTransaction({
        ...note,
        txHash: "0xaa",
        state: "reverted",
        resent: 1,
        detail: "authorization is expired",
        at: 3_000,
      });
      await store.noteSettlementTransaction({
        ...note,
        txHash: "0xbb",
        nonce: 8,
        kind: "filler",
        state: "filled",
        at: 4_000,
      });
      expect(await store.settlementTransactions()).toEqual([
        {
          txHash: "0xbb",
          account: "0xsettler",
          nonce: 8,
          kind: "filler",
          state: "filled",
          resent: 0,
          detail: null,
          updatedAt: new Date(4_000).toISOString(),
          paymentKey: null,
          paymentState: null,
          operationId: null,
          amount: null,
        },
        {
          txHash: "0xaa",
          account: "0xsettler",
          nonce: 7,
          kind: "call",
          state: "reverted",
          resent: 1,
          detail: "authorization is expired",
          updatedAt: new Date(3_000).toISOString(),
          paymentKey: settled.paymentKey,
          paymentState: "settled",
          operationId: "csv-cleanup",
          amount: "2000000",
        },
      ]);
    });

    it("shares cache entries and gives one loader per key the claim until it stores, releases or lapses", async () => {
      expect(await store.getCacheEntry("k")).toBeUndefined();
      const claims = await Promise.all(
        ["a", "b", "c"].map((owner) => store.claimCacheLoad("k", owner, 5_000, 1_000)),
      );
      expect(claims.filter(Boolean)).toHaveLength(1);
      const owner = ["a", "b", "c"][claims.indexOf(true)] as string;
      const other = owner === "a" ? "b" : "a";
      // A claim alone is not an entry.
      expect(await store.getCacheEntry("k")).toBeUndefined();
      expect(await store.claimCacheLoad("k", other, 9_000, 4_999)).toBe(false);
      await store.putCacheEntry("k", { value: '{"v":1}', storedAt: 2_000 }, 0);
      expect(await store.getCacheEntry("k")).toEqual({ value: '{"v":1}', storedAt: 2_000 });
      // Storing ends the claim: the next loader (after the TTL, say) may claim at once.
      expect(await store.claimCacheLoad("k", other, 9_000, 2_001)).toBe(true);
      expect(await store.getCacheEntry("k")).toEqual({ value: '{"v":1}', storedAt: 2_000 });
      await store.releaseCacheLoad("k", owner); // not the holder: no effect
      expect(await store.claimCacheLoad("k", owner, 9_000, 3_000)).toBe(false);
      await store.releaseCacheLoad("k", other);
      expect(await store.claimCacheLoad("k", owner, 9_000, 3_000)).toBe(true);
      // A lapsed claim may be taken over.
      expect(await store.claimCacheLoad("k", other, 20_000, 9_000)).toBe(true);
      // Entries stored before expireBefore go when another entry is stored, unless a load of theirs is claimed.
      await store.putCacheEntry("old", { value: "1", storedAt: 100 }, 0);
      await store.putCacheEntry("new", { value: "2", storedAt: 10_000 }, 5_000);
      expect(await store.getCacheEntry("old")).toBeUndefined();
      expect(await store.getCacheEntry("k")).toEqual({ value: '{"v":1}', storedAt: 2_000 });
      expect(await store.getCacheEntry("new")).toEqual({ value: "2", storedAt: 10_000 });
    });

    it("binds a payment-identifier to one payment until that payment is released, failed, or never recorded", async () => {
      const [first, second, third] = [payment(), payment(), payment()];
      const claim = (paymentKey: string, now = 1_000) =>
        store.claimPaymentIdentifier({
          key: "0xpayer:pay_0123456789abcdef",
          paymentKey,
          now,
          staleBefore: now - 500,
        });
      // Many payments at once: one holds the id, all of them are told which.
      const holders = await Promise.all([first, second, third].map((p) => claim(p.paymentKey)));
      const holder = holders[0] as string;
      expect(new Set(holders)).toEqual(new Set([holder]));
      const [winner, loser] = [first, second, third]
        .filter((p) => p.paymentKey === holder)
        .concat([first, second, third].filter((p) => p.paymentKey !== holder)) as [NewPayment, NewPayment];
      // Not in the ledger yet: held while the claim is fresh, its holder may claim it again, free once stale.
      expect(await claim(loser.paymentKey, 1_400)).toBe(winner.paymentKey);
      expect(await claim(winner.paymentKey, 1_400)).toBe(winner.paymentKey);
      await store.reservePayment(winner);
      expect(await claim(loser.paymentKey, 100_000)).toBe(winner.paymentKey);
      await store.completePayment(winner.paymentKey, { state: "settled", outcome: outcome("paid") });
      expect(await claim(loser.paymentKey, 200_000)).toBe(winner.paymentKey);
      // Another payer's id of the same spelling is another id.
      expect(
        await store.claimPaymentIdentifier({
          key: "0xother:pay_0123456789abcdef",
          paymentKey: loser.paymentKey,
          now: 1_000,
          staleBefore: 0,
        }),
      ).toBe(loser.paymentKey);
      // A payment that charged nothing (released) lets the id go to the next one.
      const released = payment();
      const next = payment();
      const key = "0xpayer:pay_released_0123456789";
      const claimFor = (p: NewPayment) =>
        store.claimPaymentIdentifier({ key, paymentKey: p.paymentKey, now: 1_000, staleBefore: 0 });
      expect(await claimFor(released)).toBe(released.paymentKey);
      await store.reservePayment(released);
      expect(await claimFor(next)).toBe(released.paymentKey);
      await store.completePayment(released.paymentKey, { state: "released", outcome: outcome("x") });
      expect(await claimFor(next)).toBe(next.paymentKey);
      // A failed payment may still be settled by a transfer that lands late ("settled may replace failed"):
      // its id stays its own until its authorization can no longer land (validBefore + 30 s).
      const refused = payment();
      const retry = payment();
      const refusedKey = "0xpayer:pay_refused_0123456789";
      const claimAt = (p: NewPayment, now: number) =>
        store.claimPaymentIdentifier({ key: refusedKey, paymentKey: p.paymentKey, now, staleBefore: 0 });
      expect(await claimAt(refused, 1_000)).toBe(refused.paymentKey);
      await store.reservePayment(refused);
      await store.completePayment(refused.paymentKey, { state: "failed", outcome: outcome("f") });
      expect(await claimAt(retry, 2_000)).toBe(refused.paymentKey);
      expect(await claimAt(retry, refused.validBefore * 1000 + 30_000)).toBe(refused.paymentKey);
      expect(await claimAt(retry, refused.validBefore * 1000 + 30_001)).toBe(retry.paymentKey);
      // Stale and never recorded: free again.
      const stale = await store.claimPaymentIdentifier({
        key,
        paymentKey: released.paymentKey,
        now: 90_000,
        staleBefore: 5_000,
      });
      expect(stale).toBe(released.paymentKey);
    });

    it("uses a sign-in nonce once, also when many try it at once, and forgets it only after its time", async () => {
      const tries = await Promise.all(
        Array.from({ length: 20 }, () => store.useSignInNonce("n0nce0000a", 5_000, 1_000)),
      );
      expect(tries.filter(Boolean)).toHaveLength(1);
      expect(await store.useSignInNonce("n0nce0000b", 5_000, 1_000)).toBe(true);
      // Still within its time: refused; past it, the row is gone (no message with it is accepted any more).
      expect(await store.useSignInNonce("n0nce0000a", 9_000, 5_000)).toBe(false);
      expect(await store.useSignInNonce("n0nce0000c", 9_000, 5_001)).toBe(true);
      expect(await store.useSignInNonce("n0nce0000a", 9_000, 5_001)).toBe(true);
    });

    it("lists a payer's payments of some operations in some states, newest first, whatever the address case", async () => {
      const mine = [
        payment({ payer: "0xabc", operationId: "product-a" }),
        payment({ payer: "0xabc", operationId: "product-a" }),
      ];
      const others = [
        payment({ payer: "0xabc", operationId: "product-b" }),
        payment({ payer: "0xdef", operationId: "product-a" }),
      ];
      for (const p of [...mine, ...others]) {
        await store.reservePayment(p);
        await new Promise((resolve) => setTimeout(resolve, 5));
      }
      await store.completePayment(mine[1]?.paymentKey as string, { state: "settled", outcome: outcome("s") });
      const query = { payer: "0xABC", operationIds: ["product-a"], limit: 10 };
      const settled = await store.paymentsOfPayer({ ...query, states: ["settled"] });
      expect(settled.map((record) => record.paymentKey)).toEqual([mine[1]?.paymentKey]);
      const any = await store.paymentsOfPayer({ ...query, states: ["verified", "settled"] });
      expect(any.map((record) => record.paymentKey)).toEqual([mine[1]?.paymentKey, mine[0]?.paymentKey]);
      expect(
        await store.paymentsOfPayer({ ...query, states: ["verified", "settled"], limit: 1 }),
      ).toHaveLength(1);
      expect(await store.paymentsOfPayer({ ...query, operationIds: [], states: ["settled"] })).toEqual([]);
    });
  });
}
