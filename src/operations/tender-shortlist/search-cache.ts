/**
 * Where fetched TED results are kept between identical requests, and what makes concurrent identical
 * requests share one upstream fetch. This build keeps both in memory (one instance); a shared
 * implementation (a PostgreSQL lock and table, so several instances fetch once) fits the same interface.
 */
export interface SearchCache<T> {
  /**
   * The value cached under `key` if it is younger than the TTL; else the value of the one `load` running
   * for `key` (started now if none is). A failed load is shared by its waiters and never cached.
   */
  getOrLoad(key: string, load: () => Promise<T>): Promise<{ value: T; cached: boolean }>;
  close?(): Promise<void>;
}

export interface MemorySearchCacheOptions {
  ttlMs: number;
  /** Oldest entries go first beyond this many keys. */
  maxEntries: number;
  now: () => number;
}

export class MemorySearchCache<T> implements SearchCache<T> {
  private readonly entries = new Map<string, { value: T; storedAt: number }>();
  private readonly loading = new Map<string, Promise<T>>();

  constructor(private readonly options: MemorySearchCacheOptions) {}

  async getOrLoad(key: string, load: () => Promise<T>): Promise<{ value: T; cached: boolean }> {
    const entry = this.entries.get(key);
    if (entry && this.options.now() - entry.storedAt < this.options.ttlMs)
      return { value: entry.value, cached: true };
    if (entry) this.entries.delete(key);
    const running = this.loading.get(key);
    if (running) return { value: await running, cached: false };
    const started = load();
    this.loading.set(key, started);
    try {
      const value = await started;
      if (this.options.ttlMs > 0) this.store(key, value);
      return { value, cached: false };
    } finally {
      this.loading.delete(key);
    }
  }

  private store(key: string, value: T): void {
    this.entries.delete(key);
    this.entries.set(key, { value, storedAt: this.options.now() });
    while (this.entries.size > this.options.maxEntries) {
      this.entries.delete(this.entries.keys().next().value as string);
    }
  }
}
