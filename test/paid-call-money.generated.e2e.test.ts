import type { Client } from "@modelcontextprotocol/sdk/client/index.js";
import type { PaymentPayload } from "@x402/core/types";
import fc from "fast-check";
import pino from "pino";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { devAccounts, devPrivateKey } from "../src/chain/dev-accounts.ts";
import { type LocalChain, startLocalChain } from "../src/chain/local-chain.ts";
import { defineOperation } from "../src/contract/operation.ts";
import { jsonDiff } from "../src/operations/json-diff/index.ts";
import { REPLAY_WINDOW_MS } from "../src/payments/resource-server/replay-policy.ts";
import { Problem } from "../src/problem.ts";
import { openStore } from "../src/store/open-store.ts";
import type { Store } from "../src/store/store.ts";
import {
  type CallPlan,
  moneyOfCalls,
  type PaidCallRecord,
  payOnce,
  undecidedCalls,
} from "./helpers/paid-call-money.ts";
import { chainRpc } from "./helpers/payment-faults.ts";
import { freePort, startTestService, type TestService } from "./helpers/service.ts";
import { connectMcp, toolPayer } from "./mcp/paying-mcp-client.ts";

/**
 * Generated: batches of concurrent paid calls through both doors (HTTP and MCP), with faults injected
 * per call (a slow handler, a failing handler) and per batch (a settlement whose transaction is mined
 * only after the call gave up waiting for its receipt, so the call is answered "retry" and the payment
 * is decided later, by the recovery sweeper or by the retry). Each client then behaves as the service
 * tells it to: it retries the same payment when told to retry, promptly or only after the replay window.
 * Per call, from the ledger and the chain: the client received the result ⇔ the ledger says settled ⇔
 * the token says the authorization was used to pay; a call without its result was charged nothing.
 * Seed: FC_SEED to replay a run (printed).
 */

const SEED = Number(process.env.FC_SEED ?? Date.now() % 2 ** 31);
const SETTLEMENT_TIMEOUT_MS = 1500;

// json-diff, with the faults a call asks for in its input: a slow handler, or one whose upstream is down.
const faultyDiff = defineOperation({
  ...jsonDiff,
  id: "test-faulty-diff",
  path: "/v1/test-faulty-diff",
  handler: async (input, context) => {
    const fault = (input as { after: { fault?: { sleepMs?: number; fail?: boolean } } }).after.fault;
    if (fault?.sleepMs) await new Promise((resolve) => setTimeout(resolve, fault.sleepMs));
    if (fault?.fail)
      throw Problem.of("upstream-unavailable", "the injected fault: the upstream did not answer");
    return (jsonDiff.handler as NonNullable<typeof jsonDiff.handler>)(input, context);
  },
});

interface Batch {
  /** The batch's settlements are mined only after each call stopped waiting for its receipt. */
  minedLate: boolean;
  calls: {
    door: "http" | "mcp";
    sleepMs: number;
    fail: boolean;
    /** The client comes back only after the replay window (it crashed, or lost the answer). */
    late: boolean;
  }[];
}

const batch: fc.Arbitrary<Batch> = fc.record({
  minedLate: fc.boolean(),
  calls: fc.array(
    fc.record({
      door: fc.constantFrom("http" as const, "mcp" as const),
      sleepMs: fc.constantFrom(0, 0, 50, 400),
      fail: fc.constantFrom(false, false, false, true),
      late: fc.boolean(),
    }),
    { minLength: 1, maxLength: 6 },
  ),
});

describe("paid calls under faults, both doors: delivered ⇔ settled once; undelivered ⇒ nothing charged", () => {
  let chain: LocalChain;
  let service: TestService;
  let mcp: Client;
  let ledger: Store;
  let clockOffset = 0;
  const payers = Array.from({ length: 6 }, (_, i) => toolPayer(devPrivateKey(i + 2)));
  let round = 0;

  beforeAll(async () => {
    chain = await startLocalChain({ port: await freePort(), log: pino({ level: "silent" }) });
    service = await startTestService(
      {
        X402_SETTLER_PRIVATE_KEY: devPrivateKey(0),
        RPC_URL: chain.rpcUrl,
        X402_PAY_TO: devAccounts().payTo.address,
        X402_SETTLEMENT_TIMEOUT_MS: String(SETTLEMENT_TIMEOUT_MS),
      },
      { operations: [faultyDiff], clock: () => Date.now() + clockOffset },
    );
    mcp = await connectMcp(service.url);
    ledger = await openStore(service.config.database);
  });
  afterAll(async () => {
    if (chain) await chainRpc(chain.rpcUrl, "evm_setAutomine", [true]).catch(() => undefined);
    await mcp?.close();
    await ledger?.close();
    await service?.stop();
    await chain?.stop();
  });

  async function runBatch({ minedLate, calls }: Batch): Promise<void> {
    round++;
    const plans: CallPlan[] = calls.map((call, i) => ({
      ...call,
      payer: payers[(round + i) % payers.length] as (typeof payers)[number],
      args: {
        before: { round, call: i },
        after: { round, call: i, fault: { sleepMs: call.sleepMs, fail: call.fail } },
      },
    }));
    const target = { baseUrl: service.url, path: faultyDiff.path, mcp: { client: mcp, tool: faultyDiff.id } };
    // Every call is signed first, then all are sent at once.
    const signed = await Promise.all(plans.map((plan) => payOnce.sign(target, plan)));
    if (minedLate) await chainRpc(chain.rpcUrl, "evm_setAutomine", [false]);
    let records: PaidCallRecord[];
    try {
      records = await Promise.all(
        plans.map((plan, i) => payOnce.firstAttempt(target, plan, signed[i] as PaymentPayload)),
      );
    } finally {
      if (minedLate) {
        await chainRpc(chain.rpcUrl, "evm_mine");
        await chainRpc(chain.rpcUrl, "evm_setAutomine", [true]);
      }
    }
    // Prompt clients retry now, as told; late ones come back once the payment was decided without them
    // and the replay window has passed.
    await Promise.all(records.filter((r) => !r.plan.late).map((r) => payOnce.followRetries(target, r)));
    const late = records.filter((r) => r.plan.late && r.wasToldToRetry());
    if (late.length > 0) {
      await waitUntilDecided(late);
      clockOffset = REPLAY_WINDOW_MS + 1000;
      try {
        await Promise.all(late.map((r) => payOnce.followRetries(target, r)));
      } finally {
        clockOffset = 0;
      }
    }
    // Every call's money is read before anything is asserted: a failure lists each call that went wrong.
    const money = await moneyOfCalls(chain.rpcUrl, ledger, service.payTo, records);
    expect(money.filter((call) => call.verdict !== "consistent").map((call) => call.report)).toEqual([]);
  }

  /** The recovery sweeper decides a payment left open once its transfer landed (within a few seconds). */
  async function waitUntilDecided(records: PaidCallRecord[]): Promise<void> {
    const deadline = Date.now() + 60_000;
    while ((await undecidedCalls(ledger, records)).length > 0 && Date.now() < deadline) {
      await new Promise((resolve) => setTimeout(resolve, 200));
    }
  }

  it("per call: the result delivered ⇔ the ledger settled ⇔ the token paid; without the result nothing charged", async () => {
    console.log(`paid-call-money: FC_SEED=${SEED}`);
    await fc.assert(
      fc.asyncProperty(batch, (generated) => runBatch(generated)),
      { seed: SEED, numRuns: 8, endOnFailure: true },
    );
  }, 600_000);
});
