import type { Hex } from "viem";

/** A receipt as the RPC returns it (eth_getTransactionReceipt), or null while the transaction is not mined. */
export type RawReceipt = Record<string, unknown> & { status?: Hex; transactionHash: Hex };

interface Waiter {
  resolve(receipt: RawReceipt): void;
  reject(error: Error): void;
  deadline: number;
  timeoutMs: number;
}

export class ReceiptTimeoutError extends Error {
  constructor(hash: Hex, timeoutMs: number) {
    super(`no receipt for ${hash} within ${timeoutMs} ms`);
  }
}

/**
 * Waits for many transactions' receipts with one poller: each poll asks for every pending receipt
 * in one JSON-RPC batch, instead of one block watcher and one request per settlement (viem's
 * waitForTransactionReceipt). A transaction is first checked as soon as it is handed over (on a
 * chain that mines at once, such as anvil, the receipt is there), then every `intervalMs` (tune it
 * to the chain's block time). A failed poll is retried on the next tick until the wait times out,
 * so one lost RPC answer never orphans a settlement.
 */
export class ReceiptWatcher {
  private readonly waiting = new Map<Hex, Waiter[]>();
  private readonly fresh = new Set<Hex>();
  private soon: NodeJS.Immediate | undefined;
  private timer: NodeJS.Timeout | undefined;
  private polling = false;

  constructor(
    /** Fetches receipts for the hashes, in order (null while not mined); throws when the chain did not answer. */
    private readonly fetchReceipts: (hashes: Hex[]) => Promise<(RawReceipt | null)[]>,
    private readonly intervalMs: number,
  ) {}

  wait(hash: Hex, timeoutMs: number): Promise<RawReceipt> {
    return new Promise<RawReceipt>((resolve, reject) => {
      const waiters = this.waiting.get(hash) ?? [];
      waiters.push({ resolve, reject, deadline: Date.now() + timeoutMs, timeoutMs });
      if (waiters.length === 1) this.waiting.set(hash, waiters);
      this.fresh.add(hash);
      this.soon ??= setImmediate(() => {
        this.soon = undefined;
        void this.poll(true);
      });
    });
  }

  private schedule(): void {
    if (this.timer || this.waiting.size === 0) return;
    this.timer = setTimeout(() => {
      this.timer = undefined;
      void this.poll(false);
    }, this.intervalMs);
  }

  private async poll(freshOnly: boolean): Promise<void> {
    if (this.polling) {
      // A poll is under way: the fresh hashes join the next one.
      if (freshOnly) this.schedule();
      return;
    }
    this.polling = true;
    const hashes = freshOnly ? [...this.fresh] : [...this.waiting.keys()];
    for (const hash of hashes) this.fresh.delete(hash);
    try {
      const receipts = await this.fetchReceipts(hashes).catch(() => hashes.map(() => null));
      const now = Date.now();
      hashes.forEach((hash, i) => {
        const waiters = this.waiting.get(hash);
        if (!waiters) return;
        const receipt = receipts[i];
        if (receipt) {
          this.waiting.delete(hash);
          for (const waiter of waiters) waiter.resolve(receipt);
          return;
        }
        const expired = waiters.filter((waiter) => waiter.deadline <= now);
        if (expired.length === 0) return;
        for (const waiter of expired) waiter.reject(new ReceiptTimeoutError(hash, waiter.timeoutMs));
        const left = waiters.filter((waiter) => waiter.deadline > now);
        if (left.length === 0) this.waiting.delete(hash);
        else this.waiting.set(hash, left);
      });
    } finally {
      this.polling = false;
      if (this.fresh.size > 0) {
        this.soon ??= setImmediate(() => {
          this.soon = undefined;
          void this.poll(true);
        });
      }
      this.schedule();
    }
  }
}
