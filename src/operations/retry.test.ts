import { afterEach, describe, expect, it, vi } from "vitest";
import { backoffMs, limitConcurrency, retry } from "./retry.ts";

afterEach(() => {
  vi.useRealTimers();
});

/** A sleep that records each wait and returns at once. */
function recorder() {
  const waits: number[] = [];
  return { waits, sleep: async (ms: number) => void waits.push(ms) };
}

class Busy extends Error {
  constructor(readonly retryAfter?: number) {
    super("busy");
  }
}

describe("retry", () => {
  it("retries with doubling waits until the work succeeds", async () => {
    const { waits, sleep } = recorder();
    let calls = 0;
    const result = await retry(
      async ({ number }) => {
        calls++;
        expect(number).toBe(calls);
        if (calls < 3) throw new Busy();
        return "ok";
      },
      { attempts: 5, baseMs: 100, sleep },
    );
    expect(result).toBe("ok");
    expect(waits).toEqual([100, 200]);
  });

  it("throws the last error once the attempts run out", async () => {
    const { waits, sleep } = recorder();
    let calls = 0;
    const error = await retry(
      async () => {
        calls++;
        throw new Error(`failure ${calls}`);
      },
      { attempts: 3, baseMs: 10, sleep },
    ).catch((caught: unknown) => caught);
    expect((error as Error).message).toBe("failure 3");
    expect(waits).toEqual([10, 20]);
  });

  it("passes an error retryOn refuses on at once", async () => {
    let calls = 0;
    const refused = new Error("400");
    const error = await retry(
      async () => {
        calls++;
        throw refused;
      },
      { attempts: 4, baseMs: 10, retryOn: (e) => e instanceof Busy, sleep: async () => {} },
    ).catch((caught: unknown) => caught);
    expect(error).toBe(refused);
    expect(calls).toBe(1);
  });

  it("retries a result retryResult refuses, and returns the last one when the attempts run out", async () => {
    let calls = 0;
    const result = await retry(async () => ++calls, {
      attempts: 3,
      baseMs: 1,
      retryResult: (n) => n < 10,
      sleep: async () => {},
    });
    expect(result).toBe(3);
  });

  it("caps the backoff at maxMs and jitters it between half and all of itself", () => {
    expect([0, 1, 2, 3, 4].map((retry) => backoffMs(retry, { baseMs: 100, maxMs: 500 }))).toEqual([
      100, 200, 400, 500, 500,
    ]);
    expect(backoffMs(1, { baseMs: 100, jitter: () => 0 })).toBe(100);
    expect(backoffMs(1, { baseMs: 100, jitter: () => 0.5 })).toBe(150);
    for (let i = 0; i < 50; i++) {
      const wait = backoffMs(2, { baseMs: 100, jitter: true });
      expect(wait).toBeGreaterThanOrEqual(200);
      expect(wait).toBeLessThanOrEqual(400);
    }
  });

  it("waits a Retry-After longer than the backoff, and the backoff when it is longer", async () => {
    const { waits, sleep } = recorder();
    let calls = 0;
    await retry(
      async () => {
        calls++;
        if (calls === 1) throw new Busy(2000);
        if (calls === 2) throw new Busy(5);
        return "ok";
      },
      {
        attempts: 4,
        baseMs: 100,
        sleep,
        retryAfterMs: (outcome) => ("error" in outcome ? (outcome.error as Busy).retryAfter : undefined),
      },
    );
    expect(waits).toEqual([2000, 200]);
  });

  it("stops at once when the Retry-After asked for is longer than maxRetryAfterMs", async () => {
    const { waits, sleep } = recorder();
    let calls = 0;
    const error = await retry(
      async () => {
        calls++;
        throw new Busy(3_600_000);
      },
      {
        attempts: 4,
        baseMs: 100,
        maxRetryAfterMs: 10_000,
        sleep,
        retryAfterMs: (outcome) => ("error" in outcome ? (outcome.error as Busy).retryAfter : undefined),
      },
    ).catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(Busy);
    expect(calls).toBe(1);
    expect(waits).toEqual([]);
  });

  it("an abort during a backoff ends the wait at once with the signal's reason", async () => {
    vi.useFakeTimers();
    const controller = new AbortController();
    let calls = 0;
    const outcome = retry(
      async () => {
        calls++;
        throw new Busy();
      },
      { attempts: 5, baseMs: 60_000, signal: controller.signal },
    ).catch((caught: unknown) => caught);
    await vi.advanceTimersByTimeAsync(0);
    expect(calls).toBe(1);
    const reason = new Error("the caller gave up");
    controller.abort(reason);
    expect(await outcome).toBe(reason);
    expect(calls).toBe(1);
    // The backoff's timer was cleared, not left to fire.
    expect(vi.getTimerCount()).toBe(0);
  });

  it("an abort cuts short an injected sleep too", async () => {
    const controller = new AbortController();
    let sleeping = () => {};
    const asleep = new Promise<void>((resolve) => {
      sleeping = resolve;
    });
    const outcome = retry(
      async () => {
        throw new Busy();
      },
      {
        attempts: 3,
        baseMs: 10,
        signal: controller.signal,
        sleep: () => {
          sleeping();
          return new Promise<void>(() => {});
        },
      },
    ).catch((caught: unknown) => caught);
    await asleep;
    controller.abort("stop");
    expect(await outcome).toBe("stop");
  });

  it("does not start a try once the signal has aborted", async () => {
    let calls = 0;
    const error = await retry(
      async () => {
        calls++;
        return 1;
      },
      { attempts: 3, baseMs: 10, signal: AbortSignal.abort("gone") },
    ).catch((caught: unknown) => caught);
    expect(error).toBe("gone");
    expect(calls).toBe(0);
  });

  it("passes on a try's own failure when the signal aborted during it, without retrying", async () => {
    const controller = new AbortController();
    const failure = new Busy();
    let calls = 0;
    const error = await retry(
      async () => {
        calls++;
        controller.abort("late");
        throw failure;
      },
      { attempts: 3, baseMs: 10, signal: controller.signal, sleep: async () => {} },
    ).catch((caught: unknown) => caught);
    expect(error).toBe(failure);
    expect(calls).toBe(1);
  });
});

