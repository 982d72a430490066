/**
 * Load in which each connection sends its own requests in order: what vouchers need, since a channel's
 * vouchers are cumulative and must arrive one after the other (autocannon hands any request to any
 * connection). Each connection is one keep-alive socket sending its sequence one request at a time; a
 * sequence entry is the PAYMENT-SIGNATURE of that request, or null for an unpaid one. Like runLoad it
 * runs in a process of its own, so the client's CPU is never the server's.
 *
 * runSequences() spawns this file with a job file; run directly, it is that process.
 */
import { execFile } from "node:child_process";
import fs from "node:fs";
import http from "node:http";
import os from "node:os";
import path from "node:path";
import { promisify } from "node:util";
import type { LoadResult } from "./load.ts";

export interface SequenceJob {
  target: string;
  method: "GET" | "POST";
  body?: string;
  /** One array per connection: each request's PAYMENT-SIGNATURE (null: none), sent in this order. */
  sequences: (string | null)[][];
}

const here = path.dirname(new URL(import.meta.url).pathname);

export async function runSequences(job: SequenceJob): Promise<LoadResult> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "utility402-seq-"));
  try {
    const jobPath = path.join(dir, "job.json");
    const resultPath = path.join(dir, "result.json");
    fs.writeFileSync(jobPath, JSON.stringify(job));
    await promisify(execFile)(
      process.execPath,
      ["--import", "tsx", path.join(here, "sequence-load.ts"), jobPath, resultPath],
      { maxBuffer: 16 * 1024 * 1024 },
    );
    return JSON.parse(fs.readFileSync(resultPath, "utf8")) as LoadResult;
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

async function main(jobPath: string, resultPath: string): Promise<void> {
  const job = JSON.parse(fs.readFileSync(jobPath, "utf8")) as SequenceJob;
  const url = new URL(job.target);
  const latencies: number[] = [];
  const statuses: Record<string, number> = {};
  let errors = 0;
  let paymentsUsed = 0;
  const send = (agent: http.Agent, header: string | null) =>
    new Promise<number>((resolve, reject) => {
      const headers: Record<string, string> = { "content-type": "application/json" };
      if (header) headers["payment-signature"] = header;
      const request = http.request(
        { host: url.hostname, port: url.port, path: url.pathname, method: job.method, agent, headers },
        (response) => {
          response.resume();
          response.on("end", () => resolve(response.statusCode ?? 0));
          response.on("error", reject);
        },
      );
      request.on("error", reject);
      request.end(job.body);
    });
  const started = process.hrtime.bigint();
  await Promise.all(
    job.sequences.map(async (sequence) => {
      const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
      for (const header of sequence) {
        const start = process.hrtime.bigint();
        try {
          const status = await send(agent, header);
          statuses[status] = (statuses[status] ?? 0) + 1;
          latencies.push(Number(process.hrtime.bigint() - start) / 1e6);
          if (header) paymentsUsed++;
        } catch {
          errors++;
        }
      }
      agent.destroy();
    }),
  );
  const durationMs = Number(process.hrtime.bigint() - started) / 1e6;
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
    timeouts: 0,
    paymentsUsed,
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
}

if (process.argv[1] && path.resolve(process.argv[1]) === path.resolve(here, "sequence-load.ts")) {
  const [jobPath, resultPath] = process.argv.slice(2) as [string, string];
  await main(jobPath, resultPath);
}
