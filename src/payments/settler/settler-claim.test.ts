import { spawn } from "node:child_process";
import fs from "node:fs";
import os, { hostname } from "node:os";
import path from "node:path";
import pino from "pino";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { SqliteStore } from "../../store/sqlite/sqlite-store.ts";
import { holdSettlerAccount, instanceIdFor, isDeadLocalHolder, machineKey } from "./settler-claim.ts";

const log = pino({ level: "silent" });
const NETWORK = "eip155:8453";
const ADDRESS = "0x00000000000000000000000000000000000000aa";
const ACCOUNT = `${NETWORK}:${ADDRESS}`;

/** The pid of a process that ran and exited (its pid is free, unless the system reuses it at once). */
async function deadPid(): Promise<number> {
  const child = spawn(process.execPath, ["-e", ""], { stdio: "ignore" });
  await new Promise((resolve) => child.once("exit", resolve));
  return child.pid as number;
}

describe("settlement key claim after a crash", () => {
  let dir: string;
  let store: SqliteStore;
  beforeEach(() => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), "utility402-claim-"));
    store = new SqliteStore(path.join(dir, "store.sqlite"));
  });
  afterEach(async () => {
    await store.close();
    fs.rmSync(dir, { recursive: true, force: true });
  });

  const stale = (holder: string) =>
    store.claimSettler({
      account: ACCOUNT,
      instanceId: holder,
      now: Date.now(),
      leaseUntil: Date.now() + 30_000,
    });

  it("takes over at once the unexpired claim of a process of this machine that is gone", async () => {
    expect((await stale(instanceIdFor(await deadPid()))).claimed).toBe(true);
    const hold = await holdSettlerAccount(store, NETWORK, ADDRESS, log);
    expect(hold.held()).toBe(true);
    await hold.release();
  });

  it("refuses while the holder is a live process of this machine", async () => {
    const sleeper = spawn(process.execPath, ["-e", "setTimeout(() => {}, 60000)"], { stdio: "ignore" });
    try {
      expect((await stale(instanceIdFor(sleeper.pid as number))).claimed).toBe(true);
      await expect(holdSettlerAccount(store, NETWORK, ADDRESS, log)).rejects.toThrow(
        /in use by another instance/,
      );
    } finally {
      sleeper.kill("SIGKILL");
    }
  });

  it("refuses the claims of other machines and of the older form, whatever their pid", async () => {
    const pid = await deadPid();
    for (const holder of [
      `another-host/${pid}/abcdef12/${machineKey()}`,
      `${hostname()}/${pid}/abcdef12/000000000000`,
      `${hostname()}/${pid}/abcdef12`,
    ]) {
      await store.releaseSettler(ACCOUNT, holder);
      expect((await stale(holder)).claimed).toBe(true);
      await expect(holdSettlerAccount(store, NETWORK, ADDRESS, log)).rejects.toThrow(
        /in use by another instance/,
      );
      await store.releaseSettler(ACCOUNT, holder);
    }
  });

  it("reads holders strictly", () => {
    const here = { hostname: "h", machineKey: "k", pid: 10 };
    const dead = () => false;
    expect(isDeadLocalHolder("h/42/r/k", here, dead)).toBe(true);
    expect(isDeadLocalHolder("h/42/r/k", here, () => true)).toBe(false);
    expect(isDeadLocalHolder("h/10/r/k", here, dead)).toBe(false);
    expect(isDeadLocalHolder("h/042/r/k", here, dead)).toBe(false);
    expect(isDeadLocalHolder("h/x/r/k", here, dead)).toBe(false);
    expect(isDeadLocalHolder("h/42/r/", { ...here, machineKey: "" }, dead)).toBe(false);
    expect(isDeadLocalHolder("other/42/r/k", here, dead)).toBe(false);
  });
});
