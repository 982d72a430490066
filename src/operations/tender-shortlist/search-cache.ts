import { randomUUID } from "node:crypto";
import type { Store } from "../../store/store.ts";

/** Where fetched TED results are kept between identical requests, and what makes identical requests share one fetch. */
export interface SearchCache<T> {
  /**
   * The value cached under `key` if it is younger than the TTL; else the value of the one `load` running
   * for `key` (started now if none is). A failed load is shared by its waiters in this instance and never cached.
   */
  getOrLoad(key: string, load: () => Promise<T>): Promise<{ value: T; cached: boolean }>;
}

export interface Codec<T> {
  encode(value: T): string;
  decode(text: string): T;
}

export interface StoreSearchCacheOptions<T> {
  store: Pick<Store, "getCacheEntry" | "putCacheEntry" | "claimCacheLoad" | "releaseCacheLoad">;
  /** Prefixes every key, so other users of the store's cache never collide. */
  namespace: string;
  codec: Codec<T>;
  ttlMs: number;
  /** How long one instance may load a key before another may take over (a load that died). */
  loadLeaseMs: number;
  /** How often an instance waiting for another instance's load looks for its result. */
  pollMs?: number;
  /** Fresh entries this instance also keeps in memory (oldest dropped first). */
  maxLocalEntries: number;
  now: () => number;
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * The search cache shared by every instance on one store: an entry fetched by one instance serves
 * the others for the TTL, and a key missing everywhere is loaded by one instance at a time (a load
 * claim in the store) while the others wait for its entry. Within an instance, concurrent identical
 * keys share one promise, and a fresh entry is kept in memory too, so a cached answer costs no read.
 */
export class StoreSearchCache<T> implements SearchCache<T> {
  private readonly local = new Map<string, { value: T; storedAt: number }>();
  private readonly loading = new Map<string, Promise<{ value: T; cached: boolean }>>();
  private readonly owner = randomUUID();

  constructor(private readonly options: StoreSearchCacheOptions<T>) {}

  async getOrLoad(key: string, load: () => Promise<T>): Promise<{ value: T; cached: boolean }> {
    const fresh = this.local.get(key);
    if (fresh && this.isFresh(fresh.storedAt)) return { value: fresh.value, cached: true };
    this.local.delete(key);
    const running = this.loading.get(key);
    if (running) return running;
    const started = this.loadShared(key, load);
    this.loading.set(key, started);
    try {
      return await started;
    } finally {
      this.loading.delete(key);
    }
  }

  private isFresh(storedAt: number): boolean {
    return this.options.now() - storedAt < this.options.ttlMs;
  }

  private async loadShared(key: string, load: () => Promise<T>): Promise<{ value: T; cached: boolean }> {
    const { store, codec, ttlMs, loadLeaseMs, pollMs = 100, now } = this.options;
    const storeKey = `${this.options.namespace}:${key}`;
    for (;;) {
      const entry = await store.getCacheEntry(storeKey);
      if (entry && this.isFresh(entry.storedAt)) {
        const value = codec.decode(entry.value);
        this.remember(key, value, entry.storedAt);
        return { value, cached: true };
      }
      if (await store.claimCacheLoad(storeKey, this.owner, now() + loadLeaseMs, now())) {
        let value: T;
        try {
          value = await load();
        } catch (error) {
          await store.releaseCacheLoad(storeKey, this.owner);
          throw error;
        }
        const storedAt = now();
        if (ttlMs > 0) {
          await store.putCacheEntry(storeKey, { value: codec.encode(value), storedAt }, storedAt - ttlMs);
          this.remember(key, value, storedAt);
        } else {
          await store.releaseCacheLoad(storeKey, this.owner);
        }
        return { value, cached: false };
      }
      // Another instance is loading this key: its entry appears, or its claim lapses and we load.
      await sleep(pollMs);
    }
  }

  private remember(key: string, value: T, storedAt: number): void {
    this.local.delete(key);
    this.local.set(key, { value, storedAt });
    while (this.local.size > this.options.maxLocalEntries) {
      this.local.delete(this.local.keys().next().value as string);
    }
  }
}
