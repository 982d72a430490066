/**
 * Load runs from a separate process (./load-process.ts, autocannon): one or several target URLs,
 * a number of connections, and for paid runs a pool of payment headers signed beforehand, one per
 * request, each used exactly once.
 */
import { execFile } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { promisify } from "node:util";

export interface LoadJob {
  /** Full URLs of the route; the connections are spread evenly over them. */
  targets: string[];
  connections: number;
  method: "GET" | "POST";
  body?: string;
  /** One PAYMENT-SIGNATURE per request; when given, the run sends exactly `amount` requests. */
  paymentHeaders?: string[];
  /** Requests to send in all (paid runs); otherwise the run lasts `durationSeconds`. */
  amount?: number;
  durationSeconds?: number;
  timeoutSeconds?: number;
}

export interface LoadResult {
  durationMs: number;
  responses: number;
  /** Responses by HTTP status. */
  statuses: Record<string, number>;
  errors: number;
  timeouts: number;
  paymentsUsed: number;
  perSecond: number;
  latencyMs: { p50: number; p90: number; p99: number; max: number; mean: number };
}

const execFileAsync = promisify(execFile);
const here = path.dirname(new URL(import.meta.url).pathname);

/** Runs one load job in a child process and returns what it measured. */
export async function runLoad(job: LoadJob): Promise<LoadResult> {
  if (job.paymentHeaders && job.amount === undefined) job = { ...job, amount: job.paymentHeaders.length };
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "utility402-load-"));
  try {
    const jobPath = path.join(dir, "job.json");
    const resultPath = path.join(dir, "result.json");
    fs.writeFileSync(jobPath, JSON.stringify(job));
    await execFileAsync(
      process.execPath,
      ["--import", "tsx", path.join(here, "load-process.ts"), jobPath, resultPath],
      { maxBuffer: 16 * 1024 * 1024 },
    );
    return JSON.parse(fs.readFileSync(resultPath, "utf8")) as LoadResult;
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
}
