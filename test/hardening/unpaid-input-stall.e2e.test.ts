import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type Spawned, spawnUtility402, waitFor } from "../helpers/processes.ts";
import { freePort, jsonPost } from "../helpers/service.ts";
import { keysYaml } from "./hostile-inputs.ts";

/**
 * Finding 1 of the hardening review: one unpaid openapi-audit body with an 85,000-key YAML contract
 * (1.09 MB) froze every route, /healthz included, for 68.5 s: the YAML was parsed with unique keys on
 * the main thread before payment. Heavy input is now bounded and parsed only in a worker.
 *
 * The service runs as its own process, so its event loop is not the test's: while the hostile bodies
 * are in flight, /healthz must keep answering. The 5 s allowance is generous on purpose (no timing
 * claims here; bench/load-watchdog.bench.ts measures the latency): before the fix it waited 68 s.
 */
describe("hostile unpaid inputs do not stall the service", () => {
  let service: Spawned;
  let base: string;
  let dataDir: string;

  beforeAll(async () => {
    dataDir = fs.mkdtempSync(path.join(os.tmpdir(), "utility402-stall-"));
    const port = await freePort();
    base = `http://127.0.0.1:${port}`;
    service = spawnUtility402(["serve"], {
      PORT: String(port),
      DATA_DIR: dataDir,
      LOCAL_CHAIN_PORT: String(await freePort()),
      LOCAL_CHAIN_STATE: "none",
      LOG_LEVEL: "warn",
    });
    await waitFor(`${base}/healthz`, service.child, service.output, 120_000);
  }, 150_000);

  afterAll(async () => {
    await service?.stop();
    fs.rmSync(dataDir, { recursive: true, force: true });
  });

  it("keeps /healthz answering while three 85,000-key YAML contracts arrive unpaid, and asks them to pay", async () => {
    const contract = keysYaml(85_000);
    expect(contract.length).toBeGreaterThan(1_000_000);
    const hostile = Array.from({ length: 3 }, () =>
      fetch(`${base}/v1/openapi-audit`, jsonPost({ contract })).then((response) => response.status),
    );
    const probes: number[] = [];
    for (let i = 0; i < 20; i++) {
      const response = await fetch(`${base}/healthz`, { signal: AbortSignal.timeout(5_000) });
      probes.push(response.status);
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    expect(probes.every((status) => status === 200)).toBe(true);
    // Unpaid: the terms, not a parse result (the contract is the worker's once paid).
    expect(await Promise.all(hostile)).toEqual([402, 402, 402]);
  });
});
