/**
 * Issue 16's "/healthz answers within 100 ms at p99 under attack", measured (not asserted in a test): the
 * real `utility402 serve` on the local chain, /healthz probed on a new connection every 50 ms from
 * 127.0.0.1 on the probes' own listener (HEALTH_PORT) and on the public port, first idle, then while the
 * worst inputs arrive (the 85,000-key YAML contract to openapi-audit from two senders in a loop, six
 * concurrent catastrophic-pattern audits, 20,000 idle sockets from 127.0.0.3 at the public port) and a
 * paying client's calls are paid. Reports p50/p99 of each port and phase, and the ratios.
 *   npm run bench -- load-watchdog            (IDLE_SECONDS=10, PAID_CALLS=5 by default)
 */

import {
  percentile,
  runAttack,
  startScenarioService,
  watchdog,
} from "../test/hardening/load-watchdog-scenario.ts";
import { report } from "./lib.ts";

const IDLE_SECONDS = Number(process.env.IDLE_SECONDS ?? 10);
const PAID_CALLS = Number(process.env.PAID_CALLS ?? 5);

const scenario = await startScenarioService();
try {
  const idle = watchdog(scenario.healthPort);
  const idlePublic = watchdog(scenario.port);
  await new Promise((resolve) => setTimeout(resolve, IDLE_SECONDS * 1000));
  await Promise.all([idle.stop(), idlePublic.stop()]);

  const attacked = watchdog(scenario.healthPort);
  const attackedPublic = watchdog(scenario.port);
  const started = Date.now();
  // ATTACK=sockets,yaml,redos (the default: all three) to measure one part alone.
  const parts = (process.env.ATTACK ?? "sockets,yaml,redos").split(",");
  const outcome = await runAttack(scenario, PAID_CALLS, {
    sockets: parts.includes("sockets"),
    yaml: parts.includes("yaml"),
    redos: parts.includes("redos"),
  }).finally(() => Promise.all([attacked.stop(), attackedPublic.stop()]));
  const attackSeconds = (Date.now() - started) / 1000;

  const row = (phase: string, dog: ReturnType<typeof watchdog>) => ({
    phase,
    probes: dog.latencies.length + dog.failures.length,
    failed: dog.failures.length,
    p50Ms: Math.round(percentile(dog.latencies, 50) * 10) / 10,
    p99Ms: Math.round(percentile(dog.latencies, 99) * 10) / 10,
    maxMs: Math.round(Math.max(...dog.latencies) * 10) / 10,
  });
  const quiet = row("health port, idle", idle);
  const loud = row("health port, under attack", attacked);
  const loudPublic = row("public port, under attack", attackedPublic);
  const rows = [quiet, loud, row("public port, idle", idlePublic), loudPublic];
  report("load-watchdog", rows, {
    p50Ratio: Math.round((loud.p50Ms / quiet.p50Ms) * 100) / 100,
    p99Ratio: Math.round((loud.p99Ms / quiet.p99Ms) * 100) / 100,
    p99UnderAttackWithin100Ms: loud.p99Ms <= 100,
    publicPortP99UnderAttackWithin100Ms: loudPublic.p99Ms <= 100,
    attack: parts,
    attackSeconds,
    bigYamlRequests: outcome.bigYamlAnswers.length,
    bigYamlStatuses: [...new Set(outcome.bigYamlAnswers)],
    redosStatuses: outcome.redosAnswers,
    paidCalls: outcome.paid.map((call) => ({
      status: call.status,
      settled: call.settled,
      chargedOnce: call.charged === call.price,
    })),
  });
} finally {
  await scenario.stop();
}
