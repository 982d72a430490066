import { spawn } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { decodePaymentRequiredHeader } from "@x402/core/http";
import { createPublicClient, http, parseAbi } from "viem";
import { devPrivateKey } from "../../src/chain/dev-accounts.ts";
import { createPayer, paymentReceipt } from "../../src/client/paying-fetch.ts";
import { BASE_USDC_ADDRESS } from "../../src/config.ts";
import { type Spawned, spawnUtility402, waitFor } from "../helpers/processes.ts";
import { freePort } from "../helpers/service.ts";
import { type Attack, startIdleSocketAttack } from "./connection-cap-helpers.ts";
import { catastrophic, keysYaml } from "./hostile-inputs.ts";

/**
 * Issue 16's load test with a watchdog, shared by test/hardening/load-watchdog.e2e.test.ts (what cannot
 * flake) and bench/load-watchdog.bench.ts (the latencies): the real `utility402 serve` on the local
 * chain, the worst inputs sent at it, a watchdog probing /healthz on new connections from 127.0.0.1 and a
 * paying client's calls.
 */

export const PROBE_TIMEOUT_MS = 5000;

/** openapi-audit's worst text input: a YAML contract with 85,000 keys in one mapping (~1.09 MB). */

const jsonPost = (body: unknown): RequestInit => ({
  method: "POST",
  headers: { "content-type": "application/json" },
  body: typeof body === "string" ? body : JSON.stringify(body),
});

export interface RunningScenario {
  service: Spawned;
  port: number;
  /** The probes' own listener (HEALTH_PORT). */
  healthPort: number;
  base: string;
  rpcUrl: string;
  dataDir: string;
  stop(): Promise<void>;
}

export async function startScenarioService(): Promise<RunningScenario> {
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), "utility402-load-watchdog-"));
  const port = await freePort();
  const healthPort = await freePort();
  const chainPort = await freePort();
  const service = spawnUtility402(["serve"], {
    PORT: String(port),
    HEALTH_PORT: String(healthPort),
    LOCAL_CHAIN_PORT: String(chainPort),
    LOCAL_CHAIN_STATE: "none",
    DATA_DIR: dataDir,
    LOG_LEVEL: "warn",
  });
  const base = `http://127.0.0.1:${port}`;
  try {
    await waitFor(`${base}/healthz`, service.child, service.output);
  } catch (error) {
    await service.stop();
    fs.rmSync(dataDir, { recursive: true, force: true });
    throw error;
  }
  return {
    service,
    port,
    healthPort,
    base,
    rpcUrl: `http://127.0.0.1:${chainPort}`,
    dataDir,
    async stop() {
      await service.stop();
      fs.rmSync(dataDir, { recursive: true, force: true });
    },
  };
}

/**
 * /healthz probes on new connections every `everyMs` until stopped, from a process of its own
 * (./health-watchdog.mjs): latencies (ms) and failures, filled in when stop() resolves.
 */
export function watchdog(port: number, everyMs = 50, timeoutMs = PROBE_TIMEOUT_MS) {
  const latencies: number[] = [];
  const failures: string[] = [];
  const child = spawn(process.execPath, [WATCHDOG_SCRIPT, String(port), String(everyMs), String(timeoutMs)], {
    stdio: ["pipe", "pipe", "inherit"],
  });
  let output = "";
  child.stdout?.on("data", (chunk) => {
    output += chunk;
  });
  const exited = new Promise<void>((resolve) => child.once("exit", () => resolve()));
  return {
    latencies,
    failures,
    async stop() {
      child.stdin?.end();
      // A probe in flight finishes within its timeout; past that the watchdog is killed.
      const killer = setTimeout(() => child.kill("SIGKILL"), timeoutMs + 5000);
      await exited;
      clearTimeout(killer);
      const line = output.trim().split("\n").at(-1);
      if (!line) throw new Error("the health watchdog printed nothing");
      const report = JSON.parse(line) as { latencies: number[]; failures: string[] };
      latencies.push(...report.latencies);
      failures.push(...report.failures);
    },
  };
}

