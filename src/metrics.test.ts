import { Counter, Histogram, Registry } from "prom-client";
import { describe, expect, it } from "vitest";
import { LATENCY_BUCKETS, LATENCY_METRIC, REQUESTS_METRIC, RequestSeries } from "./metrics.ts";

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
