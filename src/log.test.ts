import { afterEach, describe, expect, it, vi } from "vitest";
import { isoTimeOncePerMillisecond } from "./log.ts";

afterEach(() => vi.useRealTimers());

describe("isoTimeOncePerMillisecond", () => {
  it("gives pino's ISO time fragment of the current millisecond, formatted again when the clock moves", () => {
    vi.useFakeTimers({ now: Date.parse("2026-11-21T10:00:00.123Z") });
    expect(isoTimeOncePerMillisecond()).toBe(',"time":"2026-11-21T10:00:00.123Z"');
    expect(isoTimeOncePerMillisecond()).toBe(',"time":"2026-11-21T10:00:00.123Z"');
    vi.setSystemTime(Date.parse("2026-11-21T10:00:00.124Z"));
    expect(isoTimeOncePerMillisecond()).toBe(',"time":"2026-11-21T10:00:00.124Z"');
    vi.setSystemTime(Date.parse("2026-11-21T09:59:59.999Z")); // a clock set back is followed too
    expect(JSON.parse(`{${isoTimeOncePerMillisecond().slice(1)}}`)).toEqual({
      time: "2026-11-21T09:59:59.999Z",
    });
  });
});
