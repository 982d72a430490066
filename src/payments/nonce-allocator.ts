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

  private async flush(): Promise<void> {
    try {
      while (this.queue.length > 0) {
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

interface Settle {
  resolve(value: unknown): void;
  reject(error: unknown): void;
}
