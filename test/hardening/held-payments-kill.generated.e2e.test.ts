import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import fc from "fast-check";
import pino from "pino";
import { createPublicClient, http, keccak256, parseAbi, toHex } from "viem";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { devAccounts, devPrivateKey } from "../../src/chain/dev-accounts.ts";
import { fundLocalAccounts, type LocalChain, startLocalChain } from "../../src/chain/local-chain.ts";
import { createPayer, type Payer } from "../../src/client/paying-fetch.ts";
import { BASE_USDC_ADDRESS } from "../../src/config.ts";
import { PostgresStore } from "../../src/store/postgres/postgres-store.ts";
import { SqliteStore } from "../../src/store/sqlite/sqlite-store.ts";
import type { Store } from "../../src/store/store.ts";
import { paymentKeyOf } from "../helpers/payment-faults.ts";
import { createTestDatabase, testDatabaseUrl } from "../helpers/postgres.ts";
import { type Spawned, spawnUtility402, until, waitFor } from "../helpers/processes.ts";
import { freePort, jsonPost } from "../helpers/service.ts";
import { type SourceStandIns, startSourceStandIns } from "../operations/research-sources-standins.ts";

/**
 * Issue 33, generated: random interleavings of held research payments' admissions (floods of one payer's
 * briefs), verifications (replays of accepted payments), releases (briefs whose upstream is down fail),
 * settlements (briefs delivered), fundings, upstream stalls, and kill -9 of the service process (a real
 * child process on the local chain, restarted on the same ledger, no client retry). After every step,
 * read from the chain (balanceOf, authorizationState) and the ledger, never from what the service says:
 *
 * - no payer has more accepted, unsettled held payments than the cap or than its balance covers;
 * - no job runs (or waits to settle) without a payment that can still settle;
 * - a payment used on chain is settled or about to be (held, verified), never released or failed; a
 *   released, refused or failed one is unused; every balance is its funding less the used payments.
 *
 * Once the run is over and the service has recovered: every payment was settled once with its brief
 * (a succeeded job) or never used, and payTo received exactly the settled amounts.
 * Seed: FC_SEED replays a run (printed); FC_NUM_RUNS runs more (2 by default: about a minute a store, as each
 * run ends by waiting for every payment to be final, and each kill for a restart).
 */

const PRICE = 5_000_000n;
const CAP = 2;
const QUESTION = "What is the Python programming language used for in ecological research?";
const SEED = Number(process.env.FC_SEED ?? Date.now() % 2 ** 31);
const TOKEN = parseAbi([
  "function balanceOf(address) view returns (uint256)",
  "function authorizationState(address authorizer, bytes32 nonce) view returns (bool)",
]);

type Step =
  | { kind: "flood"; payer: number; count: number }
  | { kind: "fund"; payer: number; briefs: number }
  | { kind: "replay"; pick: number }
  | { kind: "stall" | "answer" | "outage" }
  | { kind: "kill"; afterMs: number };

const step: fc.Arbitrary<Step> = fc.oneof(
  {
    weight: 4,
    arbitrary: fc.record({
      kind: fc.constant("flood" as const),
      payer: fc.nat(1),
      count: fc.integer({ min: 1, max: 6 }),
    }),
  },
  {
    weight: 2,
    arbitrary: fc.record({
      kind: fc.constant("fund" as const),
      payer: fc.nat(1),
      briefs: fc.integer({ min: 1, max: 3 }),
    }),
  },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant("replay" as const), pick: fc.nat() }) },
  {
    weight: 3,
    arbitrary: fc.record({ kind: fc.constantFrom("stall" as const, "answer" as const, "outage" as const) }),
  },
  {
    weight: 2,
    arbitrary: fc.record({ kind: fc.constant("kill" as const), afterMs: fc.integer({ min: 0, max: 1500 }) }),
  },
);

interface Ledger {
  env: Record<string, string>;
  open(): Promise<Store>;
  dispose(): Promise<void>;
}

