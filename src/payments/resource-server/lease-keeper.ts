import type { Logger } from "pino";
import type { Store } from "../../store/store.ts";

/** How long a payment's lease lasts unless its owner renews it: the time a crashed owner blocks its payment. */
export const LEASE_TTL_MS = 20_000;
/** How often an owner renews the leases of the payments it is working on. */
export const LEASE_RENEW_MS = 5_000;
/**
 * A lease with less than this left was not renewed on time: its owner stopped (a crash, a lost store)
 * or stalls. A retry then hears "in progress, retry after the lease" at once instead of waiting on it.
 */
export const STALE_LEASE_MS = LEASE_TTL_MS - LEASE_RENEW_MS - 2_000;

/**
 * The leases this instance holds on unfinished payments, kept short and renewed while the work runs.
 *
 * A lease says "this attempt works on the payment". It used to last as long as the longest operation
 * plus two settlement waits, so a crashed owner blocked its payment (and its client's retry) for
 * minutes. Now it lasts LEASE_TTL_MS and is renewed every LEASE_RENEW_MS for as long as the owner
 * lives: a crash frees the payment within LEASE_TTL_MS, for the recovery sweeper or a retry.
 * Renewal is a compare-and-set on the lease the owner holds: an owner that lost its lease (it stalled
 * past it and another attempt took over) learns so and never settles.
 */
export class LeaseKeeper {
  private readonly leases = new Map<string, number>();
  /** Per payment, the renewal in progress: renewals of one lease never race each other. */
  private readonly renewing = new Map<string, Promise<boolean>>();
  private timer: NodeJS.Timeout | undefined;

  constructor(
    private readonly store: Store,
    private readonly log: Logger,
    private readonly now: () => number = Date.now,
  ) {}

  start(): void {
    this.timer ??= setInterval(() => void this.renewAll(), LEASE_RENEW_MS);
    this.timer.unref();
  }

  stop(): void {
    if (this.timer) clearInterval(this.timer);
    this.timer = undefined;
  }

  /** A lease starting now, for a reservation or a takeover. */
  fresh(): number {
    return this.now() + LEASE_TTL_MS;
  }

  /** This instance now holds `key` until `leaseUntil` (as the store says): renewed until forgotten. */
  hold(key: string, leaseUntil: number): void {
    this.leases.set(key, leaseUntil);
  }

  /** The work on `key` ended (final, held, or let go): stop renewing. */
  forget(key: string): void {
    this.leases.delete(key);
  }

  /** The lease held on `key`, if this instance holds one. */
  current(key: string): number | undefined {
    return this.leases.get(key);
  }

  /** The lease held on `key` once a renewal in progress has ended (what a compare-and-set must name). */
  async settledLease(key: string): Promise<number | undefined> {
    await this.renewing.get(key)?.catch(() => false);
    return this.leases.get(key);
  }

  /** Renews `key` now (before a settlement); false if the lease was lost to another attempt. */
  renew(key: string): Promise<boolean> {
    const running = this.renewing.get(key);
    const next = (running ?? Promise.resolve(true)).then(() => this.renewOnce(key));
    this.renewing.set(key, next);
    return next.finally(() => {
      if (this.renewing.get(key) === next) this.renewing.delete(key);
    });
  }

  private async renewOnce(key: string): Promise<boolean> {
    const held = this.leases.get(key);
    if (held === undefined) return false;
    const next = this.now() + LEASE_TTL_MS;
    if (await this.store.renewLease(key, held, next)) {
      if (this.leases.has(key)) this.leases.set(key, next);
      return true;
    }
    this.leases.delete(key);
    return false;
  }

  private async renewAll(): Promise<void> {
    await Promise.all(
      [...this.leases.keys()].map((key) =>
        this.renew(key).catch((error) =>
          // The store is unreachable: the lease runs out, the payment waits for whoever can reach it.
          this.log.warn({ err: error, paymentKey: key }, "could not renew a payment's lease"),
        ),
      ),
    );
  }
}
