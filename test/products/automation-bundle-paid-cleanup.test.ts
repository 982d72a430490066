import { spawn } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import pino from "pino";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { auditLedger, foldLedger, readLedger } from "../../products/agent-safe-paid-work-kit/lib/index.mjs";
import { devAccount, devPrivateKey } from "../../src/chain/dev-accounts.ts";
import { type LocalChain, startLocalChain } from "../../src/chain/local-chain.ts";
import { BASE_USDC_ADDRESS } from "../../src/config.ts";
import { buildProducts } from "../../src/products/build.ts";
import { startHostileSeller } from "../helpers/hostile-x402-seller.ts";
import { chainRpc } from "../helpers/payment-faults.ts";
import { freePort } from "../helpers/service.ts";
import { extractTo } from "./helpers.ts";

/**
 * The automation bundle's scheduled paid cleanup as a buyer runs it: `node automation/paid-cleanup.mjs`
 * from the BUILT bundle, with the x402 client it pins (@x402/fetch, @x402/evm and viem: the
 * project's node_modules, the same versions as automation/package-lock.json, in the place
 * `npm ci` in automation/ puts them), signing with a real key against an x402 v1 and an x402 v2
 * seller that settle on a local chain (anvil with Circle's USDC). The receipt of either must be
 * in the kit's ledger: @x402/core runs no receipt hook for v1, so without the kit's
 * recordReceipts under the paying fetch a v1 payment stayed `signed`.
 */

const PROJECT = path.resolve(import.meta.dirname, "../..");
const PRICE = "40000";
const INPUT =
  "id,name,email\n1, Ada Lovelace ,ada@example.org\n2,Grace Hopper,grace@example.org\n3,Ada L.,ADA@example.org\n,,\n";
let chain: LocalChain;
let bundle: string;
const dirs: string[] = [];
const sellers: { close(): Promise<void> }[] = [];

/** The csv-cleanup contract: trim, blank cells to null, drop blank rows, first row per key (case-insensitive). */
function cleanup(body: string): string {
  const { rows, keyColumns } = JSON.parse(body) as { rows: Record<string, string>[]; keyColumns: string[] };
  const seen = new Set<string>();
  const kept = rows
    .map((row) => Object.fromEntries(Object.entries(row).map(([k, v]) => [k, v?.trim() || null])))
    .filter((row) => Object.values(row).some((v) => v !== null))
    .filter((row) => {
      const key = keyColumns.map((k) => String(row[k]).toLowerCase()).join("\u0000");
      return seen.has(key) ? false : Boolean(seen.add(key));
    });
  return JSON.stringify({ rows: kept, columns: Object.keys(rows[0] ?? {}) });
}

function runNode(args: string[], options: { cwd: string; env: NodeJS.ProcessEnv }) {
  return new Promise<{ status: number | null; stdout: string; stderr: string }>((resolve, reject) => {
    const child = spawn(process.execPath, args, { ...options, stdio: ["ignore", "pipe", "pipe"] });
    let stdout = "";
    let stderr = "";
    child.stdout.on("data", (chunk) => (stdout += chunk));
    child.stderr.on("data", (chunk) => (stderr += chunk));
    const timer = setTimeout(() => child.kill(), 100_000);
    child.on("error", reject);
    child.on("close", (status) => {
      clearTimeout(timer);
      resolve({ status, stdout, stderr });
    });
  });
}

beforeAll(async () => {
  chain = await startLocalChain({ port: await freePort(), log: pino({ level: "silent" }) });
  const releasesDir = fs.mkdtempSync(path.join(os.tmpdir(), "utility402-bundle-release-"));
  dirs.push(releasesDir);
  const [outcome] = await buildProducts({ releasesDir, clinicalDb: path.join(releasesDir, "none.sqlite") }, [
    "automation-data-toolkit-bundle",
  ]);
  if (!outcome || outcome.state === "unbuildable")
    throw new Error(`the bundle was not built: ${JSON.stringify(outcome)}`);
  bundle = await extractTo(path.join(releasesDir, outcome.descriptor.file));
  dirs.push(bundle);
  // Where `npm ci --ignore-scripts` in automation/ installs the pinned client.
  fs.symlinkSync(path.join(PROJECT, "node_modules"), path.join(bundle, "automation/node_modules"), "dir");
}, 180_000);
afterAll(async () => {
  await Promise.all(sellers.map((s) => s.close()));
  await chain?.stop();
  for (const dir of dirs) fs.rmSync(dir, { recursive: true, force: true });
});

