import { spawnSync } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { registerExactEvmScheme } from "@x402/evm/exact/client";
import { wrapFetchWithPayment, x402Client } from "@x402/fetch";
import pino from "pino";
import { privateKeyToAccount } from "viem/accounts";
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it, vi } from "vitest";
import {
  foldLedger,
  guardClient,
  readLedger,
  recordReceipts,
  type SpendPolicy,
} from "../../products/agent-safe-paid-work-kit/lib/index.mjs";
import { devAccount, devPrivateKey } from "../../src/chain/dev-accounts.ts";
import { type LocalChain, startLocalChain } from "../../src/chain/local-chain.ts";
import { BASE_USDC_ADDRESS } from "../../src/config.ts";
import {
  finalizeHead,
  mineAtNow,
  type SellerTerms,
  startHostileSeller,
  startOtherChainRpc,
} from "../helpers/hostile-x402-seller.ts";
import { chainRpc } from "../helpers/payment-faults.ts";
import { freePort } from "../helpers/service.ts";

/**
 * The hostile sellers of issue 32 against the agent-safe paid work kit's guard on the REAL client
 * (@x402/fetch + @x402/evm signing EIP-3009 with a viem account; x402 v2 and v1 sellers), with a
 * local chain (anvil with Circle's USDC) on which the seller really settles. The test's Date is
 * faked and the chain's block time follows it, so validity windows of 2 s pass without waiting.
 */

const PAYEE = devAccount(1).address;
const PAYEE2 = devAccount(5).address;
const KIT = path.resolve(import.meta.dirname, "../../products/agent-safe-paid-work-kit");
let chain: LocalChain;
const sellers: { close(): Promise<void> }[] = [];
const dirs: string[] = [];

beforeAll(async () => {
  chain = await startLocalChain({ port: await freePort(), log: pino({ level: "silent" }) });
}, 120_000);
afterAll(async () => {
  await chain?.stop();
  for (const dir of dirs) fs.rmSync(dir, { recursive: true, force: true });
});
beforeEach(async () => {
  vi.useFakeTimers({ toFake: ["Date"] });
  const latest = (await chainRpc(chain.rpcUrl, "eth_getBlockByNumber", ["latest", false])) as {
    timestamp: string;
  };
  vi.setSystemTime(Math.max(Date.now(), (Number(BigInt(latest.timestamp)) + 1) * 1000));
});
afterEach(async () => {
  vi.useRealTimers();
  await Promise.all(sellers.splice(0).map((s) => s.close()));
});

const policy = (extra: Partial<SpendPolicy> = {}): SpendPolicy => ({
  version: 1,
  networks: ["eip155:8453"],
  assets: [BASE_USDC_ADDRESS],
  maxPerPayment: "50000",
  maxPerDay: "100000",
  rpc: { "eip155:8453": chain.rpcUrl },
  ...extra,
});
function ledgerFile() {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "utility402-hostile-"));
  dirs.push(dir);
  return path.join(dir, "ledger.jsonl");
}
const newClient = () =>
  registerExactEvmScheme(new x402Client(), { signer: privateKeyToAccount(devPrivateKey(3)) });
function guarded(spend: SpendPolicy, ledgerPath = ledgerFile()) {
  const client = guardClient(newClient(), { policy: spend, ledgerPath });
  return { pay: wrapFetchWithPayment(recordReceipts(fetch, client), client), ledgerPath };
}
async function seller(terms: Partial<SellerTerms>) {
  const s = await startHostileSeller({
    rpcUrl: chain.rpcUrl,
    relayer: devAccount(0),
    terms: {
      version: 2,
      offers: () => [{ amount: "40000", payTo: PAYEE }],
      maxTimeoutSeconds: 2,
      receipt: "none",
      ...terms,
    },
  });
  sellers.push(s);
  return s;
}
/** Time passes, and the chain finalizes its head (the guard believes only final blocks). */
async function advance(seconds: number) {
  await advanceHead(seconds);
  await finalizeHead(chain.rpcUrl);
}
/** Time passes on the chain's head only: blocks a reorganisation can still replace. */
async function advanceHead(seconds: number) {
  vi.setSystemTime(Date.now() + seconds * 1000);
  await mineAtNow(chain.rpcUrl);
}
/** Pays `times` times, `seconds` apart, the seller settling each new authorization at once when `settle`. */
async function payRepeatedly(
  pay: (url: string) => Promise<Response>,
  s: Awaited<ReturnType<typeof seller>>,
  times: number,
  seconds: number,
  settle: boolean,
) {
  const outcomes: string[] = [];
  let taken = 0;
  for (let i = 0; i < times; i++) {
    outcomes.push(
      await pay(s.url).then(
        (r) => String(r.status),
        (e: Error) => (/spend policy/.test(e.message) ? "refused" : e.message),
      ),
    );
    // Each new authorization straight to the chain (one block each: the chain's clock moves with them).
    if (settle) for (const a of s.held.slice(taken)) await s.settle(a);
    taken = s.held.length;
    await advance(seconds);
  }
  return outcomes;
}
/** What the chain has honoured or could still honour of everything the seller holds, in atomic units. */
async function exposure(s: Awaited<ReturnType<typeof seller>>) {
  const { time, used } = await s.chainView();
  return s.held
    .filter((a, i) => used[i] || BigInt(a.validBefore) > time)
    .reduce((sum, a) => sum + BigInt(a.value), 0n);
}
const states = (ledgerPath: string) => foldLedger(readLedger(ledgerPath)).map((r) => [r.state, r.chainState]);

