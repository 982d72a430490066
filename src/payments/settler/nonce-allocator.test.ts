import { describe, expect, it } from "vitest";
import { NonceAllocator, planGapRepair, type SentTransaction, SentTransactions } from "./nonce-allocator.ts";

describe("NonceAllocator", () => {
  it("hands out consecutive nonces to concurrent sends, each exactly once", async () => {
    const allocator = new NonceAllocator(async () => 7);
    const used = await Promise.all(
      Array.from({ length: 20 }, () =>
        allocator.send(async (nonce) => {
          await new Promise((resolve) => setTimeout(resolve, Math.random() * 5));
          return nonce;
        }),
      ),
    );
    expect(used).toEqual(Array.from({ length: 20 }, (_, i) => 7 + i));
  });

  it("re-reads the chain's pending nonce after a failed send instead of reusing or skipping one", async () => {
    let chainNonce = 0;
    const allocator = new NonceAllocator(async () => chainNonce);
    const sent: number[] = [];
    const broadcast = (fail: boolean) => async (nonce: number) => {
      if (fail) throw new Error("send failed");
      sent.push(nonce);
      chainNonce = nonce + 1;
      return nonce;
    };
    await allocator.send(broadcast(false));
    await expect(allocator.send(broadcast(true))).rejects.toThrow("send failed");
    // Meanwhile another process used the account: the allocator must follow the chain.
    chainNonce = 5;
    await allocator.send(broadcast(false));
    await allocator.send(broadcast(false));
    expect(sent).toEqual([0, 5, 6]);
  });

  it("fills the gap a refused send leaves before accepted ones, then follows the chain", async () => {
    let chainNonce = 3;
    const filled: number[] = [];
    const allocator = new NonceAllocator(
      async () => chainNonce,
      async (nonce) => {
        filled.push(nonce);
      },
    );
    const broadcast = (fail: boolean) => async (nonce: number) => {
      if (fail) throw new Error("rejected");
      chainNonce = nonce + 1;
      return nonce;
    };
    // Sent in one tick: one group with nonces 3..6, the second refused.
    const results = await Promise.allSettled(
      [false, true, false, false].map((fail) => allocator.send(broadcast(fail))),
    );
    expect(results.map((r) => (r.status === "fulfilled" ? r.value : "failed"))).toEqual([3, "failed", 5, 6]);
    expect(filled).toEqual([4]);
    // The next send re-reads the chain (7) instead of trusting the counter.
    chainNonce = 9;
    expect(await allocator.send(broadcast(false))).toBe(9);
  });

  it("groups the sends that arrive while a group is in flight, in arrival order", async () => {
    const allocator = new NonceAllocator(async () => 0);
    const groups: number[][] = [];
    let current: number[] = [];
    const broadcast = async (nonce: number) => {
      current.push(nonce);
      await new Promise((resolve) => setTimeout(resolve, 5));
      if (current.length > 0) groups.push(current);
      current = [];
      return nonce;
    };
    const first = allocator.send(broadcast);
    await new Promise((resolve) => setTimeout(resolve, 1));
    const rest = [1, 2, 3].map(() => allocator.send(broadcast));
    expect(await Promise.all([first, ...rest])).toEqual([0, 1, 2, 3]);
    expect(groups).toEqual([[0], [1, 2, 3]]);
  });

  it("refuses the whole group when the chain cannot tell the nonce, and reads it again next time", async () => {
    let reads = 0;
    const allocator = new NonceAllocator(async () => {
      reads++;
      if (reads === 1) throw new Error("rpc down");
      return 11;
    });
    await expect(allocator.send(async (nonce) => nonce)).rejects.toThrow("rpc down");
    expect(await allocator.send(async (nonce) => nonce)).toBe(11);
  });
});

const tx = (nonce: number, kind: SentTransaction["kind"] = "call"): SentTransaction => ({
  nonce,
  hash: `0x${nonce.toString(16).padStart(64, "0")}`,
  raw: `0x02${nonce.toString(16).padStart(4, "0")}`,
  sentAt: 0,
  kind,
  resent: 0,
});
const kept = (...nonces: number[]) => new Map(nonces.map((nonce) => [nonce, tx(nonce)]));

