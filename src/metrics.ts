import { Counter, collectDefaultMetrics, Gauge, Histogram, type Metric, Registry } from "prom-client";
import type { JobQueue } from "./jobs/queue.ts";

/** The request series as prom-client's Registry reads them (name, help, type). */
export const REQUESTS_METRIC = {
  name: "utility402_http_requests_total",
  help: "HTTP requests by method, route and status.",
  type: "counter",
  aggregator: "sum",
} as const;
export const LATENCY_METRIC = {
  name: "utility402_http_request_duration_seconds",
  help: "HTTP request latency by method and route.",
  type: "histogram",
  aggregator: "sum",
} as const;
export const LATENCY_BUCKETS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10] as const;

/** One line of a metric's exposition text, as a Registry reads it. */
interface ExportedValue {
  metricName?: string;
  labels: Record<string, string | number>;
  sharedLabels?: Record<string, string>;
  value: number;
}

interface RouteSeries {
  labels: { method: string; route: string };
  /** Observations per bucket, not cumulative; the last one is above every bound (+Inf). */
  perBucket: number[];
  sum: number;
  count: number;
  /** Requests by status code. */
  statuses: Map<number, { labels: Record<string, string>; value: number }>;
}

/**
 * The request counter and latency histogram, kept in plain maps on the request path and turned into
 * Prometheus series (the same text prom-client's Counter and Histogram write) when scraped.
 * prom-client's labelled metrics check and hash their labels on every call, which cost an unpaid 402
 * about as much CPU as the rest of its bookkeeping together. Looked up by route, method and status in
 * turn: a key string built per request cost a string concatenation and comparison each time.
 */
export class RequestSeries {
  private readonly byRoute = new Map<string, Map<string, RouteSeries>>();

  record(method: string, route: string, status: number, seconds: number): void {
    let byMethod = this.byRoute.get(route);
    if (!byMethod) {
      byMethod = new Map();
      this.byRoute.set(route, byMethod);
    }
    let series = byMethod.get(method);
    if (!series) {
      series = {
        labels: { method, route },
        perBucket: new Array(LATENCY_BUCKETS.length + 1).fill(0),
        sum: 0,
        count: 0,
        statuses: new Map(),
      };
      byMethod.set(method, series);
    }
    const counted = series.statuses.get(status);
    if (counted) counted.value++;
    else series.statuses.set(status, { labels: { method, route, status: String(status) }, value: 1 });
    let bucket = 0;
    while (bucket < LATENCY_BUCKETS.length && seconds > (LATENCY_BUCKETS[bucket] as number)) bucket++;
    (series.perBucket[bucket] as number)++;
    series.sum += seconds;
    series.count++;
  }

  private *series(): Iterable<RouteSeries> {
    for (const byMethod of this.byRoute.values()) yield* byMethod.values();
  }

  register(registry: Registry): void {
    const metric = (descriptor: { name: string }, values: () => ExportedValue[]) =>
      ({ ...descriptor, get: async () => ({ ...descriptor, values: values() }) }) as unknown as Metric;
    registry.registerMetric(metric(REQUESTS_METRIC, () => this.countValues()));
    registry.registerMetric(metric(LATENCY_METRIC, () => this.latencyValues()));
  }

  private countValues(): ExportedValue[] {
    return [...this.series()].flatMap((series) =>
      [...series.statuses.values()].map(({ labels, value }) => ({ labels, value })),
    );
  }

  private latencyValues(): ExportedValue[] {
    const { name } = LATENCY_METRIC;
    const values: ExportedValue[] = [];
    for (const { labels, perBucket, sum, count } of this.series()) {
      let cumulative = 0;
      LATENCY_BUCKETS.forEach((bound, index) => {
        cumulative += perBucket[index] as number;
        values.push({
          metricName: `${name}_bucket`,
          labels: { le: bound },
          sharedLabels: labels,
          value: cumulative,
        });
      });
      values.push(
        { metricName: `${name}_bucket`, labels: { le: "+Inf" }, sharedLabels: labels, value: count },
        { metricName: `${name}_sum`, labels: {}, sharedLabels: labels, value: sum },
        { metricName: `${name}_count`, labels: {}, sharedLabels: labels, value: count },
      );
    }
    return values;
  }
}

