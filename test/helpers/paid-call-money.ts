import type { Client } from "@modelcontextprotocol/sdk/client/index.js";
import {
  decodePaymentRequiredHeader,
  decodePaymentResponseHeader,
  encodePaymentSignatureHeader,
} from "@x402/core/http";
import type { PaymentPayload } from "@x402/core/types";
import { createPublicClient, http, parseAbi, parseAbiItem, parseEventLogs } from "viem";
import { BASE_USDC_ADDRESS } from "../../src/config.ts";
import type { PaymentRecord, Store } from "../../src/store/store.ts";
import { callTool, receiptOf, type ToolPayer, termsOf } from "../mcp/paying-mcp-client.ts";
import { jsonPost, retryLostAnswers } from "./service.ts";

/*
 * Paid calls as an honest client makes them, through either door, with every answer kept; then what
 * became of each call's money, read from the ledger and from the token itself, so that a test under load
 * or under faults says per call what happened to the money, failed or not.
 */

/** Where a paid operation is reached: its route, and (for calls through the MCP door) its tool on an MCP client. */
export interface PaidTarget {
  baseUrl: string;
  path: string;
  mcp?: { client: Client; tool: string };
}

export interface CallPlan {
  door: "http" | "mcp";
  payer: ToolPayer;
  args: Record<string, unknown>;
  /** A client that does not retry at once when told to, but comes back after the replay window. */
  late?: boolean;
}

/** One answer a call got: its result, "retry the same payment", a final refusal, or no answer at all. */
export interface Attempt {
  outcome: "delivered" | "retry" | "refused" | "no-answer";
  status?: number;
  /** The problem's type and detail, or the transport error. */
  detail: string;
  /** The settlement receipt's transaction, when delivered. */
  transaction?: string;
  result?: unknown;
}

export class PaidCallRecord {
  readonly attempts: Attempt[] = [];
  constructor(
    readonly plan: CallPlan,
    readonly payment: PaymentPayload,
  ) {}

  get authorization() {
    return (
      this.payment.payload as { authorization: { from: `0x${string}`; nonce: `0x${string}`; value: string } }
    ).authorization;
  }
  get paymentKey() {
    const { network, asset } = this.payment.accepted;
    return `${network}:${asset}:${this.authorization.from}:${this.authorization.nonce}`.toLowerCase();
  }
  delivered(): Attempt | undefined {
    return this.attempts.find((attempt) => attempt.outcome === "delivered");
  }
  last(): Attempt | undefined {
    return this.attempts.at(-1);
  }
  /** The last answer told the client to come back with the same payment (or it got no answer at all). */
  wasToldToRetry(): boolean {
    const outcome = this.last()?.outcome;
    return outcome === "retry" || outcome === "no-answer";
  }
}

function mcpOf(target: PaidTarget): NonNullable<PaidTarget["mcp"]> {
  if (!target.mcp) throw new Error(`a call through the MCP door needs an MCP client for ${target.path}`);
  return target.mcp;
}

const problemOf = (body: Record<string, unknown> | undefined) =>
  `${String(body?.type ?? "")
    .split("/")
    .pop()}: ${String(body?.detail ?? body?.error ?? "")}`;

/** Whether a problem tells the client to retry the same payment (503, or 409 "in progress"). */
const toldToRetry = (status: number | undefined, body: Record<string, unknown> | undefined) =>
  status === 503 || (status === 409 && String(body?.type ?? "").endsWith("payment-in-progress"));

async function attemptHttp(target: PaidTarget, plan: CallPlan, payment: PaymentPayload): Promise<Attempt> {
  const response = await fetch(
    target.baseUrl + target.path,
    jsonPost(plan.args, { "PAYMENT-SIGNATURE": encodePaymentSignatureHeader(payment) }),
  );
  const text = await response.text();
  const body = (() => {
    try {
      return JSON.parse(text) as Record<string, unknown>;
    } catch {
      return { detail: text.slice(0, 200) };
    }
  })();
  const receiptHeader = response.headers.get("PAYMENT-RESPONSE");
  const receipt = receiptHeader ? decodePaymentResponseHeader(receiptHeader) : undefined;
  if (response.status === 200 && receipt?.success) {
    return { outcome: "delivered", status: 200, detail: "", transaction: receipt.transaction, result: body };
  }
  return {
    outcome: toldToRetry(response.status, body) ? "retry" : "refused",
    status: response.status,
    detail: problemOf(body),
  };
}

async function attemptMcp(target: PaidTarget, plan: CallPlan, payment: PaymentPayload): Promise<Attempt> {
  const { client, tool } = mcpOf(target);
  const result = await callTool(client, tool, plan.args, payment);
  const receipt = receiptOf(result);
  if (!result.isError && receipt?.success) {
    return {
      outcome: "delivered",
      detail: "",
      transaction: receipt.transaction,
      result: result.structuredContent,
    };
  }
  const body = result.structuredContent;
  // A payment refused with the terms again is the x402 PaymentRequired (a 402), not a problem.
  const status = body?.x402Version === 2 ? 402 : (body?.status as number | undefined);
  return { outcome: toldToRetry(status, body) ? "retry" : "refused", status, detail: problemOf(body) };
}

