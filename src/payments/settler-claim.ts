import { randomUUID } from "node:crypto";
import { hostname } from "node:os";
import type { Logger } from "pino";
import { ConfigError } from "../config.ts";
import type { Store } from "../store/store.ts";

/** How long a claim lasts without renewal: an instance that died frees its key after this. */
const CLAIM_LEASE_MS = 30_000;
const RENEW_EVERY_MS = CLAIM_LEASE_MS / 3;

export interface SettlerHold {
  /** False once a renewal failed: another instance may be sending from the same key. */
  held(): boolean;
  release(): Promise<void>;
}

/**
 * Transaction nonces are managed per key inside one process, so two instances sending from the
 * same settlement key would collide. Each instance claims its key in the shared store at start and
 * renews the claim while it runs; a second instance with the same key is refused with a clear
 * message. Instances that need to share one key use a facilitator (`utility402 facilitator`).
 */
export async function holdSettlerAccount(
  store: Store,
  network: string,
  address: string,
  log: Logger,
): Promise<SettlerHold> {
  const account = `${network}:${address}`.toLowerCase();
  const instanceId = `${hostname()}/${process.pid}/${randomUUID().slice(0, 8)}`;
  const claim = () => {
    const now = Date.now();
    return store.claimSettler({ account, instanceId, now, leaseUntil: now + CLAIM_LEASE_MS });
  };
  const first = await claim();
  if (!first.claimed) {
    throw new ConfigError([
      `X402_SETTLER_PRIVATE_KEY: settlement account ${address} is in use by another instance on this database ` +
        `(${first.holder}, claim valid until ${new Date(first.leaseUntil).toISOString()}); give each instance its own ` +
        "settler key, or run one `utility402 facilitator` and point every instance at it (PAYMENT_MODE=facilitator)",
    ]);
  }
  let held = true;
  const timer = setInterval(() => {
    claim().then(
      (result) => {
        if (!result.claimed)
          log.error({ holder: result.holder, account }, "settlement key taken by another instance");
        held = result.claimed;
      },
      (error) => log.warn({ err: error }, "could not renew the settlement key claim"),
    );
  }, RENEW_EVERY_MS);
  timer.unref();
  return {
    held: () => held,
    async release() {
      clearInterval(timer);
      await store.releaseSettler(account, instanceId).catch(() => {});
    },
  };
}
