import { type ChildProcess, spawn } from "node:child_process";
import os from "node:os";
import path from "node:path";
import { pathToFileURL } from "node:url";

export const BIN = path.resolve("bin/utility402.js");

/** A clean environment: the test runner's own variables (vite sets BASE_URL, for one) must not leak in. */
export const baseEnv = { PATH: process.env.PATH ?? "", HOME: process.env.HOME ?? os.tmpdir() };

export interface Spawned {
  child: ChildProcess;
  /** Everything the process wrote so far (stdout and stderr). */
  output(): string;
  /** SIGTERM, then SIGKILL if it has not exited within `graceMs`; resolves when it has exited. */
  stop(graceMs?: number): Promise<void>;
}

/** Starts `utility402 <args>` as its own process with exactly `env` (plus PATH and HOME), node given `nodeArgs`. */
export function spawnUtility402(
  args: string[],
  env: Record<string, string>,
  nodeArgs: string[] = [],
): Spawned {
  const child = spawn(process.execPath, [...nodeArgs, BIN, ...args], {
    env: { ...baseEnv, ...env },
    stdio: ["ignore", "pipe", "pipe"],
  });
  let output = "";
  child.stdout?.on("data", (chunk) => (output += chunk));
  child.stderr?.on("data", (chunk) => (output += chunk));
  const exited = new Promise<void>((resolve) => {
    if (child.exitCode !== null || child.signalCode !== null) resolve();
    else child.once("exit", () => resolve());
  });
  return {
    child,
    output: () => output,
    async stop(graceMs = 10_000) {
      if (child.exitCode !== null || child.signalCode !== null) return;
      child.kill("SIGTERM");
      const timer = setTimeout(() => child.kill("SIGKILL"), graceMs);
      await exited;
      clearTimeout(timer);
    },
  };
}

/**
 * What spawns a service whose clock starts `offsetMs` ahead of the machine's (test/helpers/shifted-clock.mjs):
 * a deadline read from the clock has passed at once, where the test would otherwise wait for it in real time.
 */
export function shiftedClock(offsetMs: number): { env: Record<string, string>; nodeArgs: string[] } {
  return {
    env: { SHIFTED_CLOCK_OFFSET_MS: String(Math.max(0, Math.ceil(offsetMs))) },
    nodeArgs: ["--import", pathToFileURL(path.resolve("test/helpers/shifted-clock.mjs")).href],
  };
}

/** Polls `url` until it answers 2xx; fails early with the process output if the process exits. */
export async function waitFor(url: string, child: ChildProcess, output: () => string, ms = 90_000) {
  const deadline = Date.now() + ms;
  while (Date.now() < deadline) {
    if (child.exitCode !== null) throw new Error(`service exited early (${child.exitCode}):\n${output()}`);
    try {
      const response = await fetch(url);
      if (response.ok) return response;
    } catch {}
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  throw new Error(`no answer from ${url}:\n${output()}`);
}

/** Polls `check` until it returns a value (not undefined), or fails after `ms`. */
export async function until<T>(what: string, check: () => Promise<T | undefined>, ms = 90_000): Promise<T> {
  const deadline = Date.now() + ms;
  while (Date.now() < deadline) {
    const value = await check();
    if (value !== undefined) return value;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  throw new Error(`timed out waiting for ${what}`);
}
