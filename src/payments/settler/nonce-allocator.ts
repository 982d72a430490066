/**
 * Hands out transaction nonces for one sending account and broadcasts in groups, in nonce order.
 *
 * viem's nonceManager was measured handing out duplicate nonces after a send error. Here one
 * group of broadcasts is in flight at a time: every send that arrived meanwhile joins the next
 * group, gets the next consecutive nonce, and its broadcast starts in the same tick as the
 * others', so a batching transport carries the whole group to the node in one request, in nonce
 * order. Under load this spreads one round trip over many settlements instead of queueing them
 * one round trip each; a lone send is a group of one.
 *
 * After the group is answered, the counter moves past the last nonce only if every send
 * succeeded. A refused send leaves a gap that would hold back the accepted sends after it: the
 * `fillGap` broadcast (a no-op transaction) takes its nonce. After any refusal the next group
 * re-reads the account's pending nonce from the chain, so no nonce is reused or skipped for long.
 */
export class NonceAllocator {
  private next: number | undefined;
  private readonly queue: { broadcast: (nonce: number) => Promise<unknown>; settle: Settle }[] = [];
  /** Work that must see the counter with no group in flight (the gap check), run between groups. */
  private readonly chores: { run: (counter: NonceCounter) => Promise<unknown>; settle: Settle }[] = [];
  private flushing = false;

  constructor(
    private readonly readPendingNonce: () => Promise<number>,
    /** Broadcasts a transaction that does nothing with the given nonce (closes a gap). */
    private readonly fillGap: (nonce: number) => Promise<unknown> = async () => {
      throw new Error("no gap filler");
    },
  ) {}

  send<T>(broadcast: (nonce: number) => Promise<T>): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      this.queue.push({ broadcast, settle: { resolve: resolve as (value: unknown) => void, reject } });
      // Sends made in the same tick join one group.
      if (!this.flushing) {
        this.flushing = true;
        queueMicrotask(() => void this.flush());
      }
    });
  }

  /**
   * Runs `run` while no group is in flight (sends arriving meanwhile wait for it), with the counter:
   * the next nonce this allocator hands out (undefined: read from the chain at the next send).
   */
  exclusive<T>(run: (counter: NonceCounter) => Promise<T>): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      this.chores.push({ run, settle: { resolve: resolve as (value: unknown) => void, reject } });
      if (!this.flushing) {
        this.flushing = true;
        queueMicrotask(() => void this.flush());
      }
    });
  }

  private async flush(): Promise<void> {
    try {
      while (this.queue.length > 0 || this.chores.length > 0) {
        for (const chore of this.chores.splice(0)) {
          // The chore may move the counter (a repaired gap) or clear it (read it from the chain).
          const counter: NonceCounter = { next: this.next };
          await chore.run(counter).then(chore.settle.resolve, chore.settle.reject);
          this.next = counter.next;
        }
        if (this.queue.length === 0) continue;
        const group = this.queue.splice(0);
        let first: number;
        try {
          this.next ??= await this.readPendingNonce();
          first = this.next;
        } catch (error) {
          for (const { settle } of group) settle.reject(error);
          continue;
        }
        // Started in one tick, in nonce order: one batch on the wire.
        const results = await Promise.allSettled(group.map(({ broadcast }, i) => broadcast(first + i)));
        const refused = results.flatMap((result, i) => (result.status === "rejected" ? [i] : []));
        if (refused.length === 0) {
          this.next = first + group.length;
        } else {
          let lastAccepted = -1;
          results.forEach((result, i) => {
            if (result.status === "fulfilled") lastAccepted = i;
          });
          for (const i of refused) {
            if (i < lastAccepted) await this.fillGap(first + i).catch(() => undefined);
          }
          this.next = undefined;
        }
        results.forEach((result, i) => {
          const { settle } = group[i] as (typeof group)[number];
          if (result.status === "fulfilled") settle.resolve(result.value);
          else settle.reject(result.reason);
        });
      }
    } finally {
      this.flushing = false;
    }
  }
}

/** The allocator's counter as an exclusive chore sees it. */
export interface NonceCounter {
  next: number | undefined;
}

/** A transaction this account signed and broadcast, kept so it can be sent again if the chain loses it. */
export interface SentTransaction {
  nonce: number;
  hash: `0x${string}`;
  /** The signed transaction: sent again as it is, it is the same transaction (same hash). */
  raw: `0x${string}`;
  /** Epoch ms of the last broadcast. */
  sentAt: number;
  /** A no-op that took a nonce (a gap filler), or a contract call (a settlement). */
  kind: "call" | "filler";
  /** How many times it was sent again after the chain lost it. */
  resent: number;
}

/**
 * What to do about the account's nonces the chain does not hold. The chain's pending nonce (mined
 * plus accepted in the mempool, contiguous) is compared with the next nonce this process hands
 * out; every nonce between them was handed out but is gone from the chain and the mempool: its
 * transaction was dropped (a node restart, `anvil_dropTransaction`, a mempool eviction) or undone
 * (a reorg, a chain restored from an earlier state). Until those nonces are taken again, every later
 * transaction waits in the mempool behind them and no settlement lands.
 *
 * - `none`: the chain holds every nonce handed out;
 * - `ahead`: the chain is past this process (another sender used the key): read the nonce anew;
 * - `gap`: send again each kept transaction of a missing nonce (the very same signed bytes, so a
 *   settlement waiting for its receipt gets it, and a settled payment's transfer becomes true again),
 *   and fill the nonces no kept transaction has with a no-op.
 */
export type GapPlan =
  | { kind: "none" }
  | { kind: "ahead" }
  | { kind: "gap"; from: number; to: number; resend: SentTransaction[]; fill: number[] };

export function planGapRepair(input: {
  pendingNonce: number;
  nextNonce: number | undefined;
  sent: ReadonlyMap<number, SentTransaction>;
}): GapPlan {
  const { pendingNonce, nextNonce, sent } = input;
  if (nextNonce === undefined || pendingNonce === nextNonce) return { kind: "none" };
  if (pendingNonce > nextNonce) return { kind: "ahead" };
  const resend: SentTransaction[] = [];
  const fill: number[] = [];
  for (let nonce = pendingNonce; nonce < nextNonce; nonce++) {
    const kept = sent.get(nonce);
    if (kept) resend.push(kept);
    else fill.push(nonce);
  }
  return { kind: "gap", from: pendingNonce, to: nextNonce, resend, fill };
}

/**
 * The transactions of one account this process sent recently, by nonce: what a gap repair sends
 * again. Kept for `retainMs` after their last broadcast (long enough for a reorg or a node restart
 * to undo them; a chain restored from an older state loses transactions older than that for good,
 * and their nonces are filled with no-ops).
 */
export class SentTransactions {
  private readonly byNonce = new Map<number, SentTransaction>();

  constructor(private readonly retainMs: number) {}

  record(tx: Omit<SentTransaction, "resent" | "sentAt"> & { sentAt?: number }): void {
    this.byNonce.set(tx.nonce, { ...tx, sentAt: tx.sentAt ?? Date.now(), resent: 0 });
  }

  get view(): ReadonlyMap<number, SentTransaction> {
    return this.byNonce;
  }

  /** Drops what is older than the retention; true while anything is kept (the gap check keeps running). */
  prune(now = Date.now()): boolean {
    for (const [nonce, tx] of this.byNonce) if (now - tx.sentAt > this.retainMs) this.byNonce.delete(nonce);
    return this.byNonce.size > 0;
  }
}

interface Settle {
  resolve(value: unknown): void;
  reject(error: unknown): void;
}
