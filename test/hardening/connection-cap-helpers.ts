import { type ChildProcess, spawn } from "node:child_process";
import fs from "node:fs";
import http from "node:http";
import path from "node:path";

/** Idle-socket attacks and health probes for the hardening tests and the load-watchdog bench. */

const ATTACKER = path.resolve("test/hardening/connection-cap-attacker.mjs");
export const ATTACK_SOCKETS = 20_000;
const ATTACK_PROCESSES = 2;
const PROBE_TIMEOUT_MS = 5000;

export interface AttackReport {
  phase: string;
  opened: number;
  failed: number;
  closed: number;
  open: number;
  peakOpen: number;
  answers: Record<string, number>;
  errors: Record<string, number>;
}

export interface Attack {
  /** Resolves when every attacker has attempted all its connections. */
  opened: Promise<AttackReport[]>;
  /** Resolves when every attacker's connections have all been closed (by the server). */
  closed: Promise<AttackReport[]>;
  stop(): Promise<void>;
}

/** `sockets` idle connections from `localAddress`, split over `processes` attacker processes. */
export function startIdleSocketAttack(
  port: number,
  localAddress: string,
  sockets = ATTACK_SOCKETS,
  processes = ATTACK_PROCESSES,
): Attack {
  const children: ChildProcess[] = [];
  const opened: Promise<AttackReport>[] = [];
  const closed: Promise<AttackReport>[] = [];
  for (let i = 0; i < processes; i++) {
    const child = spawn(
      process.execPath,
      [ATTACKER, "127.0.0.1", String(port), localAddress, String(sockets / processes)],
      { stdio: ["ignore", "pipe", "inherit"] },
    );
    children.push(child);
    let buffer = "";
    const reports: AttackReport[] = [];
    const waiters: Array<(report: AttackReport) => void> = [];
    child.stdout?.on("data", (chunk) => {
      buffer += chunk;
      let newline = buffer.indexOf("\n");
      while (newline >= 0) {
        const report = JSON.parse(buffer.slice(0, newline)) as AttackReport;
        buffer = buffer.slice(newline + 1);
        reports.push(report);
        for (const waiter of waiters.splice(0)) waiter(report);
        newline = buffer.indexOf("\n");
      }
    });
    const next = (phase: (report: AttackReport) => boolean) =>
      new Promise<AttackReport>((resolve, reject) => {
        const found = reports.find(phase);
        if (found) return resolve(found);
        const wait = (report: AttackReport) => (phase(report) ? resolve(report) : waiters.push(wait));
        waiters.push(wait);
        child.once("exit", () => {
          const last = reports.find(phase);
          if (last) resolve(last);
          else reject(new Error(`attacker exited (${child.exitCode}) without a report`));
        });
      });
    opened.push(next((report) => report.phase === "opened"));
    closed.push(next((report) => report.phase === "closed" || report.phase === "stopped"));
  }
  return {
    opened: Promise.all(opened),
    closed: Promise.all(closed),
    async stop() {
      await Promise.all(
        children.map(async (child) => {
          if (child.exitCode !== null || child.signalCode !== null) return;
          const exited = new Promise((resolve) => child.once("exit", resolve));
          child.kill("SIGTERM");
          const timer = setTimeout(() => child.kill("SIGKILL"), 5000);
          await exited;
          clearTimeout(timer);
        }),
      );
    },
  };
}

/** One GET /healthz on a new connection (no keep-alive pool): its status, or the error that stopped it. */
export function probeHealth(
  port: number,
  options: { timeoutMs?: number; localAddress?: string } = {},
): Promise<number | string> {
  const timeoutMs = options.timeoutMs ?? PROBE_TIMEOUT_MS;
  return new Promise<number | string>((resolve) => {
    const request = http.get(
      { host: "127.0.0.1", port, path: "/healthz", agent: false, localAddress: options.localAddress },
      (response) => {
        response.resume();
        response.on("end", () => resolve(response.statusCode ?? 0));
        response.on("error", (error) => resolve(error.message));
      },
    );
    // A deadline on the whole exchange, connecting included (a socket timeout starts only once connected).
    const deadline = setTimeout(
      () => request.destroy(new Error(`no answer within ${timeoutMs} ms`)),
      timeoutMs,
    );
    request.on("close", () => clearTimeout(deadline));
    request.on("error", (error) => resolve((error as NodeJS.ErrnoException).code ?? error.message));
  });
}

/** Open file descriptors of a process (Linux /proc). */
export const openDescriptors = (pid: number) => {
  try {
    return fs.readdirSync(`/proc/${pid}/fd`).length;
  } catch {
    return 0; // the process is gone
  }
};