const databaseUrl = testDatabaseUrl();
const ledgers: { name: string; create?: (dataDir: string) => Promise<Ledger> }[] = [
  {
    name: "SQLite",
    create: async (dataDir) => {
      const file = path.join(dataDir, "ledger.db");
      return {
        env: { DATABASE_URL: `sqlite:${file}` },
        open: async () => new SqliteStore(file),
        dispose: async () => {},
      };
    },
  },
  {
    name: "PostgreSQL",
    create: databaseUrl
      ? async () => {
          const database = await createTestDatabase("held_kill");
          return {
            env: { DATABASE_URL: database.url },
            open: () => PostgresStore.open({ connectionString: database.url, poolSize: 2 }),
            dispose: () => database.dispose(),
          };
        }
      : undefined,
  },
];

for (const { name, create } of ledgers) {
  describe.skipIf(!create)(`held payments under kill -9, generated: ${name}`, () => {
    let chain: LocalChain;
    let sources: SourceStandIns;
    let ledger: Ledger;
    let dataDir: string;
    let env: Record<string, string>;
    let service: Spawned | undefined;
    let base: string;
    let store: Store | undefined;
    const kills = { count: 0, steps: 0, runs: 0 };

    const start = async () => {
      service = spawnUtility402(["serve"], env);
      await waitFor(`${base}/readyz`, service.child, service.output, 120_000);
    };

    beforeAll(async () => {
      chain = await startLocalChain({ port: await freePort(), log: pino({ level: "silent" }) });
      sources = await startSourceStandIns();
      dataDir = fs.mkdtempSync(path.join(os.tmpdir(), "utility402-held-kill-"));
      ledger = await (create as NonNullable<typeof create>)(dataDir);
      const port = await freePort();
      base = `http://127.0.0.1:${port}`;
      env = {
        ...ledger.env,
        PORT: String(port),
        DATA_DIR: dataDir,
        LOG_LEVEL: "warn",
        PAYMENT_MODE: "self",
        X402_SETTLER_PRIVATE_KEY: devPrivateKey(0),
        RPC_URL: chain.rpcUrl,
        X402_PAY_TO: devAccounts().payTo.address,
        RESEARCH_WIKIPEDIA_URL: sources.wikipediaUrl,
        RESEARCH_CROSSREF_URL: sources.crossrefUrl,
        JOB_MAX_HELD_PER_PAYER: String(CAP),
        WORKER_CONCURRENCY: "2",
        // Short, so a killed service's running jobs are taken again soon after the restart; long enough
        // that a busy machine's timers keep a live worker's lease.
        JOB_LEASE_SECONDS: "5",
      };
      await start();
      store = await ledger.open();
    }, 180_000);
    afterAll(async () => {
      console.log(
        `held payments under kill -9 (${name}): fast-check seed ${SEED} (FC_SEED=${SEED} replays it); ` +
          `${kills.runs} runs, ${kills.steps} steps, ${kills.count} kills`,
      );
      await store?.close().catch(() => undefined);
      await service?.stop(2000);
      await sources?.stop();
      await chain?.stop();
      await ledger?.dispose().catch(() => undefined);
      if (dataDir) fs.rmSync(dataDir, { recursive: true, force: true });
    });

    const client = () => createPublicClient({ transport: http(chain.rpcUrl) });
    const balanceOf = (address: `0x${string}`, blockNumber?: bigint) =>
      client().readContract({
        address: BASE_USDC_ADDRESS,
        abi: TOKEN,
        functionName: "balanceOf",
        args: [address],
        ...(blockNumber === undefined ? {} : { blockNumber }),
      });
    const used = (payer: `0x${string}`, nonce: `0x${string}`, blockNumber?: bigint) =>
      client().readContract({
        address: BASE_USDC_ADDRESS,
        abi: TOKEN,
        functionName: "authorizationState",
        args: [payer, nonce],
        ...(blockNumber === undefined ? {} : { blockNumber }),
      });

    async function runScenario(steps: Step[], run: number): Promise<void> {
      kills.runs++;
      const url = `${base}/v1/research-brief`;
      const request = { question: QUESTION, requiredSources: 2, maxWords: 200 };
      // Fresh payers for each run, derived from the seed so that a replay signs the same way.
      const payers: Payer[] = [0, 1].map((i) =>
        createPayer(keccak256(toHex(`held-kill:${SEED}:${run}:${i}`))),
      );
      const funded = payers.map(() => 0n);
      const startBalances = await Promise.all(payers.map((payer) => balanceOf(payer.address)));
      const payTo = devAccounts().payTo.address as `0x${string}`;
      const payToBefore = await balanceOf(payTo);
      /** Every payment sent: its header, ledger key, payer and nonce; the job its 202 named, if accepted. */
      const sent: {
        payment: Record<string, string>;
        key: string;
        payer: number;
        nonce: `0x${string}`;
        jobId?: string;
      }[] = [];
      let release: (() => void) | undefined;

      const check = async (label: string) => {
        const ledgerStore = store as Store;
        // The chain at one block, then the ledger: a payment used by that block is never shown unsettled
        // and unfinished as if it were still owed, and the balance matches the nonces used at that block.
        const block = await client().getBlockNumber();
        for (const [index, payer] of payers.entries()) {
          const balance = await balanceOf(payer.address, block);
          const mine = sent.filter((p) => p.payer === index);
          const onChain = await Promise.all(mine.map((p) => used(payer.address, p.nonce, block)));
          const records = await Promise.all(mine.map((p) => ledgerStore.getPayment(p.key)));
          const jobs = await Promise.all(mine.map((p) => ledgerStore.jobs.getByPayment(p.key)));
          let outstanding = 0;
          let owed = 0n;
          for (const [i, record] of records.entries()) {
            const what = `${label}: payment ${i} of payer ${index} (${record?.state ?? "no record"}, used ${onChain[i]}, job ${jobs[i]?.state ?? "none"})`;
            const unfinished = record?.state === "verified" || record?.state === "held";
            if (unfinished && !onChain[i]) {
              outstanding++;
              owed += BigInt(record.amount);
            }
            // Settled after the block read: used by the latest block, then.
            if (record?.state === "settled" && !onChain[i]) {
              expect(await used(payer.address, mine[i]?.nonce as `0x${string}`), what).toBe(true);
            }
            if (onChain[i]) expect(["verified", "held", "settled"], what).toContain(record?.state);
            const job = jobs[i];
            if (job && ["running", "ready", "succeeded"].includes(job.state)) {
              // A job that runs, waits to settle or delivered has a payment that can still settle or did.
              expect(["held", "settled"], what).toContain(record?.state);
            }
            if (job?.state === "succeeded") expect(record?.state, what).toBe("settled");
          }
          expect(outstanding, `${label}: unsettled held payments of payer ${index}`).toBeLessThanOrEqual(CAP);
          expect(
            owed,
            `${label}: what payer ${index} owes on held payments vs its balance`,
          ).toBeLessThanOrEqual(balance);
          const spent = BigInt(onChain.filter(Boolean).length) * PRICE;
          expect(balance, `${label}: balance of payer ${index}`).toBe(
            (startBalances[index] as bigint) + (funded[index] as bigint) - spent,
          );
        }
      };

      const alive = () =>
        service !== undefined && service.child.exitCode === null && service.child.signalCode === null;
      try {
        for (const [index, current] of steps.entries()) {
          const label = `run ${run} step ${index} ${JSON.stringify(current)}`;
          kills.steps++;
          switch (current.kind) {
            case "fund": {
              const payer = payers[current.payer] as Payer;
              await fundLocalAccounts(chain.rpcUrl, [
                { address: payer.address, usdc: BigInt(current.briefs) * PRICE },
              ]);
              funded[current.payer] = (funded[current.payer] as bigint) + BigInt(current.briefs) * PRICE;
              break;
            }
            case "flood": {
              const payer = payers[current.payer] as Payer;
              const terms = await fetch(url, jsonPost(request));
              expect(terms.status, label).toBe(402);
              const batch: (typeof sent)[number][] = [];
              for (let i = 0; i < current.count; i++) {
                const payment = await payer.signPayment(terms.clone());
                const key = paymentKeyOf(payment);
                batch.push({
                  payment,
                  key,
                  payer: current.payer,
                  nonce: key.split(":").at(-1) as `0x${string}`,
                });
              }
              sent.push(...batch);
              await Promise.all(
                batch.map(async (entry) => {
                  const response = await fetch(url, jsonPost(request, entry.payment));
                  const body = await response.json();
                  if (response.status === 202) entry.jobId = body.jobId;
                  else expect([402, 429], `${label}: ${JSON.stringify(body)}`).toContain(response.status);
                }),
              );
              break;
            }
            case "replay": {
              const accepted = sent.filter((p) => p.jobId !== undefined);
              const entry = accepted[current.pick % Math.max(1, accepted.length)];
              if (!entry) break;
              const held = (await (store as Store).getPayment(entry.key))?.state === "held";
              const response = await fetch(url, jsonPost(request, entry.payment));
              const body = await response.json();
              // Never a second charge and never a new job: the same job while held, else its outcome or a 409.
              if (held && response.status === 202) expect(body.jobId, label).toBe(entry.jobId);
              expect([200, 202, 409, 503], `${label}: ${JSON.stringify(body)}`).toContain(response.status);
              break;
            }
            case "stall":
              if (!release) release = sources.hold();
              break;
            case "answer":
              sources.outage = false;
              release?.();
              release = undefined;
              break;
            case "outage":
              sources.outage = true;
              release?.();
              release = undefined;
              break;
            case "kill": {
              if (current.afterMs > 0) await new Promise((resolve) => setTimeout(resolve, current.afterMs));
              kills.count++;
              const dying = service as Spawned;
              dying.child.kill("SIGKILL");
              await dying.stop(0);
              await check(`${label} (dead)`);
              await start();
              break;
            }
          }
          expect(alive(), `${label}: the service is up`).toBe(true);
          await check(label);
        }

        // The end: upstream answers again; every accepted job finishes and every payment is final.
        sources.outage = false;
        release?.();
        release = undefined;
        const ledgerStore = store as Store;
        await until(
          "every payment of the run to be final",
          async () => {
            for (const entry of sent) {
              const record = await ledgerStore.getPayment(entry.key);
              if (record?.state === "verified" || record?.state === "held") return undefined;
              const job = await ledgerStore.jobs.getByPayment(entry.key);
              if (job && job.state !== "succeeded" && job.state !== "failed") return undefined;
            }
            return true;
          },
          120_000,
        );
        await check(`run ${run} end`);
        let settled = 0n;
        for (const entry of sent) {
          const payer = payers[entry.payer] as Payer;
          const record = await ledgerStore.getPayment(entry.key);
          const job = await ledgerStore.jobs.getByPayment(entry.key);
          const onChain = await used(payer.address, entry.nonce);
          const what = `run ${run} end: ${entry.key} (${record?.state ?? "no record"}, job ${job?.state ?? "none"})`;
          // Settled once with its brief, or never used.
          expect(onChain, what).toBe(record?.state === "settled");
          expect(job?.state === "succeeded", what).toBe(record?.state === "settled");
          if (record?.state === "settled") {
            settled += BigInt(record.amount);
            const shown = await (await fetch(`${base}/v1/jobs/${job?.id}`)).json();
            expect(shown.result?.sources?.length, what).toBeGreaterThanOrEqual(1);
          }
        }
        expect(await balanceOf(payTo), `run ${run}: what payTo received`).toBe(payToBefore + settled);
      } finally {
        sources.outage = false;
        release?.();
      }
    }

    it("every payment is settled once with its brief or never used; no payer's held jobs exceed its balance", async () => {
      let run = 0;
      await fc.assert(
        fc.asyncProperty(fc.array(step, { minLength: 3, maxLength: 10 }), (steps) =>
          runScenario(steps, run++),
        ),
        { seed: SEED, numRuns: Number(process.env.FC_NUM_RUNS ?? 2), endOnFailure: true },
      );
    }, 600_000);
  });
}