const WATCHDOG_SCRIPT = fileURLToPath(new URL("./health-watchdog.mjs", import.meta.url));

const ERC20 = parseAbi(["function balanceOf(address) view returns (uint256)"]);

export interface AttackOutcome {
  bigYamlAnswers: number[];
  redosAnswers: number[];
  paid: { status: number; settled: boolean; charged: bigint; price: bigint }[];
}

/**
 * Runs the attack while `paidCalls` csv-cleanup calls are paid (one at a time) by a payer of its own:
 * 20,000 idle sockets from 127.0.0.3, the 85,000-key YAML sent unpaid by two senders in a loop, six
 * concurrent catastrophic-pattern audits paid by a hostile payer. Each paid call's charge is read from
 * the chain (the payer's USDC balance before and after).
 */
export async function runAttack(
  scenario: RunningScenario,
  paidCalls: number,
  parts: { sockets?: boolean; yaml?: boolean; redos?: boolean } = {},
): Promise<AttackOutcome> {
  const { sockets = true, yaml = true, redos: withRedos = true } = parts;
  const chain = createPublicClient({ transport: http(scenario.rpcUrl) });
  const balanceOf = (address: `0x${string}`) =>
    chain.readContract({
      address: BASE_USDC_ADDRESS,
      abi: ERC20,
      functionName: "balanceOf",
      args: [address],
    });
  const payer = createPayer(devPrivateKey(7));
  const hostile = createPayer(devPrivateKey(6));
  const csvUrl = `${scenario.base}/v1/csv-cleanup`;
  const csvBody = {
    rows: [
      { id: "1", name: "a" },
      { id: "1", name: "a" },
    ],
  };
  const unpaid = await fetch(csvUrl, jsonPost(csvBody));
  const terms = decodePaymentRequiredHeader(unpaid.headers.get("payment-required") as string);
  const price = BigInt(terms.accepts[0]?.amount as string);

  let attacking = true;
  const attack: Attack | undefined = sockets ? startIdleSocketAttack(scenario.port, "127.0.0.3") : undefined;
  const bigBody = JSON.stringify({ contract: keysYaml(85_000) });
  const bigYamlAnswers: number[] = [];
  const senders = Array.from({ length: yaml ? 2 : 0 }, async () => {
    while (attacking) {
      const response = await fetch(`${scenario.base}/v1/openapi-audit`, jsonPost(bigBody)).catch(
        () => undefined,
      );
      bigYamlAnswers.push(response?.status ?? 0);
      await response?.arrayBuffer().catch(() => undefined);
    }
  });
  const redos = Array.from({ length: withRedos ? 6 : 0 }, async (_, i) => {
    const response = await hostile.fetch(
      `${scenario.base}/v1/openapi-audit`,
      jsonPost({ contract: catastrophic(i) }),
    );
    await response.arrayBuffer();
    return response.status;
  });
  for (const call of redos) call.catch(() => {});

  const paid: AttackOutcome["paid"] = [];
  try {
    for (let i = 0; i < paidCalls; i++) {
      const before = await balanceOf(payer.address);
      const response = await payer.fetch(csvUrl, jsonPost(csvBody));
      await response.arrayBuffer();
      const after = await balanceOf(payer.address);
      paid.push({
        status: response.status,
        settled: paymentReceipt(response)?.success === true,
        charged: before - after,
        price,
      });
    }
    await attack?.opened;
  } finally {
    attacking = false;
    await Promise.all(senders);
    await attack?.stop();
  }
  const redosAnswers = await Promise.all(redos);
  return { bigYamlAnswers, redosAnswers, paid };
}

export const percentile = (values: number[], p: number) => {
  if (values.length === 0) return Number.NaN;
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)] as number;
};
