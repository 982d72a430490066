/**
 * The load generator's own process (autocannon), so the client's CPU is never counted as the
 * server's and never shares its event loop. Started by runLoad() in ./load.ts with the path of a
 * JSON job file; writes a LoadResult as JSON to the result path given next to it.
 *
 * Several targets (e.g. two API instances on one database) each get their own autocannon instance
 * with a share of the connections; all of them draw payment headers from one shared pool, so every
 * payment is sent exactly once whatever target it lands on.
 */
import fs from "node:fs";
import autocannon from "autocannon";
import type { LoadJob, LoadResult } from "./load.ts";

const [jobPath, resultPath] = process.argv.slice(2) as [string, string];
const job = JSON.parse(fs.readFileSync(jobPath, "utf8")) as LoadJob;

const payments = job.paymentHeaders ?? [];
let nextPayment = 0;
const latencies: number[] = [];
const statuses: Record<string, number> = {};
let errors = 0;
let timeouts = 0;

/** Splits `total` into `parts` integers that differ by at most one. */
const share = (total: number, parts: number, index: number) =>
  Math.floor(total / parts) + (index < total % parts ? 1 : 0);

const started = process.hrtime.bigint();
/**
 * When the last response came in. autocannon says "done" only at its next one-second sampling tick, so
 * a run of a fixed amount would otherwise be timed up to a second long: the run lasts until its last
 * response.
 */
let lastResponseAt = started;
const runs = job.targets.map((target, index) => {
  const connections = share(job.connections, job.targets.length, index);
  const amount = job.amount === undefined ? undefined : share(job.amount, job.targets.length, index);
  const instance = autocannon({
    url: target,
    connections,
    pipelining: 1,
    timeout: job.timeoutSeconds ?? 30,
    ...(amount === undefined ? { duration: job.durationSeconds ?? 5 } : { amount }),
    requests: [
      {
        method: job.method,
        path: new URL(target).pathname,
        headers: { "content-type": "application/json" },
        body: job.body,
        setupRequest: (request: { headers: Record<string, string> }) => {
          if (payments.length === 0) return request;
          const header = payments[nextPayment++];
          if (header === undefined) throw new Error("the payment pool ran out: more requests than payments");
          return { ...request, headers: { ...request.headers, "PAYMENT-SIGNATURE": header } };
        },
      },
    ],
  });
  instance.on("response", (_client: unknown, statusCode: number, _bytes: number, responseTime: number) => {
    statuses[statusCode] = (statuses[statusCode] ?? 0) + 1;
    latencies.push(responseTime);
    lastResponseAt = process.hrtime.bigint();
  });
  instance.on("reqError", () => {
    errors++;
  });
  instance.on("timeout", () => {
    timeouts++;
  });
  return new Promise<void>((resolve, reject) =>
    instance.on("done", () => resolve()).on("error", (error: Error) => reject(error)),
  );
});
await Promise.all(runs);
const durationMs = Number((latencies.length > 0 ? lastResponseAt : process.hrtime.bigint()) - started) / 1e6;

latencies.sort((a, b) => a - b);
const percentile = (p: number) =>
  latencies.length === 0
    ? 0
    : (latencies[Math.min(latencies.length - 1, Math.ceil((p / 100) * latencies.length) - 1)] as number);
const result: LoadResult = {
  durationMs,
  responses: latencies.length,
  statuses,
  errors,
  timeouts,
  paymentsUsed: nextPayment,
  perSecond: latencies.length / (durationMs / 1000),
  latencyMs: {
    p50: percentile(50),
    p90: percentile(90),
    p99: percentile(99),
    max: latencies.at(-1) ?? 0,
    mean: latencies.reduce((sum, value) => sum + value, 0) / Math.max(1, latencies.length),
  },
};
fs.writeFileSync(resultPath, JSON.stringify(result));
