import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { devPrivateKey } from "../../src/chain/dev-accounts.ts";
import { createPayer } from "../../src/client/paying-fetch.ts";
import { csvCleanup } from "../../src/operations/csv-cleanup/index.ts";
import { researchBrief } from "../../src/operations/research-brief/index.ts";
import { until } from "../helpers/processes.ts";
import { jsonPost, startTestService, type TestService } from "../helpers/service.ts";
import {
  QUESTION,
  researchEnv,
  type StandIns,
  startStandIns,
} from "../operations/research-brief-standins.ts";
import { declaredFamilies, parseExposition, sampleValue } from "./exposition.ts";

/** /metrics after real paid calls on the local chain: what an operator's Prometheus scrapes. */
describe("/metrics for operators", () => {
  let standIns: StandIns;
  let service: TestService;
  const scrape = async () => (await fetch(`${service.url}/metrics`)).text();

  beforeAll(async () => {
    standIns = await startStandIns();
    service = await startTestService(researchEnv(standIns), { operations: [csvCleanup, researchBrief] });
  });
  afterAll(async () => {
    await service?.stop();
    await standIns?.stop();
  });

  it("names the process and Node.js series as stock dashboards do, without our prefix", async () => {
    const families = declaredFamilies(await scrape());
    for (const name of [
      "process_cpu_seconds_total",
      "process_resident_memory_bytes",
      "process_start_time_seconds",
      "nodejs_eventloop_lag_seconds",
      "nodejs_heap_size_used_bytes",
      "nodejs_gc_duration_seconds",
    ]) {
      expect(families.has(name), name).toBe(true);
    }
    expect([...families.keys()].filter((name) => /^utility402_(process|nodejs)_/.test(name))).toEqual([]);
  });

  it("counts a paid call's revenue by operation and door, its outcome and its settlement latency", async () => {
    const payer = createPayer(devPrivateKey(6));
    const paid = await payer.fetch(`${service.url}/v1/csv-cleanup`, jsonPost({ rows: [{ a: "x" }] }));
    expect(paid.status).toBe(200);
    const samples = parseExposition(await scrape());
    const csv = { operation: "csv-cleanup" };
    expect(sampleValue(samples, "utility402_revenue_atomic_total", { ...csv, door: "http" })).toBe(2_000_000);
    expect(sampleValue(samples, "utility402_payments_total", { ...csv, state: "settled" })).toBe(1);
    expect(sampleValue(samples, "utility402_settlement_duration_seconds_count", csv)).toBe(1);
    const seconds = sampleValue(samples, "utility402_settlement_duration_seconds_sum", csv) as number;
    expect(seconds).toBeGreaterThan(0);
    expect(
      sampleValue(samples, "utility402_settlement_duration_seconds_bucket", { ...csv, le: "+Inf" }),
    ).toBe(1);
  });

  it("counts a job's held payment when its result settles it, and the job queue's depth by state is read from the store", async () => {
    const states = ["awaiting_payment", "queued", "running", "ready"];
    const before = parseExposition(await scrape());
    for (const state of states) expect(sampleValue(before, "utility402_jobs", { state }), state).toBe(0);

    const payer = createPayer(devPrivateKey(7));
    const request = { question: QUESTION, requiredSources: 3, maxWords: 200 };
    const unpaid = await fetch(`${service.url}/v1/research-brief`, jsonPost(request));
    expect(unpaid.status).toBe(402);
    const accepted = await fetch(
      `${service.url}/v1/research-brief`,
      jsonPost(request, await payer.signPayment(unpaid)),
    );
    expect(accepted.status).toBe(202);
    const { statusUrl } = await accepted.json();
    // Held, not settled: no revenue yet, the job counted in the queue until it is done.
    const held = parseExposition(await scrape());
    const brief = { operation: "research-brief" };
    expect(sampleValue(held, "utility402_revenue_atomic_total", { ...brief, door: "http" })).toBeUndefined();
    expect(sampleValue(held, "utility402_payments_total", { ...brief, state: "held" })).toBe(1);
    const finished = await until("the brief", async () => {
      const body = await (await fetch(statusUrl)).json();
      return body.status === "succeeded" || body.status === "failed" ? body : undefined;
    });
    expect(finished.status).toBe("succeeded");
    const after = parseExposition(await scrape());
    expect(sampleValue(after, "utility402_revenue_atomic_total", { ...brief, door: "http" })).toBe(5_000_000);
    expect(sampleValue(after, "utility402_payments_total", { ...brief, state: "settled" })).toBe(1);
    expect(sampleValue(after, "utility402_settlement_duration_seconds_count", brief)).toBe(1);
    for (const state of states) expect(sampleValue(after, "utility402_jobs", { state }), state).toBe(0);
  });
});
