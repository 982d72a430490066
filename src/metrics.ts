import { Counter, collectDefaultMetrics, Histogram, Registry } from "prom-client";

/** Prometheus metrics of one instance, served at /metrics. */
export class Metrics {
  readonly registry = new Registry();
  private readonly requests = new Counter({
    name: "utility402_http_requests_total",
    help: "HTTP requests by method, route and status.",
    labelNames: ["method", "route", "status"] as const,
    registers: [this.registry],
  });
  private readonly latency = new Histogram({
    name: "utility402_http_request_duration_seconds",
    help: "HTTP request latency by method and route.",
    labelNames: ["method", "route"] as const,
    buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
    registers: [this.registry],
  });
  private readonly payments = new Counter({
    name: "utility402_payments_total",
    help: "Payments entering each ledger state, by operation (verified, settled, released, failed).",
    labelNames: ["operation", "state"] as const,
    registers: [this.registry],
  });
  private readonly rejected = new Counter({
    name: "utility402_payments_rejected_total",
    help: "Presented payments refused at verification, by operation and reason.",
    labelNames: ["operation", "reason"] as const,
    registers: [this.registry],
  });

  constructor() {
    collectDefaultMetrics({ register: this.registry, prefix: "utility402_" });
  }

  request(method: string, route: string, status: number, seconds: number): void {
    this.requests.inc({ method, route, status: String(status) });
    this.latency.observe({ method, route }, seconds);
  }

  paymentState(operation: string, state: string): void {
    this.payments.inc({ operation, state });
  }

  paymentRejected(operation: string, reason: string): void {
    this.rejected.inc({ operation, reason });
  }
}
