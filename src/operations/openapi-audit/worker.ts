import { parentPort } from "node:worker_threads";
import { runBelowTheEventLoop, type WorkerRequest } from "../worker-pool.ts";
import { type AuditJob, auditDocument, ContractRefused, redoclyConfig } from "./audit.ts";
import { warmSpectral } from "./spectral.ts";

/** Messages between the pool (main thread) and an audit worker: { id, task } in, these out. */
export type WorkerReply =
  | { type: "ready" }
  | { type: "done"; id: number; result: Awaited<ReturnType<typeof auditDocument>> }
  | { type: "failed"; id: number; message: string }
  /** A text contract parsed here was refused (a 400 at /contract). */
  | { type: "invalid"; id: number; message: string };

const port = parentPort;
if (!port) throw new Error("the audit worker must run in a worker thread");
runBelowTheEventLoop();

// The audit never needs the network: even if a code path tried to fetch, it fails here.
globalThis.fetch = () => Promise.reject(new Error("the audit worker makes no network requests"));

// Build both rulesets' Redocly configuration before saying ready, so no audit pays for it.
await Promise.all([redoclyConfig("recommended"), redoclyConfig("strict")]);
warmSpectral();

port.on("message", async ({ id, task: job }: WorkerRequest<AuditJob>) => {
  let reply: WorkerReply;
  try {
    reply = { type: "done", id, result: await auditDocument(job) };
  } catch (error) {
    reply =
      error instanceof ContractRefused
        ? { type: "invalid", id, message: error.message }
        : { type: "failed", id, message: error instanceof Error ? error.message : String(error) };
  }
  port.postMessage(reply);
});
port.postMessage({ type: "ready" } satisfies WorkerReply);
