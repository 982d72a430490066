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

  it("keeps going after a failure among concurrent sends", async () => {
    let chainNonce = 3;
    const allocator = new NonceAllocator(async () => chainNonce);
    const results = await Promise.allSettled(
      [false, true, false, false].map((fail) =>
        allocator.send(async (nonce) => {
          if (fail) throw new Error("rejected");
          chainNonce = nonce + 1;
          return nonce;
        }),
      ),
    );
    expect(results.map((r) => (r.status === "fulfilled" ? r.value : "failed"))).toEqual([3, "failed", 4, 5]);
  });
});
