/**
 * When a key that was refused or left unknown is tried again: 2 s after the first time, doubling up to a
 * minute; forgotten once the key is decided.
 */
export class RetryBackoff {
  private readonly retryAt = new Map<string, number>();
  private readonly attempts = new Map<string, number>();

  constructor(private readonly now: () => number) {}

  /** Not to be tried before its backoff has passed. */
  waiting(key: string): boolean {
    return (this.retryAt.get(key) ?? 0) > this.now();
  }

  /** One more refusal: the next try waits twice as long as the last (at most a minute). */
  postpone(key: string): void {
    const attempts = (this.attempts.get(key) ?? 0) + 1;
    this.attempts.set(key, attempts);
    this.retryAt.set(key, this.now() + Math.min(60_000, 2000 * 2 ** (attempts - 1)));
  }

  forget(key: string): void {
    this.retryAt.delete(key);
    this.attempts.delete(key);
  }
}
