import { afterEach, describe, expect, it } from "vitest";
import { SqliteStore } from "../../store/sqlite/sqlite-store.ts";
import { StoreSearchCache } from "./search-cache.ts";

const stores: SqliteStore[] = [];
afterEach(async () => {
  for (const store of stores.splice(0)) await store.close();
});

const textCodec = {
  encode: (value: string) => JSON.stringify(value),
  decode: (text: string) => JSON.parse(text),
};

/** Caches over one store, as instances over one database are; a shared fake clock. */
function setup(ttlMs = 1000, maxLocalEntries = 10) {
  const store = new SqliteStore(":memory:");
  stores.push(store);
  let now = 0;
  const instance = () =>
    new StoreSearchCache<string>({
      store,
      namespace: "test",
      codec: textCodec,
      ttlMs,
      loadLeaseMs: 60_000,
      pollMs: 5,
      maxLocalEntries,
      now: () => now,
    });
  const loads: string[] = [];
  const load =
    (key: string, value = `value of ${key}`) =>
    () => {
      loads.push(key);
      return new Promise<string>((resolve) => setTimeout(() => resolve(value), 20));
    };
  return { store, cache: instance(), instance, loads, load, advance: (ms: number) => (now += ms) };
}

describe("the search cache over the store", () => {
  it("answers an identical key from the cache until the TTL has passed", async () => {
    const { cache, loads, load, advance } = setup();
    expect(await cache.getOrLoad("q", load("q"))).toEqual({ value: "value of q", cached: false });
    advance(999);
    expect(await cache.getOrLoad("q", load("q"))).toEqual({ value: "value of q", cached: true });
    advance(1);
    expect(await cache.getOrLoad("q", load("q", "fresh"))).toEqual({ value: "fresh", cached: false });
    expect(loads).toEqual(["q", "q"]);
  });

  it("runs one load for concurrent identical keys (single flight), one per distinct key", async () => {
    const { cache, loads, load } = setup();
    const answers = await Promise.all([
      ...Array.from({ length: 5 }, () => cache.getOrLoad("q", load("q"))),
      cache.getOrLoad("other", load("other")),
    ]);
    expect(loads).toEqual(["q", "other"]);
    expect(answers.map((answer) => answer.value)).toEqual([...Array(5).fill("value of q"), "value of other"]);
  });

  it("makes instances on one store share a load and its entry", async () => {
    const { instance, loads, load } = setup();
    const [first, second, third] = [instance(), instance(), instance()];
    const answers = await Promise.all([first, second, third].map((cache) => cache.getOrLoad("q", load("q"))));
    expect(loads).toEqual(["q"]);
    expect(answers.map((answer) => answer.value)).toEqual(Array(3).fill("value of q"));
    expect(answers.filter((answer) => !answer.cached)).toHaveLength(1);
    // A fourth instance started later reads the entry another one stored.
    expect(await instance().getOrLoad("q", load("q"))).toEqual({ value: "value of q", cached: true });
    expect(loads).toEqual(["q"]);
  });

  it("shares a failure with the requests waiting for it in the instance, does not keep it, and frees the key", async () => {
    const { cache, instance } = setup();
    let calls = 0;
    const failing = () => {
      calls++;
      return new Promise<string>((_, reject) => setTimeout(() => reject(new Error("upstream down")), 5));
    };
    const results = await Promise.allSettled([cache.getOrLoad("q", failing), cache.getOrLoad("q", failing)]);
    expect(results.map((result) => result.status)).toEqual(["rejected", "rejected"]);
    expect(calls).toBe(1);
    expect((await instance().getOrLoad("q", async () => "recovered")).value).toBe("recovered");
  });

  it("lets another instance load a key whose loader's claim lapsed", async () => {
    const { store, instance, advance } = setup();
    expect(await store.claimCacheLoad("test:q", "a dead instance", 60_000, 0)).toBe(true);
    const waiting = instance().getOrLoad("q", async () => "taken over");
    await new Promise((resolve) => setTimeout(resolve, 30));
    advance(60_000);
    expect(await waiting).toEqual({ value: "taken over", cached: false });
  });

  it("with a TTL of 0 keeps nothing but still shares concurrent loads", async () => {
    const { cache, loads, load } = setup(0);
    await Promise.all([cache.getOrLoad("q", load("q")), cache.getOrLoad("q", load("q"))]);
    await cache.getOrLoad("q", load("q"));
    expect(loads).toEqual(["q", "q"]);
  });

  it("keeps at most maxLocalEntries in memory and reads older ones back from the store", async () => {
    const { cache, loads, load } = setup(1000, 2);
    for (const key of ["a", "b", "c", "a"]) await cache.getOrLoad(key, load(key));
    expect(loads).toEqual(["a", "b", "c"]);
  });
});
