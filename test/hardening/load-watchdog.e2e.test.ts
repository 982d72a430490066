import fs from "node:fs";
import os from "node:os";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type RunningScenario, runAttack, startScenarioService, watchdog } from "./load-watchdog-scenario.ts";

/**
 * Issue 16's load test with a watchdog. While the worst inputs are sent (an 85,000-key YAML contract to
 * openapi-audit in a loop, six concurrent catastrophic-pattern audits, 20,000 idle sockets from another
 * address), every /healthz probe is answered, on the probes' own listener (HEALTH_PORT) and on the public
 * port, a paying client's calls all succeed, each charged once, balances read from the chain, and the
 * audit workers run below the event loop's CPU priority. Before the fixes the process ran out of file
 * descriptors and /healthz was refused outright. How fast /healthz answers is measured by
 * bench/load-watchdog.bench.ts, not asserted here. On the public port, while the attacker's burst of
 * 20,000 connects keeps its accept queue full, a probe's SYN can be dropped and retried by the kernel
 * (1 s, then 2 s, then 4 s); the health listener's queue is its own.
 */

/** An answer within the kernel's first three SYN retries counts; only no answer at all fails. */
const PROBE_DEADLINE_MS = 15_000;

const PAID_CALLS = 3;

describe("load with a watchdog", () => {
  let scenario: RunningScenario;

  beforeAll(async () => {
    scenario = await startScenarioService();
  }, 120_000);
  afterAll(async () => {
    await scenario?.stop();
  }, 60_000);

  it("health probes all answered and every paid call charged once while the worst inputs arrive", async () => {
    const dog = watchdog(scenario.healthPort, 50, PROBE_DEADLINE_MS);
    const publicDog = watchdog(scenario.port, 50, PROBE_DEADLINE_MS);
    const pid = scenario.service.child.pid as number;
    const niceSamples: ThreadNice[][] = [];
    const sampler = setInterval(() => niceSamples.push(threadNices(pid)), 250);
    let outcome: Awaited<ReturnType<typeof runAttack>>;
    try {
      outcome = await runAttack(scenario, PAID_CALLS);
    } finally {
      clearInterval(sampler);
      await Promise.all([dog.stop(), publicDog.stop()]);
    }

    expect(dog.failures).toEqual([]);
    expect(dog.latencies.length).toBeGreaterThan(10);
    expect(publicDog.failures).toEqual([]);
    expect(publicDog.latencies.length).toBeGreaterThan(0);
    // The event loop's thread keeps the nice value the service started with (0, or more when the suite
    // itself runs under `nice`); the audits ran on threads nicer than it.
    const seen = niceSamples.flat();
    const loopNices = new Set(seen.filter((thread) => thread.tid === pid).map((thread) => thread.nice));
    // The service inherits this test's nice value and its loop keeps it.
    expect([...loopNices]).toEqual([os.getPriority()]);
    const loopNice = os.getPriority();
    expect(
      seen.some((thread) => thread.tid !== pid && thread.nice > loopNice),
      `thread nice values seen: ${[...new Set(seen.map((thread) => thread.nice))]}`,
    ).toBe(true);

    expect(outcome.paid).toHaveLength(PAID_CALLS);
    for (const call of outcome.paid) {
      expect(call.status).toBe(200);
      expect(call.settled).toBe(true);
      expect(call.charged).toBe(call.price);
    }
    // The big contract is refused or answered without a 5xx; the catastrophic audits are answered.
    expect(outcome.bigYamlAnswers.length).toBeGreaterThan(0);
    expect(outcome.bigYamlAnswers.filter((status) => status === 0 || status >= 500)).toEqual([]);
    expect(outcome.redosAnswers.filter((status) => status === 0 || status >= 500)).toEqual([]);
    expect(scenario.service.child.exitCode).toBeNull();
  }, 300_000);
});

interface ThreadNice {
  tid: number;
  nice: number;
}

/** Each thread of a process and its nice value (/proc/<pid>/task/<tid>/stat, field 19). */
function threadNices(pid: number): ThreadNice[] {
  const threads: ThreadNice[] = [];
  let tids: string[] = [];
  try {
    tids = fs.readdirSync(`/proc/${pid}/task`);
  } catch {
    return threads;
  }
  for (const tid of tids) {
    try {
      const stat = fs.readFileSync(`/proc/${pid}/task/${tid}/stat`, "utf8");
      // Fields after the command name (which may hold spaces) start at field 3; nice is field 19.
      const nice = Number(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[16]);
      threads.push({ tid: Number(tid), nice });
    } catch {}
  }
  return threads;
}
