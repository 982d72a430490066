import { describe, expect, it } from "vitest";
import { MemorySearchCache } from "./search-cache.ts";

function setup(ttlMs = 1000, maxEntries = 10) {
  let now = 0;
  const cache = new MemorySearchCache<string>({ ttlMs, maxEntries, now: () => now });
  const loads: string[] = [];
  const load =
    (key: string, value = `value of ${key}`) =>
    () => {
      loads.push(key);
      return new Promise<string>((resolve) => setTimeout(() => resolve(value), 5));
    };
  return { cache, loads, load, advance: (ms: number) => (now += ms) };
}

describe("the in-memory search cache", () => {
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

  it("shares a failure with the requests waiting for it, and does not keep it", async () => {
    const { cache } = setup();
    let calls = 0;
    const failing = () => {
      calls++;
      return new Promise<string>((_, reject) => setTimeout(() => reject(new Error("upstream down")), 5));
    };
    const results = await Promise.allSettled([cache.getOrLoad("q", failing), cache.getOrLoad("q", failing)]);
    expect(results.map((result) => result.status)).toEqual(["rejected", "rejected"]);
    expect(calls).toBe(1);
    expect((await cache.getOrLoad("q", async () => "recovered")).value).toBe("recovered");
  });

  it("with a TTL of 0 keeps nothing but still shares concurrent loads", async () => {
    const { cache, loads, load } = setup(0);
    await Promise.all([cache.getOrLoad("q", load("q")), cache.getOrLoad("q", load("q"))]);
    await cache.getOrLoad("q", load("q"));
    expect(loads).toEqual(["q", "q"]);
  });

  it("forgets the oldest keys beyond its size", async () => {
    const { cache, loads, load } = setup(1000, 2);
    for (const key of ["a", "b", "c", "a"]) await cache.getOrLoad(key, load(key));
    expect(loads).toEqual(["a", "b", "c", "a"]);
  });
});
