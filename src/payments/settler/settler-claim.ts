import { createHash, randomUUID } from "node:crypto";
import fs from "node:fs";
import { hostname } from "node:os";
import type { Logger } from "pino";
import { ConfigError } from "../../config.ts";
import type { Store } from "../../store/store.ts";

/** How long a claim lasts without renewal: an instance that died frees its key after this. */
const CLAIM_LEASE_MS = 30_000;
const RENEW_EVERY_MS = CLAIM_LEASE_MS / 3;

export interface SettlerHold {
  /** False once a renewal failed: another instance may be sending from the same key. */
  held(): boolean;
  release(): Promise<void>;
}

/**
 * What tells this machine (this boot, this process namespace) from any other: the kernel's boot id
 * and the pid namespace. Two containers on different hosts may share a hostname and a pid; they
 * never share both of these. Empty when the platform has neither (the takeover is then never made).
 */
export function machineKey(): string {
  const parts: string[] = [];
  try {
    parts.push(fs.readFileSync("/proc/sys/kernel/random/boot_id", "utf8").trim());
  } catch {}
  try {
    parts.push(fs.readlinkSync("/proc/self/ns/pid"));
  } catch {}
  if (parts.length === 0) return "";
  return createHash("sha256").update(parts.join("|")).digest("hex").slice(0, 12);
}

/** The claim's holder id: `hostname/pid/random/machine key`, readable in the refusal message. */
export function instanceIdFor(pid = process.pid): string {
  return `${hostname()}/${pid}/${randomUUID().slice(0, 8)}/${machineKey()}`;
}

/** Whether a process with this pid runs here (EPERM: it runs under another user). */
function processAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === "EPERM";
  }
}

/**
 * True when `holder` names a process of this very machine (same hostname, boot and pid namespace)
 * that no longer runs: the claim of an instance that died (kill -9, a crash) here, which a start may
 * take over at once instead of waiting for its lease to run out. Claims of live processes, of other
 * machines, and in the older `hostname/pid/random` form are never taken over.
 */
export function isDeadLocalHolder(
  holder: string,
  here = { hostname: hostname(), machineKey: machineKey(), pid: process.pid },
  alive: (pid: number) => boolean = processAlive,
): boolean {
  const parts = holder.split("/");
  if (parts.length !== 4) return false;
  const [host, pidText, , key] = parts as [string, string, string, string];
  if (host !== here.hostname || !key || key !== here.machineKey) return false;
  if (!/^[1-9][0-9]*$/.test(pidText)) return false;
  const pid = Number(pidText);
  if (pid === here.pid) return false; // our own pid: another instance of this very process, alive
  return !alive(pid);
}

/**
 * Transaction nonces are managed per key inside one process, so two instances sending from the
 * same settlement key would collide. Each instance claims its key in the shared store at start and
 * renews the claim while it runs; a second instance with the same key is refused with a clear
 * message. Instances that need to share one key use a facilitator (`utility402 facilitator`).
 *
 * The claim of a process that died on this machine (same hostname, boot and pid namespace; the pid
 * gone) is taken over at once: a restart after kill -9 is not refused for the rest of the dead
 * process's lease.
 */
export async function holdSettlerAccount(
  store: Store,
  network: string,
  address: string,
  log: Logger,
): Promise<SettlerHold> {
  const account = `${network}:${address}`.toLowerCase();
  const instanceId = instanceIdFor();
  const claim = () => {
    const now = Date.now();
    return store.claimSettler({ account, instanceId, now, leaseUntil: now + CLAIM_LEASE_MS });
  };
  let first = await claim();
  if (!first.claimed && isDeadLocalHolder(first.holder)) {
    // Releasing is a compare-and-delete on the dead holder's id: a live instance that took the key
    // meanwhile keeps it, and the claim below is refused as usual.
    log.warn({ holder: first.holder, account }, "taking over the settlement key claim of a dead process");
    await store.releaseSettler(account, first.holder);
    first = await claim();
  }
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
