import { type ChildProcess, execFile, spawn } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { promisify } from "node:util";
import { afterEach, describe, expect, it } from "vitest";
import { devPrivateKey } from "../src/chain/dev-accounts.ts";
import { createPayer } from "../src/client/paying-fetch.ts";
import { BIN, baseEnv, waitFor } from "./helpers/processes.ts";
import { freePort } from "./helpers/service.ts";

const run = promisify(execFile);

const rpcAnswers = async (url: string) =>
  fetch(url, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "eth_chainId", params: [] }),
  }).then(
    () => true,
    () => false,
  );

describe("the utility402 command, as a new user runs it", () => {
  const children: ChildProcess[] = [];
  const dirs: string[] = [];
  afterEach(async () => {
    // SIGTERM first, also after a failure: the service stops the local chain it started (a SIGKILL
    // would leave that anvil running); SIGKILL only if it does not exit in time.
    await Promise.all(
      children.splice(0).map(async (child) => {
        if (child.exitCode !== null || child.signalCode !== null) return;
        const exited = new Promise((resolve) => child.once("exit", resolve));
        child.kill("SIGTERM");
        const timer = setTimeout(() => child.kill("SIGKILL"), 20_000);
        await exited;
        clearTimeout(timer);
      }),
    );
    for (const dir of dirs.splice(0)) fs.rmSync(dir, { recursive: true, force: true });
  }, 30_000);

  it("serves in local mode, pays, reports the ledger, and shuts down cleanly on SIGTERM", async () => {
    const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), "utility402-cli-"));
    dirs.push(dataDir);
    const [port, chainPort] = [await freePort(), await freePort()];
    const env = { ...baseEnv, PORT: String(port), LOCAL_CHAIN_PORT: String(chainPort), DATA_DIR: dataDir };
    const child = spawn(process.execPath, [BIN, "serve"], { env, stdio: ["ignore", "pipe", "pipe"] });
    children.push(child);
    let output = "";
    child.stdout?.on("data", (chunk) => (output += chunk));
    child.stderr?.on("data", (chunk) => (output += chunk));
    const base = `http://127.0.0.1:${port}`;

    const health = await waitFor(`${base}/healthz`, child, () => output);
    expect(await health.json()).toEqual({ status: "ok" });
    expect(health.headers.get("x-request-id")).toBeTruthy();
    expect(output).toContain("LOCAL TEST CHAIN");
    expect(output).toContain(`http://127.0.0.1:${chainPort}`);
    expect(output).toContain("npm run demo");

    const echoed = await fetch(`${base}/readyz`, { headers: { "x-request-id": "trace-123" } });
    expect(echoed.status).toBe(200);
    expect(echoed.headers.get("x-request-id")).toBe("trace-123");

    const paid = await createPayer(devPrivateKey(4)).fetch(`${base}/v1/csv-cleanup`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ rows: [{ a: "x" }] }),
    });
    expect(paid.status).toBe(200);
    const metrics = await (await fetch(`${base}/metrics`)).text();
    expect(metrics).toMatch(/utility402_payments_total\{operation="csv-cleanup",state="settled"\} 1/);
    expect(metrics).toContain("utility402_http_request_duration_seconds_bucket");

    const lines = output.split("\n").filter((line) => line.startsWith("{"));
    const requestLines = lines.map((line) => JSON.parse(line)).filter((entry) => entry.msg === "request");
    expect(requestLines.length).toBeGreaterThan(0);
    for (const entry of requestLines) expect(entry.requestId).toBeTruthy();

    const exited = new Promise<number | null>((resolve) => child.once("exit", (code) => resolve(code)));
    child.kill("SIGTERM");
    expect(await exited).toBe(0);
    expect(await rpcAnswers(`http://127.0.0.1:${chainPort}`)).toBe(false);

    const { stdout } = await run(process.execPath, [BIN, "ledger"], { env });
    expect(stdout).toMatch(/csv-cleanup\s+1\s+2\.000000/);
    const { stdout: json } = await run(process.execPath, [BIN, "ledger", "--json"], { env });
    expect(JSON.parse(json)).toEqual([
      {
        day: expect.stringMatching(/^\d{4}-\d{2}-\d{2}$/),
        operationId: "csv-cleanup",
        payments: 1,
        atomicAmount: "2000000",
      },
    ]);
  }, 180_000);

  it("refuses to start on invalid configuration, one line per problem, exit code 1", async () => {
    const env = { ...baseEnv, PORT: "eighty", PAYMENT_MODE: "self", X402_PAY_TO: "0x1" };
    const failure = await run(process.execPath, [BIN, "serve"], { env }).catch((error) => error);
    expect(failure.code).toBe(1);
    const lines = failure.stderr.trim().split("\n");
    expect(lines).toEqual([
      "config error: PORT: must be a port number (1-65535)",
      "config error: X402_PAY_TO: must be a 0x-prefixed 20-byte hex address",
      "config error: X402_SETTLER_PRIVATE_KEY: required when PAYMENT_MODE=self",
      "config error: RPC_URL: required when PAYMENT_MODE=self",
    ]);
  });
});
