import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import pino from "pino";
import { afterEach, describe, expect, it } from "vitest";
import { PayerCover } from "../src/payments/resource-server/payer-cover.ts";
import type { AuthorizationChecker } from "../src/payments/settler/authorization-state.ts";
import { SqliteStore } from "../src/store/sqlite/sqlite-store.ts";
import { httpOutcome } from "./helpers/gate-stand-ins.ts";
import {
  BRIEF_PRICE,
  briefPayment,
  briefRequirements,
  heldGate,
  ModelChain,
  payerAddress,
} from "./helpers/held-gate.ts";

/**
 * The cover watch when the chain misbehaves as real nodes do (red team of issue 33): a node refuses an
 * `eth_getLogs` (too many results for its cap, a range it does not serve), or the chain goes back (a
 * reorg, anvil's `evm_revert`) and a payer's transfer lands at a block number the watch read already.
 * Money is read from the model chain, never from what the service says.
 */

/** A chain whose nodes refuse every eth_getLogs, as one with a result cap does once a payer floods logs. */
class LogsRefusedChain extends ModelChain {
  override async sendersAmong(): Promise<Set<string>> {
    throw new Error("query returned more than 10000 results");
  }
}

const opened: { store: SqliteStore; dir: string; stop: () => void }[] = [];
afterEach(async () => {
  for (const { store, dir, stop } of opened.splice(0)) {
    stop();
    await store.close();
    fs.rmSync(dir, { recursive: true, force: true });
  }
});

function stand(chain: ModelChain, authorizations: AuthorizationChecker = chain.authorizations) {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "utility402-cover-faults-"));
  const store = new SqliteStore(path.join(dir, "store.sqlite"));
  const cover = new PayerCover({
    store,
    chain,
    network: briefRequirements.network,
    authorizations,
    log: pino({ level: "silent" }),
  });
  const { gate, brief } = heldGate({ store, chain, maxHeldPerPayer: 3, balances: cover });
  opened.push({ store, dir, stop: () => gate.leases.stop() });
  return { store, cover, gate, brief };
}

describe("the cover watch on a misbehaving chain", () => {
  it("a node refusing eth_getLogs: held admissions still answer, and a payer's transfer out still releases its job", async () => {
    const chain = new LogsRefusedChain();
    const { store, cover, gate, brief } = stand(chain);
    const [a, b] = [payerAddress(51), payerAddress(52)];
    chain.fund(a, BRIEF_PRICE);
    const first = await httpOutcome(gate, brief(briefPayment(a, 1)));
    expect(first.status).toBe(202);
    chain.fund(payerAddress(53), 1n); // a block the watch has not read yet
    chain.transfer(a, b, BRIEF_PRICE);
    const second = await httpOutcome(gate, brief(briefPayment(b, 1)));
    expect(second.status).toBe(202);
    const jobA = JSON.parse(first.body).jobId as string;
    expect((await store.jobs.get(jobA))?.error?.code).toBe("payment_unpayable");
    await cover.catchUp();
    expect(chain.balance(a)).toBe(0n);
  });

  it("the chain went back (evm_revert): a transfer at a block number already read is acted on", async () => {
    const chain = new ModelChain();
    const { store, cover, gate, brief } = stand(chain);
    const a = payerAddress(61);
    chain.fund(a, BRIEF_PRICE);
    const accepted = await httpOutcome(gate, brief(briefPayment(a, 1)));
    expect(accepted.status).toBe(202);
    const before = await chain.latestBlock();
    for (const n of [1, 2, 3]) chain.fund(payerAddress(70 + n), 1n);
    await cover.catchUp();
    chain.revertTo(before);
    // After the revert, the payer's USDC leaves at a block number the watch read before the revert.
    chain.transfer(a, undefined, BRIEF_PRICE);
    expect(await chain.latestBlock()).toBeLessThan(before + 3n);
    await cover.catchUp();
    const job = JSON.parse(accepted.body).jobId as string;
    expect(chain.balance(a)).toBe(0n);
    expect((await store.jobs.get(job))?.error?.code).toBe("payment_unpayable");
  });
});

describe("the cover watch against an admission in flight", () => {
  it("a transfer landing while an admission reserves (the watch looked between its balance read and its reservation) still releases the job", async () => {
    const chain = new ModelChain();
    const { store, cover, gate, brief } = stand(chain);
    const [a, b] = [payerAddress(81), payerAddress(82)];
    chain.fund(a, BRIEF_PRICE);
    await cover.catchUp();
    chain.duringBalanceRead = async (holder) => {
      chain.transfer(holder, b, BRIEF_PRICE);
      await cover.catchUp();
    };
    const first = await httpOutcome(gate, brief(briefPayment(a, 1)));
    expect(first.status).toBe(202);
    expect(chain.balance(a)).toBe(0n);
    const second = await httpOutcome(gate, brief(briefPayment(b, 1)));
    expect(second.status).toBe(202);
    chain.fund(payerAddress(83), 1n);
    await cover.catchUp();
    const jobA = JSON.parse(first.body).jobId as string;
    expect((await store.jobs.get(jobA))?.error?.code).toBe("payment_unpayable");
  });
});

describe("the cover watch when the token cannot say whether a settlement landed", () => {
  it("a ready job's settlement landed and authorizationState fails: the payer's other job, which it covers, is not released", async () => {
    const chain = new ModelChain();
    let tokenDown = false;
    const authorizations = chain.authorizations;
    const flaky = {
      check: async (query: Parameters<typeof authorizations.check>[0]) => {
        if (tokenDown) throw new Error("authorizationState: upstream timed out");
        return authorizations.check(query);
      },
    };
    const { store, cover, gate, brief } = stand(chain, flaky);
    const payer = payerAddress(91);
    chain.fund(payer, 2n * BRIEF_PRICE);
    const answers = [];
    for (const nonce of [1, 2]) answers.push(await httpOutcome(gate, brief(briefPayment(payer, nonce))));
    const [older, newer] = answers.map((answer) => JSON.parse(answer.body).jobId as string);
    await cover.catchUp();
    const claimed = await store.jobs.claim("worker", ["research-brief"], 60_000);
    expect(claimed?.id).toBe(older);
    expect(await store.jobs.complete(older as string, "worker", { brief: "done" })).toBe(true);
    const record = await store.getPayment(claimed?.paymentKey as string);
    tokenDown = true;
    expect(chain.settle(record?.held?.payload as never)).toBeDefined();
    await cover.catchUp();
    expect(chain.balance(payer)).toBe(BRIEF_PRICE);
    expect((await store.jobs.get(newer as string))?.state).toBe("queued");
    // The token answers again: the payer is looked at again and still covers its job.
    tokenDown = false;
    chain.fund(payerAddress(92), 1n);
    await cover.catchUp();
    expect((await store.jobs.get(newer as string))?.state).toBe("queued");
  });
});