describe("hostile sellers against the guard on @x402/fetch + @x402/evm, with a local chain", () => {
  it("validity 2 s, no receipt, every signature settled on chain: 30 calls over 90 s against a $0.10 day sign two", async () => {
    const s = await seller({ maxTimeoutSeconds: 2, receipt: "none" });
    const { pay, ledgerPath } = guarded(policy());
    const outcomes = await payRepeatedly(pay, s, 30, 3, true);
    expect(outcomes.filter((o) => o === "200")).toHaveLength(2);
    expect(outcomes.filter((o) => o !== "200" && o !== "refused")).toEqual([]);
    expect(s.held.map((a) => a.value)).toEqual(["40000", "40000"]);
    expect(await exposure(s)).toBe(80000n);
    // The guard learnt from the chain that both were used, without a receipt.
    expect(states(ledgerPath)).toEqual([
      ["settled", "used"],
      ["settled", "used"],
    ]);
  });

  it("without an RPC in the policy, a lapsed signature stays counted (fail closed) and the ledger script lists it as unknown", async () => {
    const s = await seller({ maxTimeoutSeconds: 2, receipt: "none" });
    const { rpc: _none, ...withoutRpc } = policy();
    const { pay, ledgerPath } = guarded(withoutRpc);
    const outcomes = await payRepeatedly(pay, s, 6, 30, false);
    expect(outcomes).toEqual(["200", "200", "refused", "refused", "refused", "refused"]);
    const script = spawnSync(
      process.execPath,
      [path.join(KIT, "scripts/ledger.mjs"), ledgerPath, "--now", new Date().toISOString()],
      { encoding: "utf8" },
    );
    const report = JSON.parse(script.stdout);
    expect(report.unknownAuthorizations.map((a: { nonce: string }) => a.nonce).sort()).toEqual(
      s.held.map((a) => a.nonce).sort(),
    );
    // Given the policy with the RPC, the script asks the chain: never used, so both are released.
    const policyFile = path.join(path.dirname(ledgerPath), "policy.json");
    fs.writeFileSync(policyFile, JSON.stringify(policy()));
    const resolved = JSON.parse(
      spawnSync(
        process.execPath,
        [
          path.join(KIT, "scripts/ledger.mjs"),
          ledgerPath,
          "--policy",
          policyFile,
          "--now",
          new Date().toISOString(),
        ],
        {
          encoding: "utf8",
        },
      ).stdout,
    );
    expect(resolved.unknownAuthorizations).toEqual([]);
    expect(resolved.byState).toEqual({ expired: 2 });
  });

  it("receipts that say success:false while the seller settles anyway: counted, then recorded as settled from the chain", async () => {
    const s = await seller({ maxTimeoutSeconds: 2, receipt: "false-but-settled" });
    const { pay, ledgerPath } = guarded(policy());
    const outcomes = await payRepeatedly(pay, s, 10, 5, false);
    expect(outcomes.filter((o) => o === "200")).toHaveLength(2);
    expect(await exposure(s)).toBe(80000n);
    expect(states(ledgerPath)).toEqual([
      ["settled", "used"],
      ["settled", "used"],
    ]);
  });

  it("receipts that say success:false and a seller that never settles: released only once the chain shows them unused after validBefore", async () => {
    const s = await seller({ maxTimeoutSeconds: 2, receipt: "false" });
    const { pay, ledgerPath } = guarded(policy());
    expect((await pay(s.url)).status).toBe(200);
    expect((await pay(s.url)).status).toBe(200);
    await expect(pay(s.url)).rejects.toThrow(/over maxPerDay 100000/);
    await advance(3);
    expect((await pay(s.url)).status).toBe(200);
    expect(states(ledgerPath)).toEqual([
      ["expired", "unused"],
      ["expired", "unused"],
      ["failed", undefined],
    ]);
    // A late attempt to use a released authorization fails on chain.
    expect((await s.settle(s.held[0] as (typeof s.held)[number])).settled).toBe(false);
    expect(await exposure(s)).toBe(40000n);
  });

  it("a receipt that lies about settling (an invented transaction) counts for good", async () => {
    const s = await seller({ maxTimeoutSeconds: 2, receipt: "lying" });
    const { pay, ledgerPath } = guarded(policy());
    const outcomes = await payRepeatedly(pay, s, 5, 10, false);
    expect(outcomes.filter((o) => o === "200")).toHaveLength(2);
    expect(states(ledgerPath)).toEqual([
      ["settled", undefined],
      ["settled", undefined],
    ]);
  });

  it("an honest x402 v1 seller: its X-PAYMENT-RESPONSE receipts are recorded and the day holds ($0.04 × 9 in 20 s against $0.10)", async () => {
    const s = await seller({ version: 1, maxTimeoutSeconds: 60, receipt: "honest" });
    const { pay, ledgerPath } = guarded(policy());
    const outcomes = await payRepeatedly(pay, s, 9, 2, false);
    expect(outcomes.filter((o) => o === "200")).toHaveLength(2);
    const records = foldLedger(readLedger(ledgerPath));
    expect(records.map((r) => [r.state, r.network, r.amount])).toEqual([
      ["settled", "eip155:8453", "40000"],
      ["settled", "eip155:8453", "40000"],
    ]);
    const { used } = await s.chainView();
    expect(used).toEqual([true, true]);
    for (const record of records) expect(record.transaction).toMatch(/^0x[0-9a-f]{64}$/);
  });

  it("@x402/core 2.27 runs no onPaymentResponse hook for x402 v1: without recordReceipts the v1 receipt never reaches the guard, and the payment stays counted", async () => {
    const s = await seller({ version: 1, maxTimeoutSeconds: 60, receipt: "honest" });
    const ledgerPath = ledgerFile();
    const client = guardClient(newClient(), { policy: policy(), ledgerPath });
    const heard: number[] = [];
    client.onPaymentResponse(async ({ paymentPayload }) => {
      heard.push(paymentPayload.x402Version);
    });
    expect((await wrapFetchWithPayment(fetch, client)(s.url)).status).toBe(200);
    expect(heard).toEqual([]);
    expect(states(ledgerPath)).toEqual([["signed", undefined]]);
    await expect(wrapFetchWithPayment(fetch, client)(s.url)).resolves.toHaveProperty("status", 200);
    await expect(wrapFetchWithPayment(fetch, client)(s.url)).rejects.toThrow(/over maxPerDay/);
  });

  it("offered $0.05 and $0.000001, both allowed, it signs $0.000001 (v2 and v1)", async () => {
    for (const version of [2, 1] as const) {
      const s = await seller({
        version,
        maxTimeoutSeconds: 60,
        receipt: "honest",
        offers: () => [
          { amount: "50000", payTo: PAYEE },
          { amount: "1", payTo: PAYEE },
        ],
      });
      const { pay } = guarded(policy());
      expect((await pay(s.url)).status).toBe(200);
      expect(s.held.map((a) => a.value)).toEqual(["1"]);
    }
  });

  it("prices raised between quotes and a restart on the same ledger: nothing signed above the policy, the day holds across processes", async () => {
    let quote = 0;
    const s = await seller({
      maxTimeoutSeconds: 2,
      receipt: "none",
      offers: () => [{ amount: ["30000", "900000"][quote++ % 2] as string, payTo: PAYEE }],
    });
    const first = guarded(policy());
    const outcomes = [
      await first.pay(s.url).then(
        (r) => r.status,
        () => "refused",
      ),
    ];
    outcomes.push(
      await first.pay(s.url).then(
        (r) => r.status,
        () => "refused",
      ),
    );
    for (const a of s.held) await s.settle(a);
    await advance(60);
    const second = guarded(policy(), first.ledgerPath); // a new process on the same ledger
    for (let i = 0; i < 6; i++)
      outcomes.push(
        await second.pay(s.url).then(
          (r) => r.status,
          () => "refused",
        ),
      );
    expect(s.held.every((a) => BigInt(a.value) <= 50000n)).toBe(true);
    expect(await exposure(s)).toBeLessThanOrEqual(100000n);
    expect(s.held).toHaveLength(3);
  });

  it("a ledger deleted while in use: a refusal naming the file, never a raw JavaScript error", async () => {
    const s = await seller({
      maxTimeoutSeconds: 60,
      receipt: "none",
      offers: () => [{ amount: "10000", payTo: PAYEE }],
    });
    const { pay, ledgerPath } = guarded(policy());
    expect((await pay(s.url)).status).toBe(200);
    fs.rmSync(ledgerPath);
    const error = await pay(s.url).then(
      () => undefined,
      (e: Error) => e,
    );
    expect(error?.message).toContain(`${ledgerPath}: the ledger is gone or empty`);
    expect(error?.message).not.toMatch(/BigInt|undefined/);
    expect(s.held).toHaveLength(1);
  });

  it("a reorganised head: the guard reads the authorization at the finalized block, so a seller that reverts the head and settles before validBefore gets no second payment (2× maxPerDay before)", async () => {
    const s = await seller({ maxTimeoutSeconds: 4, receipt: "none" });
    const { pay, ledgerPath } = guarded(policy({ maxPerPayment: "40000", maxPerDay: "40000" }));
    expect((await pay(s.url)).status).toBe(200);
    const fork = await chainRpc(chain.rpcUrl, "evm_snapshot", []);
    await advanceHead(6); // the head is past validBefore; the finalized block is not
    await expect(pay(s.url)).rejects.toThrow(/over maxPerDay 40000/);
    expect(states(ledgerPath)).toEqual([["signed", undefined]]);
    await chainRpc(chain.rpcUrl, "evm_revert", [fork]); // the head the guard could have read is replaced
    const [first] = s.held;
    expect((await s.settle(first as (typeof s.held)[number], { atChainTime: true })).settled).toBe(true);
    await advance(6);
    await expect(pay(s.url)).rejects.toThrow(/over maxPerDay 40000/);
    expect(states(ledgerPath)).toEqual([["settled", "used"]]);
    expect(s.held).toHaveLength(1);
    expect(await exposure(s)).toBe(40000n);
  });

  it("a policy RPC that answers for another chain (eth_chainId 84532) is not believed: what the seller settled on Base stays counted (2× maxPerDay before)", async () => {
    const otherChain = await startOtherChainRpc(chain.rpcUrl);
    sellers.push(otherChain);
    const { url: rpcUrl, asked } = otherChain;
    const s = await seller({ maxTimeoutSeconds: 2, receipt: "none" });
    const { pay, ledgerPath } = guarded(
      policy({ maxPerPayment: "40000", maxPerDay: "40000", rpc: { "eip155:8453": rpcUrl } }),
    );
    expect((await pay(s.url)).status).toBe(200);
    expect((await s.settle(s.held[0] as (typeof s.held)[number])).settled).toBe(true);
    await advance(3);
    await expect(pay(s.url)).rejects.toThrow(/over maxPerDay 40000/);
    expect(asked).toContain("eth_chainId");
    expect(states(ledgerPath)).toEqual([["signed", undefined]]);
    expect(s.held).toHaveLength(1);
    expect(await exposure(s)).toBe(40000n);
  });

  it("the cheapest entry the per-payee limit still allows is signed: a payee whose day is spent is passed over for another's dearer entry", async () => {
    const s = await seller({
      maxTimeoutSeconds: 60,
      receipt: "honest",
      offers: (quote) =>
        quote === 0
          ? [{ amount: "20000", payTo: PAYEE }]
          : [
              { amount: "15000", payTo: PAYEE2 },
              { amount: "10", payTo: PAYEE },
            ],
    });
    const { pay } = guarded(policy({ maxPerPayeePerDay: "20000" }));
    expect((await pay(s.url)).status).toBe(200);
    expect((await pay(s.url)).status).toBe(200);
    expect(s.held.map((a) => [a.value, a.to])).toEqual([
      ["20000", PAYEE],
      ["15000", PAYEE2],
    ]);
  });
});
