import { afterEach, describe, expect, it, vi } from "vitest";
import { devPrivateKey } from "../../chain/dev-accounts.ts";
import { createSettlerSigner } from "./settler-signer.ts";

describe("the settler signer's background gap check", () => {
  afterEach(() => {
    vi.useRealTimers();
  });

  it("runs from the start and ends with stop(), so a stopped service leaves no timer behind", () => {
    vi.useFakeTimers();
    const before = vi.getTimerCount();
    const signer = createSettlerSigner({
      privateKey: devPrivateKey(0),
      // Never asked: nothing was sent, so the check has nothing to compare.
      rpcUrl: "http://127.0.0.1:9",
      chainId: 8453,
      pollingIntervalMs: 250,
      confirmationTimeoutMs: 1000,
    });
    expect(vi.getTimerCount()).toBe(before + 1);
    signer.stop();
    expect(vi.getTimerCount()).toBe(before);
  });
});