describe("planGapRepair: nonces handed out that the chain lost", () => {
  it("sees no gap when the chain holds every nonce handed out, or none was handed out yet", () => {
    expect(planGapRepair({ pendingNonce: 5, nextNonce: 5, sent: kept(3, 4) })).toEqual({ kind: "none" });
    expect(planGapRepair({ pendingNonce: 5, nextNonce: undefined, sent: kept(3, 4) })).toEqual({
      kind: "none",
    });
  });

  it("follows the chain when it is ahead (another sender used the key)", () => {
    expect(planGapRepair({ pendingNonce: 9, nextNonce: 5, sent: kept(4) })).toEqual({ kind: "ahead" });
  });

  it("sends again every kept transaction of a missing nonce, in nonce order, and fills the others", () => {
    // The node dropped 10–13 (a restart) and never had 14's predecessor: 11 is not kept (sent before
    // this process started, or past the retention).
    const plan = planGapRepair({ pendingNonce: 10, nextNonce: 15, sent: kept(8, 9, 10, 12, 13, 14) });
    expect(plan.kind).toBe("gap");
    if (plan.kind !== "gap") return;
    expect(plan.from).toBe(10);
    expect(plan.to).toBe(15);
    expect(plan.resend.map((sent) => sent.nonce)).toEqual([10, 12, 13, 14]);
    expect(plan.fill).toEqual([11]);
  });

  it("sends again transactions that were mined and then undone (a reorg, a chain restored from a snapshot)", () => {
    // Mined 0–6 long ago from this process's view; the chain went back to nonce 3.
    const plan = planGapRepair({ pendingNonce: 3, nextNonce: 7, sent: kept(0, 1, 2, 3, 4, 5, 6) });
    expect(plan).toMatchObject({ kind: "gap", from: 3, to: 7, fill: [] });
    expect(plan.kind === "gap" && plan.resend.map((sent) => sent.nonce)).toEqual([3, 4, 5, 6]);
  });
});

describe("SentTransactions", () => {
  it("keeps the last transaction of each nonce for the retention, then forgets it", () => {
    const sent = new SentTransactions(1000);
    sent.record({ ...tx(1), sentAt: 0 });
    sent.record({ ...tx(2), sentAt: 500 });
    sent.record({ ...tx(2, "filler"), sentAt: 600 });
    expect(sent.view.get(2)?.kind).toBe("filler");
    expect(sent.prune(1200)).toBe(true);
    expect([...sent.view.keys()]).toEqual([2]);
    expect(sent.prune(1601)).toBe(false);
    expect(sent.view.size).toBe(0);
  });
});

describe("NonceAllocator.exclusive", () => {
  it("runs between groups, sees the counter, and may move it (a repaired gap) or clear it", async () => {
    let chainNonce = 4;
    const allocator = new NonceAllocator(async () => chainNonce);
    const order: string[] = [];
    const slow = (nonce: number) =>
      new Promise<number>((resolve) =>
        setTimeout(() => {
          order.push(`sent ${nonce}`);
          resolve(nonce);
        }, 20),
      );
    const first = allocator.send(slow);
    await new Promise((resolve) => setTimeout(resolve, 5)); // the first group is in flight
    const seen = allocator.exclusive(async (counter) => {
      order.push(`chore sees ${counter.next}`);
      chainNonce = 2; // the chain lost 4 and 5; the chore decides to re-read
      counter.next = undefined;
      return counter.next;
    });
    const second = allocator.send(slow);
    expect(await first).toBe(4);
    expect(await seen).toBeUndefined();
    expect(await second).toBe(2);
    expect(order).toEqual(["sent 4", "chore sees 5", "sent 2"]);
  });

  it("passes a chore's failure to its caller and goes on with the sends", async () => {
    const allocator = new NonceAllocator(async () => 0);
    await expect(
      allocator.exclusive(async () => {
        throw new Error("chain down");
      }),
    ).rejects.toThrow("chain down");
    expect(await allocator.send(async (nonce) => nonce)).toBe(0);
  });
});
