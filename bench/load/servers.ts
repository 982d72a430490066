/**
 * Servers under test, each in a process of its own: started with an environment, awaited until
 * they answer, measured by the CPU time the kernel charged to that process, stopped by pid.
 */
import { type ChildProcess, spawn } from "node:child_process";
import fs from "node:fs";
import path from "node:path";

export interface ServerProcess {
  name: string;
  url: string;
  pid: number;
  /** User + system CPU seconds this process has used so far (Linux /proc; NaN elsewhere). */
  cpuSeconds(): number;
  /** Sends a message over the IPC channel (processes started with `ipc: true`) and awaits the reply type. */
  request(message: { type: string; [key: string]: unknown }, reply: string): Promise<void>;
  stop(): Promise<void>;
}

const repoRoot = path.resolve(path.dirname(new URL(import.meta.url).pathname), "..", "..");
const TICKS_PER_SECOND = 100; // USER_HZ on Linux

export function processCpuSeconds(pid: number): number {
  try {
    const stat = fs.readFileSync(`/proc/${pid}/stat`, "utf8");
    // Fields after the command name (which may contain spaces): utime and stime are the 12th and 13th.
    const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
    return (Number(fields[11]) + Number(fields[12])) / TICKS_PER_SECOND;
  } catch {
    return Number.NaN;
  }
}

/**
 * Starts `node --import tsx <script> ...args` from the repository root (or `root`: another checkout) and
 * waits until `readyPath` answers.
 */
export async function startServerProcess(options: {
  name: string;
  script: string;
  /** The checkout the script and its working directory are in; default this repository. */
  root?: string;
  args?: string[];
  env: Record<string, string>;
  port: number;
  readyPath: string;
  ipc?: boolean;
}): Promise<ServerProcess> {
  const root = options.root ?? repoRoot;
  const child: ChildProcess = spawn(
    process.execPath,
    ["--import", "tsx", path.join(root, options.script), ...(options.args ?? [])],
    {
      cwd: root,
      env: { ...process.env, ...options.env },
      stdio: ["ignore", "ignore", "pipe", ...(options.ipc ? (["ipc"] as const) : [])],
    },
  );
  let stderr = "";
  child.stderr?.on("data", (chunk: Buffer) => {
    stderr = (stderr + chunk.toString()).slice(-4000);
  });
  const exited = new Promise<void>((resolve) => child.once("exit", () => resolve()));
  const url = `http://127.0.0.1:${options.port}`;
  const deadline = Date.now() + 60_000;
  for (;;) {
    if (child.exitCode !== null) throw new Error(`${options.name} exited: ${stderr}`);
    if (Date.now() > deadline) {
      child.kill("SIGKILL");
      throw new Error(`${options.name} did not answer within 60 s: ${stderr}`);
    }
    const answered = await fetch(url + options.readyPath)
      .then((response) => response.ok)
      .catch(() => false);
    if (answered) break;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  const pid = child.pid as number;
  return {
    name: options.name,
    url,
    pid,
    cpuSeconds: () => processCpuSeconds(pid),
    request: (message, reply) =>
      new Promise<void>((resolve, reject) => {
        const onMessage = (answer: { type?: string; error?: string }) => {
          if (answer?.type !== reply && answer?.type !== "error") return;
          child.off("message", onMessage);
          if (answer.type === "error") reject(new Error(answer.error));
          else resolve();
        };
        child.on("message", onMessage);
        child.send(message);
      }),
    async stop() {
      if (child.exitCode !== null || child.signalCode !== null) return;
      child.kill("SIGTERM");
      const timer = setTimeout(() => child.kill("SIGKILL"), 20_000);
      await exited;
      clearTimeout(timer);
    },
  };
}
