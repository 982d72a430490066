import type { Hex } from "viem";
import { describe, expect, it } from "vitest";
import { type RawReceipt, ReceiptTimeoutError, ReceiptWatcher } from "./receipt-watcher.ts";

const hash = (n: number) => `0x${n.toString(16).padStart(64, "0")}` as Hex;
const receipt = (h: Hex): RawReceipt => ({ transactionHash: h, status: "0x1" });

describe("ReceiptWatcher", () => {
  it("asks for the receipts of transactions handed over together in one batch, and again until they appear", async () => {
    const batches: Hex[][] = [];
    const mined = new Set<Hex>([hash(1)]);
    const watcher = new ReceiptWatcher(async (hashes) => {
      batches.push(hashes);
      return hashes.map((h) => (mined.has(h) ? receipt(h) : null));
    }, 30);
    const waits = [1, 2, 3].map((n) => watcher.wait(hash(n), 5000));
    expect(await waits[0]).toEqual(receipt(hash(1)));
    mined.add(hash(2));
    mined.add(hash(3));
    expect(await Promise.all(waits.slice(1))).toEqual([receipt(hash(2)), receipt(hash(3))]);
    expect(batches[0]).toEqual([hash(1), hash(2), hash(3)]);
    expect(batches[1]).toEqual([hash(2), hash(3)]);
  });

  it("keeps polling after a failed poll: a lost answer does not orphan a settlement", async () => {
    let calls = 0;
    const watcher = new ReceiptWatcher(async (hashes) => {
      calls++;
      if (calls <= 2) throw new Error("connection reset");
      return hashes.map(receipt);
    }, 20);
    expect(await watcher.wait(hash(7), 5000)).toEqual(receipt(hash(7)));
    expect(calls).toBe(3);
  });

  it("gives up after the timeout with a ReceiptTimeoutError", async () => {
    const watcher = new ReceiptWatcher(async (hashes) => hashes.map(() => null), 10);
    await expect(watcher.wait(hash(9), 60)).rejects.toBeInstanceOf(ReceiptTimeoutError);
  });

  it("ends a wait at its deadline while a poll hangs, and before a later regular check", async () => {
    const hanging = new ReceiptWatcher(() => new Promise(() => {}), 10);
    await expect(hanging.wait(hash(10), 50)).rejects.toBeInstanceOf(ReceiptTimeoutError);
    // Checks every 60 s: the wait still ends at its own deadline, not at the next check.
    const slow = new ReceiptWatcher(async (hashes) => hashes.map(() => null), 60_000);
    await expect(slow.wait(hash(11), 200)).rejects.toBeInstanceOf(ReceiptTimeoutError);
  });
});
