/**
 * Hands out transaction nonces for one sending account, one send at a time.
 *
 * viem's nonceManager was measured handing out duplicate nonces after a send error; here the
 * allocation and the broadcast happen under one lock, the counter advances only when a send
 * succeeded, and any send error re-reads the account's pending nonce from the chain before
 * the next send. Waiting for receipts happens outside the lock, so settlements still overlap.
 */
export class NonceAllocator {
  private next: number | undefined;
  private tail: Promise<unknown> = Promise.resolve();

  constructor(private readonly readPendingNonce: () => Promise<number>) {}

  send<T>(broadcast: (nonce: number) => Promise<T>): Promise<T> {
    const run = async () => {
      if (this.next === undefined) this.next = await this.readPendingNonce();
      const nonce = this.next;
      try {
        const result = await broadcast(nonce);
        this.next = nonce + 1;
        return result;
      } catch (error) {
        this.next = undefined;
        throw error;
      }
    };
    const result = this.tail.then(run, run);
    this.tail = result.catch(() => undefined);
    return result;
  }
}
