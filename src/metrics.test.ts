import { Counter, Histogram, Registry } from "prom-client";
import { describe, expect, it } from "vitest";
import {
  LATENCY_BUCKETS,
  LATENCY_METRIC,
  Metrics,
  REQUESTS_METRIC,
  RequestSeries,
  UNKNOWN_DOOR,
} from "./metrics.ts";

const observations: [method: string, route: string, status: number, seconds: number][] = [
  ["POST", "/v1/csv-cleanup", 402, 0.0004],
  ["POST", "/v1/csv-cleanup", 402, 0.005], // on a bound: counted in that bucket (le is ≤)
  ["POST", "/v1/csv-cleanup", 200, 0.07],
  ["POST", "/v1/csv-cleanup", 400, 0.011],
  ["GET", "/v1/jobs/:id", 200, 0.3],
  ["GET", "/v1/jobs/:id", 404, 12], // above every bound: only +Inf
  ["GET", "/healthz", 200, 0.0001],
  ["GET", "/v1/jobs/:id", 200, 2.5],
];

describe("RequestSeries", () => {
  it("writes the same exposition text as prom-client's Counter and Histogram for the same requests", async () => {
    const ours = new Registry();
    const series = new RequestSeries();
    series.register(ours);

    const reference = new Registry();
    const counter = new Counter({
      name: REQUESTS_METRIC.name,
      help: REQUESTS_METRIC.help,
      labelNames: ["method", "route", "status"],
      registers: [reference],
    });
    const histogram = new Histogram({
      name: LATENCY_METRIC.name,
      help: LATENCY_METRIC.help,
      labelNames: ["method", "route"],
      buckets: [...LATENCY_BUCKETS],
      registers: [reference],
    });

    for (const [method, route, status, seconds] of observations) {
      series.record(method, route, status, seconds);
      counter.inc({ method, route, status: String(status) });
      histogram.observe({ method, route }, seconds);
    }
    const text = await ours.metrics();
    expect(text).toBe(await reference.metrics());
    expect(text).toContain(`${REQUESTS_METRIC.name}{method="POST",route="/v1/csv-cleanup",status="402"} 2`);
    expect(text).toContain(
      `${LATENCY_METRIC.name}_bucket{le="0.005",method="POST",route="/v1/csv-cleanup"} 2`,
    );
    expect(text).toContain(`${LATENCY_METRIC.name}_bucket{le="10",method="GET",route="/v1/jobs/:id"} 2`);
    expect(text).toContain(`${LATENCY_METRIC.name}_bucket{le="+Inf",method="GET",route="/v1/jobs/:id"} 3`);
  });
});

describe("Metrics", () => {
  it("counts a settled payment's amount by operation and door, and the time since it was accepted", async () => {
    const metrics = new Metrics();
    const acceptedAt = new Date(Date.now() - 90_000).toISOString();
    metrics.paymentSettled({ operation: "research-brief", door: "http", amount: "5000000", acceptedAt });
    metrics.paymentSettled({ operation: "research-brief", door: "http", amount: "5000000", acceptedAt });
    metrics.paymentSettled({ operation: "json-diff", door: undefined, amount: "10000", acceptedAt });
    const text = await metrics.registry.metrics();
    expect(text).toContain(
      'utility402_revenue_atomic_total{operation="research-brief",door="http"} 10000000',
    );
    expect(text).toContain(
      `utility402_revenue_atomic_total{operation="json-diff",door="${UNKNOWN_DOOR}"} 10000`,
    );
    // 90 s after acceptance: above the 60 s bound, within the 300 s one.
    expect(text).toContain(
      'utility402_settlement_duration_seconds_bucket{le="60",operation="research-brief"} 0',
    );
    expect(text).toContain(
      'utility402_settlement_duration_seconds_bucket{le="300",operation="research-brief"} 2',
    );
  });

  it("reads the job queue's depth at each scrape, and leaves the series out while the store cannot be read", async () => {
    let depth: Promise<{ awaiting_payment: number; queued: number; running: number; ready: number }> =
      Promise.resolve({ awaiting_payment: 1, queued: 4, running: 2, ready: 0 });
    const metrics = new Metrics({ jobs: { depth: () => depth } });
    const first = await metrics.registry.metrics();
    expect(first).toContain('utility402_jobs{state="queued"} 4');
    expect(first).toContain('utility402_jobs{state="ready"} 0');
    depth = Promise.resolve({ awaiting_payment: 0, queued: 1, running: 0, ready: 0 });
    expect(await metrics.registry.metrics()).toContain('utility402_jobs{state="queued"} 1');
    depth = Promise.reject(new Error("store unavailable"));
    const down = await metrics.registry.metrics();
    expect(down).not.toMatch(/^utility402_jobs\{/m);
    expect(down).toContain("process_cpu_seconds_total");
  });

  it("keeps the standard names of the process and Node.js series (stock dashboards read them)", async () => {
    const text = await new Metrics().registry.metrics();
    expect(text).toMatch(/^# TYPE process_cpu_seconds_total counter$/m);
    expect(text).toMatch(/^# TYPE nodejs_eventloop_lag_seconds gauge$/m);
    expect(text).not.toMatch(/^# TYPE utility402_(process|nodejs)_/m);
  });
});
