import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import type { PaymentPayload } from "@x402/core/types";
import { computeChannelId, signVoucher } from "@x402/evm/batch-settlement/client";
import pino from "pino";
import { privateKeyToAccount } from "viem/accounts";
import { afterAll, describe, expect, it } from "vitest";
import { httpAnswer } from "../../http/paid-route.ts";
import { x402HttpAnswers } from "../../http/x402-answers.ts";
import { unitConvert } from "../../operations/unit-convert/index.ts";
import { SqliteStore } from "../../store/sqlite/sqlite-store.ts";
import type { PaidRequest } from "../resource-server/paid-request.ts";
import { RetryLater } from "../resource-server/paid-request.ts";
import type { PaymentTerms } from "../resource-server/terms.ts";
import { VoucherGate } from "./voucher-gate.ts";
import { TEST_NETWORK, testChannelConfig, testVoucherQuote } from "./voucher-test-quote.ts";

/** The voucher path of the gate on a real SQLite ledger, its facilitator counted, vouchers signed by the official client code. */
const NETWORK = TEST_NETWORK;
const payer = privateKeyToAccount(`0x${"11".repeat(32)}`);
const quote = testVoucherQuote;
const config = testChannelConfig(payer);
const channelId = computeChannelId(config, NETWORK).toLowerCase();
const terms = {
  requirements: { ...quote, scheme: "exact" },
  voucher: quote,
  paymentRequired: { x402Version: 2, resource: { url: "http://x/v1/unit-convert" }, accepts: [quote] },
  header: "",
  discovery: {},
} as unknown as PaymentTerms;

const dir = fs.mkdtempSync(path.join(os.tmpdir(), "voucher-gate-"));
const store = new SqliteStore(path.join(dir, "ledger.db"));
afterAll(async () => {
  await store.close();
  fs.rmSync(dir, { recursive: true, force: true });
});

function setUp(now = Date.now) {
  const calls = { verify: 0, settle: 0, runs: 0 };
  const gate = new VoucherGate({
    facilitator: {
      verify: async () => {
        calls.verify++;
        return { isValid: true, payer: payer.address, extra: { balance: "30000", totalClaimed: "0" } };
      },
      settle: async () => {
        calls.settle++;
        throw new Error("no settlement expected");
      },
    },
    store: store.vouchers,
    answers: x402HttpAnswers,
    leaseMs: 60_000,
    now,
  });
  const request = async (
    max: string,
    input: unknown = { value: 1 },
  ): Promise<[PaidRequest, PaymentPayload]> => {
    const voucher = await signVoucher(payer, channelId as `0x${string}`, max, NETWORK);
    const payment = {
      x402Version: 2,
      accepted: quote,
      payload: { type: "voucher", channelConfig: config, voucher },
    } as unknown as PaymentPayload;
    const paid: PaidRequest = {
      operation: unitConvert,
      terms,
      input,
      payment,
      requestId: `r-${max}`,
      log: pino({ level: "silent" }),
      door: "http",
      run: async () => {
        calls.runs++;
        return { body: { ok: true } };
      },
    };
    return [paid, payment];
  };
  return { gate, calls, request };
}

describe("the gate's voucher path", () => {
  it("verifies a first voucher with the facilitator, checks the following ones locally, refuses one beyond the balance", async () => {
    const { gate, calls, request } = setUp();
    expect((await gate.handle(...(await request("10000")))).kind).toBe("answer");
    expect(calls).toEqual({ verify: 1, settle: 0, runs: 1 });
    expect((await gate.handle(...(await request("20000")))).kind).toBe("answer");
    expect((await gate.handle(...(await request("30000")))).kind).toBe("answer");
    expect(calls).toEqual({ verify: 1, settle: 0, runs: 3 });
    const beyond = await gate.handle(...(await request("40000")));
    expect(beyond.kind).toBe("refused");
    const answer = httpAnswer(beyond, unitConvert.path);
    expect(answer.status).toBe(402);
    expect(JSON.parse(answer.body).reason).toBe("invalid_batch_settlement_evm_cumulative_exceeds_balance");
    expect(calls.runs).toBe(3);
    expect((await store.vouchers.getChannel(channelId))?.chargedCumulativeAmount).toBe("30000");
  });

  it("answers a call on a channel another call holds with channel_busy: a 402 with Retry-After, nothing run", async () => {
    const { gate, calls, request } = setUp();
    const now = Date.now();
    const held = await store.vouchers.beginCall({
      channelId,
      network: NETWORK,
      config: { ...config, ...lower(config) },
      signedMaxClaimable: "40000",
      owner: "another instance",
      now,
      leaseUntil: now + 3_000,
    });
    expect(held.kind).toBe("begun");
    const error = await gate.handle(...(await request("40000"))).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(RetryLater);
    const answer = httpAnswer(
      {
        kind: "retry-later",
        problem: (error as RetryLater).problem,
        retryAfterSeconds: (error as RetryLater).retryAfterSeconds,
      },
      unitConvert.path,
    );
    expect(answer.status).toBe(402);
    expect(Number(answer.headers["retry-after"])).toBeGreaterThanOrEqual(1);
    expect(JSON.parse(answer.body).reason).toBe("invalid_batch_settlement_evm_channel_busy");
    expect(calls.runs).toBe(0);
    await store.vouchers.releaseCall(channelId, "another instance");
  });
});

const lower = (c: typeof config) =>
  Object.fromEntries(
    Object.entries(c).map(([key, value]) => [key, typeof value === "string" ? value.toLowerCase() : value]),
  );