/** How the calls of a test are made: sign, send once, and follow the service's "retry" as it says. */
export const payOnce = {
  /** Signs the terms the call's door answers an unpaid call with (asked again if the answer was lost: nothing is paid yet). */
  async sign(target: PaidTarget, plan: CallPlan): Promise<PaymentPayload> {
    const terms = () =>
      plan.door === "mcp"
        ? callTool(mcpOf(target).client, mcpOf(target).tool, plan.args).then(termsOf)
        : fetch(target.baseUrl + target.path, jsonPost(plan.args)).then((unpaid) =>
            decodePaymentRequiredHeader(unpaid.headers.get("PAYMENT-REQUIRED") as string),
          );
    return plan.payer.sign(await retryLostAnswers(terms));
  },

  async attempt(target: PaidTarget, record: PaidCallRecord): Promise<Attempt> {
    const { plan, payment } = record;
    const attempt = await (plan.door === "mcp" ? attemptMcp : attemptHttp)(target, plan, payment).catch(
      (error: unknown): Attempt => ({
        outcome: "no-answer",
        detail: `${String(error)}${(error as Error).cause ? ` (${String((error as Error).cause)})` : ""}`,
      }),
    );
    record.attempts.push(attempt);
    return attempt;
  },

  async firstAttempt(target: PaidTarget, plan: CallPlan, payment: PaymentPayload): Promise<PaidCallRecord> {
    const record = new PaidCallRecord(plan, payment);
    await payOnce.attempt(target, record);
    return record;
  },

  /**
   * Retries the same payment while the service says to (or gave no answer), as its answer promises ("retry
   * the same request with the same payment … charged at most once"), for up to `forMs`.
   */
  async followRetries(target: PaidTarget, record: PaidCallRecord, forMs = 60_000): Promise<void> {
    const deadline = Date.now() + forMs;
    while (record.wasToldToRetry() && Date.now() < deadline) {
      await new Promise((resolve) => setTimeout(resolve, 250));
      await payOnce.attempt(target, record);
    }
  },
};

const AUTHORIZATION = parseAbi(["function authorizationState(address, bytes32) view returns (bool)"]);
const AUTHORIZATION_USED = parseAbiItem(
  "event AuthorizationUsed(address indexed authorizer, bytes32 indexed nonce)",
);
const TRANSFER = parseAbi(["event Transfer(address indexed from, address indexed to, uint256 value)"]);

/** What became of one call's money, from the token (independently of the service's own checker) and the ledger. */
export interface CallMoney {
  record: PaidCallRecord;
  ledger: Pick<PaymentRecord, "state" | "txHash" | "error"> | undefined;
  /** The transaction that used the authorization, and whether it paid the price to payTo. */
  chain: { used: boolean; transaction?: string; paidPayTo: boolean };
  /** delivered ⇔ settled (ledger) ⇔ paid (token), the receipt naming that transaction; or neither, nothing charged. */
  verdict: "consistent" | "inconsistent";
  /** One line: the call, its answers, the ledger and the chain. */
  report: string;
}

export async function moneyOfCalls(
  rpcUrl: string,
  ledger: Store,
  payTo: string,
  records: PaidCallRecord[],
): Promise<CallMoney[]> {
  const chain = createPublicClient({ transport: http(rpcUrl) });
  const latest = await chain.getBlockNumber({ cacheTime: 0 });
  return Promise.all(
    records.map(async (record, index) => {
      const { from, nonce, value } = record.authorization;
      const used = await chain.readContract({
        address: BASE_USDC_ADDRESS,
        abi: AUTHORIZATION,
        functionName: "authorizationState",
        args: [from, nonce],
      });
      const [use] = used
        ? await chain.getLogs({
            address: BASE_USDC_ADDRESS,
            event: AUTHORIZATION_USED,
            args: { authorizer: from, nonce },
            fromBlock: 0n,
            toBlock: latest,
          })
        : [];
      const transaction = use?.transactionHash;
      const paidPayTo = transaction
        ? parseEventLogs({
            abi: TRANSFER,
            logs: (await chain.getTransactionReceipt({ hash: transaction })).logs,
            eventName: "Transfer",
          }).some(
            (log) =>
              log.args.from.toLowerCase() === from.toLowerCase() &&
              log.args.to.toLowerCase() === payTo.toLowerCase() &&
              log.args.value === BigInt(value),
          )
        : false;
      const row = await ledger.getPayment(record.paymentKey);
      const delivered = record.delivered();
      const consistent = delivered
        ? used &&
          paidPayTo &&
          row?.state === "settled" &&
          row.txHash === transaction &&
          delivered.transaction === transaction
        : !used && row?.state !== "settled";
      const answers = record.attempts
        .map((a) =>
          a.outcome === "delivered"
            ? `delivered(${a.transaction?.slice(0, 10)})`
            : `${a.outcome} ${a.status ?? ""} ${a.detail}`,
        )
        .join(" → ");
      const report =
        `call ${index} (${record.plan.door}${record.plan.late ? ", late" : ""}, payer ${from.slice(0, 8)}, nonce ` +
        `${nonce.slice(0, 10)}): ${answers} | ledger ${row ? `${row.state} tx ${row.txHash?.slice(0, 10) ?? "-"}${row.error ? ` (${row.error})` : ""}` : "no row"}` +
        ` | chain ${used ? `used by ${transaction?.slice(0, 10)}, ${paidPayTo ? "paid payTo" : "not to payTo"}` : "unused (nothing charged)"}`;
      return {
        record,
        ledger: row && { state: row.state, txHash: row.txHash, error: row.error },
        chain: { used, transaction, paidPayTo },
        verdict: consistent ? "consistent" : "inconsistent",
        report,
      } satisfies CallMoney;
    }),
  );
}

/** The calls whose payment the ledger has not decided yet (verified, or not recorded). */
export async function undecidedCalls(ledger: Store, records: PaidCallRecord[]): Promise<PaidCallRecord[]> {
  const rows = await Promise.all(records.map((record) => ledger.getPayment(record.paymentKey)));
  return records.filter((_, i) => rows[i]?.outcome == null);
}
