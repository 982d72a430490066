import type { Logger } from "pino";
import type { AnyOperation } from "../../contract/operation.ts";
import type { Metrics } from "../../metrics.ts";
import type { Store } from "../../store/store.ts";
import type { PaymentGate } from "./gate.ts";
import { SweepLoop } from "./sweep-loop.ts";
import type { PaymentTerms } from "./terms.ts";

/** How often the ledger is searched for payments whose owner stopped. */
export const RECOVERY_SWEEP_MS = 2_000;
/** Orphaned payments resolved per look (each is one chain read). */
const BATCH = 32;
/** A payment left open (unused on chain, still valid) is looked at again after this long. */
const LOOK_AGAIN_MS = 10_000;

export interface RecoverySweeperOptions {
  store: Store;
  gate: PaymentGate;
  metrics: Metrics;
  log: Logger;
  /** Each served operation and its payment terms, by operation id. */
  operations: ReadonlyMap<string, { operation: AnyOperation; terms: PaymentTerms }>;
  now?: () => number;
}

/**
 * Resolves payments whose owner stopped before their final state (kill -9, a power cut, a lost store)
 * without waiting for the client to come back (docs/operations.md, "Recovery").
 *
 * Every API instance runs it. An owner renews its payment's lease while it works (LeaseKeeper), so a
 * "verified" payment whose lease ran out has no one working on it. Each is taken over under a fresh
 * lease (one instance at a time) and decided from the token's own record (PaymentGate.recover): a
 * transfer that landed makes it settled, the kept result and its receipt waiting for the client's retry;
 * otherwise it is released once its authorization has expired (nothing charged). The bound: a crashed
 * owner's payments are resolved within LEASE_TTL_MS + RECOVERY_SWEEP_MS plus a chain read when their
 * transfer landed, and within 30 s after their validBefore when it did not.
 */
export class RecoverySweeper {
  private readonly loop: SweepLoop;
  private readonly now: () => number;
  /** Payments left open at the last look: not looked at again before this time (epoch ms). */
  private readonly lookAgainAt = new Map<string, number>();

  constructor(private readonly options: RecoverySweeperOptions) {
    this.now = options.now ?? Date.now;
    this.loop = new SweepLoop(() => this.sweep(), RECOVERY_SWEEP_MS, options.log, "payment recovery sweep");
  }

  start(): void {
    this.loop.start();
  }

  stop(): Promise<void> {
    return this.loop.stop();
  }

  /** One look at the orphaned payments. */
  async sweep(): Promise<void> {
    const { store, gate, metrics, log, operations } = this.options;
    const now = this.now();
    for (const [key, at] of this.lookAgainAt) if (at <= now) this.lookAgainAt.delete(key);
    const orphans = (await store.orphanedPayments(now, BATCH + this.lookAgainAt.size)).filter(
      (record) => !this.lookAgainAt.has(record.paymentKey),
    );
    for (const record of orphans.slice(0, BATCH)) {
      if (this.loop.isStopped) return;
      const served = operations.get(record.operationId);
      if (!served) {
        // An operation this instance does not serve (any longer): another instance, or a later version, will.
        this.lookAgainAt.set(record.paymentKey, now + LOOK_AGAIN_MS);
        continue;
      }
      const callLog = log.child({ paymentKey: record.paymentKey, operation: record.operationId });
      const state = await gate
        .recover(record, { ...served, log: callLog, unattended: true })
        .catch((error) => {
          callLog.warn({ err: error }, "could not resolve an orphaned payment now");
          return "verified" as const;
        });
      if (state === "verified") {
        this.lookAgainAt.set(record.paymentKey, now + LOOK_AGAIN_MS);
      } else if (state !== "busy") {
        metrics.paymentRecovered(record.operationId, state);
        callLog.info({ state }, "orphaned payment resolved");
      }
    }
  }
}
