import { randomUUID } from "node:crypto";
import { encodePaymentSignatureHeader } from "@x402/core/http";
import type { x402ResourceServer } from "@x402/core/server";
import type { PaymentPayload, PaymentRequirements } from "@x402/core/types";
import pino from "pino";
import { BASE_NETWORK, BASE_USDC_ADDRESS } from "../../src/config.ts";
import { x402HttpAnswers } from "../../src/http/x402-answers.ts";
import { Metrics } from "../../src/metrics.ts";
import { researchBrief } from "../../src/operations/research-brief/index.ts";
import { PaymentGate } from "../../src/payments/resource-server/gate.ts";
import type { PaidRequest } from "../../src/payments/resource-server/paid-request.ts";
import type { PaymentTerms } from "../../src/payments/resource-server/terms.ts";
import type { AuthorizationChecker } from "../../src/payments/settler/authorization-state.ts";
import type { TokenBalances, TokenTransfers } from "../../src/payments/settler/token-balances.ts";
import type { Store } from "../../src/store/store.ts";
import { decoded } from "./gate-stand-ins.ts";

/**
 * A gate taking research-brief jobs on held payments, over a real store and a stand-in chain that keeps
 * balances and used nonces the way the token does (verification simulates the transfer; settlement moves
 * the amount once): for tests of the held admission without a chain node.
 */

export const BRIEF_PRICE = 5_000_000n;

export const briefRequirements: PaymentRequirements = {
  scheme: "exact",
  network: BASE_NETWORK as `${string}:${string}`,
  asset: BASE_USDC_ADDRESS,
  amount: BRIEF_PRICE.toString(),
  payTo: "0x1111111111111111111111111111111111111111",
  maxTimeoutSeconds: 1800,
  extra: { name: "USD Coin", version: "2" },
};

const briefTerms = {
  requirements: briefRequirements,
  paymentRequired: {
    x402Version: 2,
    resource: { url: "http://x/v1/research-brief" },
    accepts: [briefRequirements],
  },
  header: "terms",
} as unknown as PaymentTerms;

/** A payer's address from a small number (0x…01, 0x…02, …). */
export const payerAddress = (n: number) => `0x${n.toString(16).padStart(40, "0")}` as `0x${string}`;

/** A signed-looking brief payment of `payer` with this nonce, valid for the terms' 30 minutes from `nowMs`. */
export function briefPayment(payer: `0x${string}`, nonce: number, nowMs = Date.now()): string {
  return encodePaymentSignatureHeader({
    x402Version: 2,
    accepted: briefRequirements,
    payload: {
      signature: `0x${"11".repeat(65)}`,
      authorization: {
        from: payer,
        to: briefRequirements.payTo,
        value: briefRequirements.amount,
        validAfter: "0",
        validBefore: String(Math.floor(nowMs / 1000) + 1800),
        nonce: `0x${nonce.toString(16).padStart(64, "0")}`,
      },
    },
  } as PaymentPayload);
}

type Authorization = { from: string; value: string; nonce: string };
const authorizationOf = (payload: PaymentPayload) =>
  (payload.payload as { authorization: Authorization }).authorization;

/**
 * The token, as far as the held admission can tell: balances, used nonces, transfers that revert; every
 * change of a balance is a block, with a Transfer log from its sender, so a payer's balance can be read at
 * any block and its transfers out found by block range (what the payer-cover watch reads).
 */
export class ModelChain implements TokenTransfers {
  private readonly balances = new Map<string, bigint>();
  private readonly used = new Set<string>();
  /** Block n (1-based) moved `amount` from `from` (undefined: minted) to `to` (undefined: out of the model). */
  private readonly blocks: { from?: string; to?: string; amount: bigint }[] = [];
  private transactions = 0;

  balance(payer: string): bigint {
    return this.balances.get(payer.toLowerCase()) ?? 0n;
  }

  fund(payer: string, amount: bigint): void {
    this.move(undefined, payer, amount);
  }

  /** An ordinary transfer of the payer's own (capped to what it holds): to another payer, or away (no `to`). */
  transfer(from: string, to: string | undefined, amount: bigint): bigint {
    const moved = amount < this.balance(from) ? amount : this.balance(from);
    if (moved > 0n) this.move(from, to, moved);
    return moved;
  }

  private move(from: string | undefined, to: string | undefined, amount: bigint): void {
    const [sender, receiver] = [from?.toLowerCase(), to?.toLowerCase()];
    if (sender) this.balances.set(sender, this.balance(sender) - amount);
    if (receiver) this.balances.set(receiver, this.balance(receiver) + amount);
    this.blocks.push({ ...(sender ? { from: sender } : {}), ...(receiver ? { to: receiver } : {}), amount });
  }

  /** evm_revert: the blocks after `block` are gone (their transfers undone); later transfers reuse their numbers. */
  revertTo(block: bigint): void {
    this.blocks.length = Number(block);
    this.balances.clear();
    for (const moved of this.blocks) {
      if (moved.from) this.balances.set(moved.from, this.balance(moved.from) - moved.amount);
      if (moved.to) this.balances.set(moved.to, this.balance(moved.to) + moved.amount);
    }
  }

  async latestBlock(): Promise<bigint> {
    return BigInt(this.blocks.length);
  }

