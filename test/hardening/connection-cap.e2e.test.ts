import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type Spawned, spawnUtility402, until, waitFor } from "../helpers/processes.ts";
import { freePort } from "../helpers/service.ts";
import {
  ATTACK_SOCKETS,
  type Attack,
  openDescriptors,
  probeHealth,
  startIdleSocketAttack,
} from "./connection-cap-helpers.ts";

/**
 * Finding 7 of issue 16: 20,000 idle sockets from one address exhausted the process's file
 * descriptors (ulimit -n 20000 here) and /healthz was refused. The attacker's sockets come from
 * 127.0.0.2 (Linux routes all of 127/8 on lo), the health checker's from 127.0.0.1; the attack runs
 * in two processes of its own so that the test's own descriptors are not the ones that run out.
 */

describe("20,000 idle sockets from one client address", () => {
  let service: Spawned;
  let port: number;
  let dataDir: string;
  let attack: Attack | undefined;

  beforeAll(async () => {
    dataDir = fs.mkdtempSync(path.join(os.tmpdir(), "utility402-connection-cap-"));
    port = await freePort();
    // The defaults are under test: no connection or timeout settings.
    service = spawnUtility402(["serve"], {
      PORT: String(port),
      LOCAL_CHAIN_PORT: String(await freePort()),
      LOCAL_CHAIN_STATE: "none",
      DATA_DIR: dataDir,
      LOG_LEVEL: "warn",
    });
    await waitFor(`http://127.0.0.1:${port}/healthz`, service.child, service.output);
  }, 120_000);

  afterAll(async () => {
    await attack?.stop();
    await service?.stop();
    fs.rmSync(dataDir, { recursive: true, force: true });
  }, 60_000);

  it("/healthz from another address keeps answering, the process keeps its descriptors, idle sockets are closed", async () => {
    const pid = service.child.pid as number;
    const before = openDescriptors(pid);
    let peakDescriptors = before;
    const probes: (number | string)[] = [];
    let attacking = true;
    const watch = (async () => {
      while (attacking) {
        if (service.child.exitCode === null)
          peakDescriptors = Math.max(peakDescriptors, openDescriptors(pid));
        probes.push(await probeHealth(port));
        await new Promise((resolve) => setTimeout(resolve, 100));
      }
    })();

    attack = startIdleSocketAttack(port, "127.0.0.2");
    const opened = await attack.opened;
    // Every idle socket the service kept is closed by it (answered 408) once its header timeout runs out:
    // its descriptors fall back to where they were. (A few of the attacker's sockets may stay open on the
    // attacker's side only: handshakes completed while the listen queue was full, never accepted.)
    await until(
      "the service's idle sockets to be closed",
      async () => {
        if (service.child.exitCode !== null || service.child.signalCode !== null) {
          throw new Error(`the service died under the attack:\n${service.output().slice(-2000)}`);
        }
        return openDescriptors(pid) <= before + 16 ? true : undefined;
      },
      60_000,
    );
    attacking = false;
    await watch;
    await attack.stop();
    const closed = await attack.closed;

    const attempted = opened.reduce((sum, report) => sum + report.opened + report.failed, 0);
    expect(attempted).toBe(ATTACK_SOCKETS);
    // Each connection the service closed got an answer: refused at once (503 problem+json) or timed out idle (408).
    const answers: Record<string, number> = {};
    for (const report of closed) {
      for (const [key, count] of Object.entries(report.answers)) answers[key] = (answers[key] ?? 0) + count;
    }
    expect(Object.keys(answers).sort()).toEqual(["408", "503 too-many-connections"]);
    expect(answers["503 too-many-connections"]).toBeGreaterThan(ATTACK_SOCKETS / 2);

    expect(probes.length).toBeGreaterThan(5);
    expect(probes.filter((status) => status !== 200)).toEqual([]);
    // Far from the open-file limit: the per-client cap (256) bounds what one address holds.
    expect(peakDescriptors).toBeLessThan(before + 2000);
    expect(service.child.exitCode).toBeNull();
    expect(service.output()).not.toMatch(/EMFILE|too many open files/i);

    // And after the attack, a new connection from the attacker's address is served again.
    const status = await until("a healthz answer", async () => {
      const answer = await probeHealth(port, { localAddress: "127.0.0.2" });
      return answer === 200 ? answer : undefined;
    });
    expect(status).toBe(200);
  }, 180_000);
});
