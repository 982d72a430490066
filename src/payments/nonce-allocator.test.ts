import { describe, expect, it } from "vitest";
import { NonceAllocator } from "./nonce-allocator.ts";

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
