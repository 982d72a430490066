import { afterEach, describe, expect, it, vi } from "vitest";
import type { PaymentRecord, Store } from "../../store/store.ts";
import type { LeaseKeeper } from "./lease-keeper.ts";
import type { PaidRequest } from "./paid-request.ts";
import type { PaymentIdentity } from "./payment-identity.ts";
import { DUPLICATE_WAIT_MS, PaymentWork } from "./payment-work.ts";

describe("PaymentWork.takeOverOrWait", () => {
  afterEach(() => vi.useRealTimers());

  it("answers retry-later once the wait is over when the payment's row is gone, instead of looping on it", async () => {
    vi.useFakeTimers({ toFake: ["Date"] });
    let calls = 0;
    // Every store call takes a second of the clock: the row was read once, then vanished.
    const tick = <T>(value: T) => {
      calls++;
      vi.setSystemTime(Date.now() + 1000);
      return Promise.resolve(value);
    };
    const store = {
      takeOverPayment: () => tick(false),
      getPayment: () => tick(undefined),
    } as unknown as Store;
    const work = new PaymentWork({
      store,
      leases: { fresh: () => Date.now() + 60_000 } as unknown as LeaseKeeper,
      settlement: {} as never,
      kinds: {} as never,
      services: {} as never,
      now: () => Date.now(),
    });
    const record = { paymentKey: "k", leaseUntil: 0 } as PaymentRecord;
    // The loop yields to timers between tries (a SQLite store answers without ever leaving the microtask queue).
    let timerRan = false;
    setTimeout(() => {
      timerRan = true;
    }, 0);
    await expect(work.takeOverOrWait(record, {} as PaymentIdentity, {} as PaidRequest)).rejects.toMatchObject(
      { problem: { slug: "payment-in-progress" }, retryAfterSeconds: 5 },
    );
    expect(calls).toBeLessThanOrEqual(2 * (DUPLICATE_WAIT_MS / 1000) + 2);
    expect(timerRan).toBe(true);
  });
});
