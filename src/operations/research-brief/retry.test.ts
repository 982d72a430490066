import { afterEach, describe, expect, it, vi } from "vitest";
import { ProviderError, withRetries } from "./retry.ts";

afterEach(() => {
  vi.useRealTimers();
});

describe("research provider retries", () => {
  it("a job cancelled during a backoff stops waiting at once, with the signal's reason", async () => {
    vi.useFakeTimers();
    const controller = new AbortController();
    let calls = 0;
    const outcome = withRetries(
      async () => {
        calls++;
        throw new ProviderError("search", "answered 503", true);
      },
      { attempts: 3, baseDelayMs: 60_000 },
      controller.signal,
    ).catch((caught: unknown) => caught);
    await vi.advanceTimersByTimeAsync(0);
    expect(calls).toBe(1);
    const reason = new DOMException("the job was cancelled", "AbortError");
    controller.abort(reason);
    expect(await outcome).toBe(reason);
    expect(calls).toBe(1);
    expect(vi.getTimerCount()).toBe(0);
  });

  it("waits the base delay, then twice it, and does not retry a non-retryable failure", async () => {
    vi.useFakeTimers();
    let calls = 0;
    const outcome = withRetries(
      async () => {
        calls++;
        throw new ProviderError("model", "answered 503", true);
      },
      { attempts: 3, baseDelayMs: 1000 },
    ).catch((caught: unknown) => caught);
    await vi.advanceTimersByTimeAsync(999);
    expect(calls).toBe(1);
    await vi.advanceTimersByTimeAsync(1);
    expect(calls).toBe(2);
    await vi.advanceTimersByTimeAsync(1999);
    expect(calls).toBe(2);
    await vi.advanceTimersByTimeAsync(1);
    expect(calls).toBe(3);
    expect(((await outcome) as Error).message).toBe("model: answered 503");

    calls = 0;
    const refused = await withRetries(
      async () => {
        calls++;
        throw new ProviderError("model", "answered 401", false);
      },
      { attempts: 3, baseDelayMs: 1000 },
    ).catch((caught: unknown) => caught);
    expect((refused as Error).message).toBe("model: answered 401");
    expect(calls).toBe(1);
  });
});