/** Settlement latency bounds (s): a call settles in seconds; a job's payment only once its result is ready. */
export const SETTLEMENT_BUCKETS = [0.25, 0.5, 1, 2, 5, 10, 30, 60, 300, 900, 1800, 3600] as const;

/** The door of a payment the ledger does not say the door of (one a crash recovery settled without its client). */
export const UNKNOWN_DOOR = "unknown";

/** A payment that just settled, as the revenue and settlement latency series count it. */
export interface SettledPayment {
  operation: string;
  /** The way its call came in ("http"; later MCP, x402 v1), told by the caller; UNKNOWN_DOOR when absent. */
  door: string | undefined;
  /** Atomic units of the asset (USDC: 1,000,000 = $1). */
  amount: string;
  /** When it was accepted (verified; a job's payment is held at once): ISO 8601, as the ledger keeps it. */
  acceptedAt: string;
}

/**
 * Prometheus metrics of one instance, served at /metrics. The process and Node.js series are prom-client's
 * defaults under their standard names (process_*, nodejs_*), so stock dashboards read them; ours are utility402_*.
 */
export class Metrics {
  readonly registry = new Registry();
  private readonly requests = new RequestSeries();
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

  private readonly recovered = new Counter({
    name: "utility402_payments_recovered_total",
    help: "Payments left unfinished by a stopped owner (crash, lost store) that the recovery sweeper resolved, by operation and the state it found.",
    labelNames: ["operation", "state"] as const,
    registers: [this.registry],
  });

  private readonly revenue = new Counter({
    name: "utility402_revenue_atomic_total",
    help: "Settled payments' amounts in the asset's atomic units (USDC: 1000000 = 1 USD), by operation and door.",
    labelNames: ["operation", "door"] as const,
    registers: [this.registry],
  });
  private readonly settlement = new Histogram({
    name: "utility402_settlement_duration_seconds",
    help: "From a payment's acceptance (verified; a job's payment held) to its settlement, by operation; a job's includes its run.",
    labelNames: ["operation"] as const,
    buckets: [...SETTLEMENT_BUCKETS],
    registers: [this.registry],
  });

  /** `jobs`: the store's job queue, whose depth is read at each scrape (absent: no job series). */
  constructor(options: { jobs?: Pick<JobQueue, "depth"> } = {}) {
    collectDefaultMetrics({ register: this.registry });
    this.requests.register(this.registry);
    const { jobs } = options;
    if (jobs) {
      new Gauge({
        name: "utility402_jobs",
        help: "Jobs not finished yet, by state (awaiting_payment, queued, running, ready), counted in the store at each scrape; absent while the store cannot be read.",
        labelNames: ["state"] as const,
        registers: [this.registry],
        async collect() {
          this.reset();
          const depth = await jobs.depth().catch(() => undefined);
          for (const [state, count] of Object.entries(depth ?? {})) this.set({ state }, count);
        },
      });
    }
  }

  request(method: string, route: string, status: number, seconds: number): void {
    this.requests.record(method, route, status, seconds);
  }

  paymentState(operation: string, state: string): void {
    this.payments.inc({ operation, state });
  }

  /** Called once per payment, by whoever made it settled in the ledger (latency in wall-clock time, as the ledger's). */
  paymentSettled(payment: SettledPayment): void {
    this.revenue.inc(
      { operation: payment.operation, door: payment.door ?? UNKNOWN_DOOR },
      Number(payment.amount),
    );
    this.settlement.observe(
      { operation: payment.operation },
      Math.max(0, (Date.now() - Date.parse(payment.acceptedAt)) / 1000),
    );
  }

  paymentRejected(operation: string, reason: string): void {
    this.rejected.inc({ operation, reason });
  }

  paymentRecovered(operation: string, state: string): void {
    this.recovered.inc({ operation, state });
  }
}