describe("limitConcurrency", () => {
  /** A call that stays running until `finish` is called. */
  function gate() {
    let finish = () => {};
    const done = new Promise<void>((resolve) => {
      finish = resolve;
    });
    return { done, finish };
  }

  it("never runs more than n calls at once, and runs the waiters in arrival order", async () => {
    const limit = limitConcurrency(3);
    let running = 0;
    let most = 0;
    const order: number[] = [];
    const calls = Array.from({ length: 20 }, (_, i) =>
      limit(async () => {
        running++;
        most = Math.max(most, running);
        order.push(i);
        await new Promise((resolve) => setTimeout(resolve, (i * 7) % 5));
        running--;
        if (i % 4 === 0) throw new Error(`call ${i} failed`);
        return i;
      }),
    );
    const settled = await Promise.allSettled(calls);
    expect(most).toBe(3);
    expect(order).toEqual(Array.from({ length: 20 }, (_, i) => i));
    expect(settled.filter((s) => s.status === "rejected")).toHaveLength(5);
    // A failed call gave its slot back too: a fresh call runs at once.
    expect(await limit(async () => "free")).toBe("free");
  });

  it("a waiter whose signal aborts leaves the queue at once; the others keep their turns", async () => {
    const limit = limitConcurrency(1);
    const first = gate();
    const started: string[] = [];
    const running = limit(async () => {
      started.push("first");
      await first.done;
    });
    const controller = new AbortController();
    const abandoned = limit(async () => void started.push("abandoned"), controller.signal).catch(
      (caught: unknown) => caught,
    );
    const later = limit(async () => void started.push("later"));
    controller.abort("no longer wanted");
    expect(await abandoned).toBe("no longer wanted");
    first.finish();
    await running;
    await later;
    expect(started).toEqual(["first", "later"]);
  });

  it("an already aborted signal is refused without taking a slot", async () => {
    const limit = limitConcurrency(1);
    const error = await limit(async () => "ran", AbortSignal.abort("gone")).catch(
      (caught: unknown) => caught,
    );
    expect(error).toBe("gone");
    expect(await limit(async () => "ran")).toBe("ran");
  });

  it("refuses a limit that is not a whole number of at least 1", () => {
    expect(() => limitConcurrency(0)).toThrow(RangeError);
    expect(() => limitConcurrency(1.5)).toThrow(RangeError);
  });
});