  /**
   * Run once, at the next balance read at a block (an admission's, through the cover watch), after the
   * balance was read: what lands on the chain between an admission's read and its reservation.
   */
  duringBalanceRead?: (holder: `0x${string}`) => Promise<void>;

  /** Balance reads at a block: each comes after the cover watch caught up (an admission's or a look's). */
  balanceReadsAtBlock = 0;

  async balanceOf(_asset: `0x${string}`, holder: `0x${string}`, block?: bigint): Promise<bigint> {
    const who = holder.toLowerCase();
    if (block !== undefined) this.balanceReadsAtBlock++;
    let balance = 0n;
    for (const moved of this.blocks.slice(0, block === undefined ? undefined : Number(block))) {
      if (moved.to === who) balance += moved.amount;
      if (moved.from === who) balance -= moved.amount;
    }
    const during = this.duringBalanceRead;
    if (during && block !== undefined) {
      this.duringBalanceRead = undefined;
      await during(holder);
    }
    return balance;
  }

  async sendersAmong(
    _asset: `0x${string}`,
    holders: readonly `0x${string}`[],
    fromBlock: bigint,
    toBlock: bigint,
  ): Promise<Set<string>> {
    const wanted = new Set(holders.map((holder) => holder.toLowerCase()));
    const senders = new Set<string>();
    for (const moved of this.blocks.slice(Number(fromBlock) - 1, Number(toBlock))) {
      if (moved.from && wanted.has(moved.from)) senders.add(moved.from);
    }
    return senders;
  }

  /** The token's authorizationState, as the settler's checker reads it. */
  readonly authorizations: AuthorizationChecker = {
    check: async ({ payer, nonce }) =>
      this.isUsed(payer, nonce) ? { state: "consumed" } : { state: "unused" },
  };

  /** authorizationState: whether the payer's nonce was used. */
  isUsed(payer: string, nonce: string): boolean {
    return this.used.has(`${payer.toLowerCase()}:${nonce}`);
  }

  /** Whether transferWithAuthorization would succeed now. */
  wouldPay(payload: PaymentPayload): boolean {
    const { from, value, nonce } = authorizationOf(payload);
    return !this.used.has(`${from.toLowerCase()}:${nonce}`) && this.balance(from) >= BigInt(value);
  }

  /** transferWithAuthorization: moves the amount once, or reverts. */
  settle(payload: PaymentPayload): `0x${string}` | undefined {
    if (!this.wouldPay(payload)) return undefined;
    const { from, value, nonce } = authorizationOf(payload);
    this.used.add(`${from.toLowerCase()}:${nonce}`);
    this.move(from, briefRequirements.payTo, BigInt(value));
    return `0x${(++this.transactions).toString(16).padStart(64, "0")}`;
  }

  resourceServer(): x402ResourceServer {
    // Yields like a facilitator call does, so concurrent admissions interleave at verification.
    const yieldNow = () => new Promise((resolve) => setImmediate(resolve));
    return {
      initialize: async () => {},
      findMatchingRequirements: () => briefRequirements,
      verifyPayment: async (payload: PaymentPayload) => {
        await yieldNow();
        return this.wouldPay(payload)
          ? { isValid: true, payer: authorizationOf(payload).from }
          : {
              isValid: false,
              invalidReason: "insufficient_funds",
              invalidMessage: "the transfer would revert",
            };
      },
      settlePayment: async (payload: PaymentPayload) => {
        await yieldNow();
        const transaction = this.settle(payload);
        return transaction
          ? { success: true, transaction, network: briefRequirements.network }
          : { success: false, errorReason: "invalid_exact_evm_transaction_failed", transaction: "" };
      },
    } as unknown as x402ResourceServer;
  }
}

/** A gate over `store` taking research-brief jobs on held payments, as the service wires it. */
export function heldGate(options: {
  store: Store;
  chain: ModelChain;
  maxHeldPerPayer: number;
  now?: () => number;
  /** What admissions read balances through (a PayerCover, as the service wires it); by default the chain now. */
  balances?: TokenBalances;
}) {
  const { store, chain } = options;
  const gate = new PaymentGate({
    answers: x402HttpAnswers,
    resourceServer: chain.resourceServer(),
    store,
    metrics: new Metrics(),
    settlementTimeoutMs: 1000,
    maxHeldPerPayer: options.maxHeldPerPayer,
    balances: options.balances ?? { balanceOf: async (_asset, holder) => chain.balance(holder) },
    ...(options.now ? { now: options.now } : {}),
  });
  const brief = (header: string): PaidRequest => ({
    operation: researchBrief,
    terms: briefTerms,
    input: { question: "why is the sky blue?" },
    payment: decoded(header),
    requestId: randomUUID(),
    door: "http",
    log: pino({ level: "silent" }),
    // As research-brief's handle(): a resumed payment's job is the one already recorded.
    run: async ({ paymentKey }) => {
      const job =
        (await store.jobs.getByPayment(paymentKey)) ??
        (await store.jobs.create({
          id: randomUUID(),
          type: "research-brief",
          input: {},
          paymentKey,
          maxAttempts: 3,
        }));
      return { status: 202, body: { jobId: job.id } };
    },
    onFinal: async (paymentKey, state) => {
      const job = await store.jobs.getByPayment(paymentKey);
      if (!job) return;
      if (state === "held") await store.jobs.markPaid(job.id);
      else await store.jobs.drop(job.id);
    },
  });
  return { gate, brief };
}
