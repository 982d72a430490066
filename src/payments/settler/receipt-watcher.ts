import type { Hex } from "viem";

/** A receipt as the RPC returns it (eth_getTransactionReceipt), or null while the transaction is not mined. */
export type RawReceipt = Record<string, unknown> & { status?: Hex; transactionHash: Hex };

interface Waiter {
  resolve(receipt: RawReceipt): void;
  /** Rejects the wait at its deadline, whether or not a poll is answering. */
  timer: NodeJS.Timeout;
}

interface Pending {
  waiters: Waiter[];
  /** How many times the receipt was asked for. */
  checks: number;
  nextCheckAt: number;
}

export class ReceiptTimeoutError extends Error {
  constructor(hash: Hex, timeoutMs: number) {
    super(`no receipt for ${hash} within ${timeoutMs} ms`);
  }
}

/** Early checks after a transaction is handed over (ms after the previous check), before the regular interval. */
const QUICK_CHECKS_MS = [15, 40, 100];

/**
 * Waits for many transactions' receipts with one poller: each poll asks for every due receipt in
 * one JSON-RPC batch, instead of one block watcher and one request per settlement (viem's
 * waitForTransactionReceipt). A transaction is checked as soon as it is handed over, again after
 * 15, 40 and 100 ms (a chain that mines as transactions arrive, such as anvil, answers within
 * these), then every `intervalMs`: tune it to the chain's block time. A failed poll is retried at
 * the next check until the wait times out, so one lost RPC answer never orphans a settlement. Each wait
 * ends at its own deadline, also while a poll hangs or the next check is later.
 */
export class ReceiptWatcher {
  private readonly pending = new Map<Hex, Pending>();
  private readonly quickChecksMs: number[];
  private timer: NodeJS.Timeout | undefined;
  private timerAt = Number.POSITIVE_INFINITY;
  private polling = false;

  constructor(
    /** Fetches receipts for the hashes, in order (null while not mined); throws when the chain did not answer. */
    private readonly fetchReceipts: (hashes: Hex[]) => Promise<(RawReceipt | null)[]>,
    private readonly intervalMs: number,
  ) {
    this.quickChecksMs = QUICK_CHECKS_MS.filter((delay) => delay < intervalMs);
  }

  wait(hash: Hex, timeoutMs: number): Promise<RawReceipt> {
    return new Promise<RawReceipt>((resolve, reject) => {
      const now = Date.now();
      let entry = this.pending.get(hash);
      if (!entry) {
        entry = { waiters: [], checks: 0, nextCheckAt: now };
        this.pending.set(hash, entry);
      }
      const waiter: Waiter = {
        resolve,
        timer: setTimeout(() => {
          const current = this.pending.get(hash);
          if (current) {
            current.waiters = current.waiters.filter((other) => other !== waiter);
            if (current.waiters.length === 0) this.pending.delete(hash);
          }
          if (this.pending.size === 0) this.disarm();
          reject(new ReceiptTimeoutError(hash, timeoutMs));
        }, timeoutMs),
      };
      entry.waiters.push(waiter);
      this.arm();
    });
  }

  /** No check is due: nothing is waited for. */
  private disarm(): void {
    clearTimeout(this.timer);
    this.timer = undefined;
    this.timerAt = Number.POSITIVE_INFINITY;
  }

  /** Sets the timer for the earliest due check (transactions handed over in the same tick share it). */
  private arm(): void {
    if (this.polling) return; // the running poll arms the timer when it ends
    let next = Number.POSITIVE_INFINITY;
    for (const entry of this.pending.values()) next = Math.min(next, entry.nextCheckAt);
    if (next === Number.POSITIVE_INFINITY || (this.timer && this.timerAt <= next)) return;
    clearTimeout(this.timer);
    this.timerAt = next;
    this.timer = setTimeout(
      () => {
        this.timer = undefined;
        this.timerAt = Number.POSITIVE_INFINITY;
        void this.poll();
      },
      Math.max(0, next - Date.now()),
    );
  }

  private async poll(): Promise<void> {
    this.polling = true;
    try {
      const started = Date.now();
      const due = [...this.pending].filter(([, entry]) => entry.nextCheckAt <= started).map(([hash]) => hash);
      if (due.length === 0) return;
      const receipts = await this.fetchReceipts(due).catch(() => due.map(() => null));
      const now = Date.now();
      due.forEach((hash, i) => {
        const entry = this.pending.get(hash);
        if (!entry) return;
        const receipt = receipts[i];
        if (receipt) {
          this.pending.delete(hash);
          for (const waiter of entry.waiters) {
            clearTimeout(waiter.timer);
            waiter.resolve(receipt);
          }
          return;
        }
        entry.nextCheckAt = now + (this.quickChecksMs[entry.checks] ?? this.intervalMs);
        entry.checks++;
      });
    } finally {
      this.polling = false;
      this.arm();
    }
  }
}