describe("the bundle's paid cleanup on the pinned x402 client records the receipt of v1 and v2 sellers", () => {
  it("the client it loads is the version the bundle pins", () => {
    const lock = JSON.parse(fs.readFileSync(path.join(bundle, "automation/package-lock.json"), "utf8"));
    for (const name of ["@x402/fetch", "@x402/evm", "@x402/core", "viem"]) {
      const installed = JSON.parse(
        fs.readFileSync(path.join(bundle, "automation/node_modules", name, "package.json"), "utf8"),
      );
      expect(installed.version, name).toBe(lock.packages[`node_modules/${name}`].version);
    }
  });

  it.each([1, 2] as const)(
    "x402 v%i seller: paid, cleaned, gated (exit 0); the ledger and the report hold the settlement with its on-chain transaction",
    async (version) => {
      const seller = await startHostileSeller({
        rpcUrl: chain.rpcUrl,
        relayer: devAccount(0),
        terms: {
          version,
          offers: () => [{ amount: PRICE, payTo: devAccount(1).address }],
          maxTimeoutSeconds: 120,
          receipt: "honest",
        },
        respond: cleanup,
      });
      sellers.push(seller);
      const dir = fs.mkdtempSync(path.join(os.tmpdir(), "utility402-paid-cleanup-"));
      dirs.push(dir);
      fs.writeFileSync(path.join(dir, "export.csv"), INPUT);
      fs.writeFileSync(
        path.join(dir, "policy.json"),
        JSON.stringify({
          version: 1,
          networks: ["eip155:8453"],
          assets: [BASE_USDC_ADDRESS],
          maxPerPayment: PRICE,
          maxPerDay: PRICE,
          rpc: { "eip155:8453": chain.rpcUrl },
        }),
      );
      fs.writeFileSync(
        path.join(dir, "gate.json"),
        JSON.stringify({
          minRows: 1,
          requiredColumns: ["id", "name", "email"],
          keyColumns: ["email"],
          maxDuplicateRate: 0,
        }),
      );
      // Asynchronously: the seller answers from this process.
      const run = await runNode(
        [
          path.join(bundle, "automation/paid-cleanup.mjs"),
          ...["--input", "export.csv", "--out", "clean.csv", "--url", seller.url, "--policy", "policy.json"],
          ...["--ledger", "ledger.jsonl", "--gate", "gate.json", "--keys", "email"],
        ],
        { cwd: dir, env: { PATH: process.env.PATH, HOME: dir, X402_PRIVATE_KEY: devPrivateKey(3) } },
      );
      expect(run.status, run.stdout + run.stderr).toBe(0);
      expect(fs.readFileSync(path.join(dir, "clean.csv"), "utf8").replaceAll("\r\n", "\n")).toBe(
        "id,name,email\n1,Ada Lovelace,ada@example.org\n2,Grace Hopper,grace@example.org\n",
      );
      expect(seller.held.map((a) => [a.version, a.value])).toEqual([[version, PRICE]]);

      const entries = readLedger(path.join(dir, "ledger.jsonl"));
      expect(auditLedger(entries)).toEqual([]);
      const records = foldLedger(entries);
      expect(records.map((r) => [r.state, r.nonce])).toEqual([["settled", seller.held[0]?.nonce]]);
      const transaction = records[0]?.transaction as string;
      expect(transaction).toMatch(/^0x[0-9a-f]{64}$/);
      // The transaction the ledger names is on the chain and moved the authorization it records.
      const receipt = (await chainRpc(chain.rpcUrl, "eth_getTransactionReceipt", [transaction])) as {
        status: string;
      } | null;
      expect(receipt?.status).toBe("0x1");
      expect((await seller.chainView()).used).toEqual([true]);

      const report = JSON.parse(run.stdout);
      expect(report.code).toBe(0);
      expect(report.payment).toMatchObject({ state: "settled", transaction, amount: PRICE });
      expect(report.gate.pass).toBe(true);
    },
    120_000,
  );
});
