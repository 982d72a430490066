import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import pino from "pino";
import { privateKeyToAccount } from "viem/accounts";
import { afterAll, describe, expect, it } from "vitest";
import { devAccounts, devPrivateKey } from "../../src/chain/dev-accounts.ts";
import { type LocalChain, startLocalChain } from "../../src/chain/local-chain.ts";
import { SqliteStore } from "../../src/store/sqlite/sqlite-store.ts";
import { type Spawned, spawnUtility402, until, waitFor } from "../helpers/processes.ts";
import { freePort } from "../helpers/service.ts";

/** Every process whose command line matches, by pid (Linux /proc). */
function processesMatching(match: (argv: string[]) => boolean): number[] {
  const pids: number[] = [];
  for (const entry of fs.readdirSync("/proc")) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const argv = fs.readFileSync(`/proc/${entry}/cmdline`, "utf8").split("\0").filter(Boolean);
      if (argv.length > 0 && match(argv)) pids.push(Number(entry));
    } catch {}
  }
  return pids;
}

/** The anvil processes serving `port`: the local chains a service on that port started. */
const anvilsOn = (port: number) =>
  processesMatching(
    (argv) =>
      path.basename(argv[0] as string) === "anvil" && argv[argv.indexOf("--port") + 1] === String(port),
  );

/** The chain watchdogs of these anvils. */
const watchdogsOf = (anvils: number[]) =>
  processesMatching(
    (argv) => argv.includes("utility402-chain-watchdog") && anvils.includes(Number(argv[argv.length - 1])),
  );

const killQuietly = (pid: number, signal: NodeJS.Signals) => {
  try {
    process.kill(pid, signal);
  } catch {}
};

/** kill -9 and wait until the process is gone. */
async function kill9(spawned: Spawned): Promise<void> {
  const exited = new Promise((resolve) => {
    if (spawned.child.exitCode !== null || spawned.child.signalCode !== null) resolve(undefined);
    else spawned.child.once("exit", resolve);
  });
  spawned.child.kill("SIGKILL");
  await exited;
}

/**
 * A restart right after `kill -9`, as a supervisor does it: the new process must start at once, not be
 * refused for the dead process's settlement-key claim (self mode) or fail on the chain the dead process
 * left running (local mode). No chain is left behind.
 */
describe("restart after kill -9", () => {
  const spawned: Spawned[] = [];
  const dirs: string[] = [];
  const chainPorts: number[] = [];
  let chain: LocalChain | undefined;

  const serve = (env: Record<string, string>) => {
    const instance = spawnUtility402(["serve"], { LOG_LEVEL: "warn", ...env });
    spawned.push(instance);
    return instance;
  };
  const dataDir = () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), "utility402-restart-"));
    dirs.push(dir);
    return dir;
  };

  afterAll(async () => {
    await Promise.all(spawned.map((instance) => instance.stop()));
    await chain?.stop();
    // Whatever a failed run left: the chains of the ports this test gave out, and their watchdogs.
    for (const port of chainPorts) {
      const anvils = anvilsOn(port);
      for (const pid of [...watchdogsOf(anvils), ...anvils]) killQuietly(pid, "SIGKILL");
    }
    for (const dir of dirs) fs.rmSync(dir, { recursive: true, force: true });
  });

  it("self mode: the restarted instance takes over its dead predecessor's settlement key claim at once", async () => {
    chain = await startLocalChain({ port: await freePort(), log: pino({ level: "silent" }) });
    const port = await freePort();
    const env = {
      PORT: String(port),
      DATA_DIR: dataDir(),
      PAYMENT_MODE: "self",
      X402_SETTLER_PRIVATE_KEY: devPrivateKey(7),
      RPC_URL: chain.rpcUrl,
      X402_PAY_TO: devAccounts().payTo.address,
    };
    const base = `http://127.0.0.1:${port}`;
    const first = serve(env);
    await waitFor(`${base}/readyz`, first.child, first.output, 180_000);
    await kill9(first);
    // The dead process's claim as if it had just been renewed for a long lease: the restart cannot win by
    // starting slowly enough for the lease to run out (a loaded machine takes tens of seconds to start).
    const store = new SqliteStore(path.join(env.DATA_DIR, "utility402.sqlite"));
    try {
      const account = `eip155:8453:${privateKeyToAccount(devPrivateKey(7)).address}`.toLowerCase();
      const now = Date.now();
      const probe = await store.claimSettler({ account, instanceId: "test/0/probe/x", now, leaseUntil: now });
      expect(probe.claimed).toBe(false);
      const holder = probe.claimed ? "" : probe.holder;
      expect(holder).toContain(`/${first.child.pid}/`);
      expect(
        (await store.claimSettler({ account, instanceId: holder, now, leaseUntil: now + 10 * 60_000 }))
          .claimed,
      ).toBe(true);
    } finally {
      await store.close();
    }

    // Before the fix this process exited at once: "settlement account … is in use by another instance".
    const second = serve(env);
    const ready = await waitFor(`${base}/readyz`, second.child, second.output, 180_000);
    expect((await ready.json()).status).toBe("ready");
    expect(second.output()).toContain("taking over the settlement key claim of a dead process");
    expect(second.output()).not.toContain("in use by another instance");
    await second.stop();
    expect(second.child.exitCode).toBe(0);
  }, 420_000);

  it("local mode: a restart replaces the chain the killed service left running, and stopping leaves none", async () => {
    const chainPort = await freePort();
    chainPorts.push(chainPort);
    const port = await freePort();
    const env = { PORT: String(port), DATA_DIR: dataDir(), LOCAL_CHAIN_PORT: String(chainPort) };
    const base = `http://127.0.0.1:${port}`;
    const first = serve(env);
    await waitFor(`${base}/readyz`, first.child, first.output, 180_000);
    const [orphan] = anvilsOn(chainPort);
    expect(orphan).toBeDefined();
    // The crash takes the watchdog too (as when a whole container's processes are killed but its
    // volume and a stray chain survive): the orphan is certainly still running when the restart comes.
    for (const pid of watchdogsOf([orphan as number])) killQuietly(pid, "SIGKILL");
    await kill9(first);
    expect(anvilsOn(chainPort)).toEqual([orphan]);

    // Before the fix: "something already answers on http://127.0.0.1:<port> (a chain left running?)".
    const second = serve(env);
    const ready = await waitFor(`${base}/readyz`, second.child, second.output, 180_000);
    expect((await ready.json()).status).toBe("ready");
    const anvils = anvilsOn(chainPort);
    expect(anvils).toHaveLength(1);
    expect(anvils).not.toContain(orphan);
    expect(second.output()).not.toContain("already answers");

    await second.stop();
    expect(second.child.exitCode).toBe(0);
    expect(anvilsOn(chainPort)).toEqual([]);
  }, 420_000);

  it("local mode: the chain dies with a service killed with -9, with no restart to clean up", async () => {
    const chainPort = await freePort();
    chainPorts.push(chainPort);
    const port = await freePort();
    const instance = serve({ PORT: String(port), DATA_DIR: dataDir(), LOCAL_CHAIN_PORT: String(chainPort) });
    await waitFor(`http://127.0.0.1:${port}/readyz`, instance.child, instance.output, 180_000);
    expect(anvilsOn(chainPort)).toHaveLength(1);
    await kill9(instance);
    await until(
      "the killed service's chain to stop",
      async () => (anvilsOn(chainPort).length === 0 ? true : undefined),
      30_000,
    );
    expect(watchdogsOf(anvilsOn(chainPort))).toEqual([]);
  }, 420_000);
});
