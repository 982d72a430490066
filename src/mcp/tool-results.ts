import type { CallToolResult } from "@modelcontextprotocol/sdk/types.js";
import { decodePaymentRequiredHeader, decodePaymentResponseHeader } from "@x402/core/http";
import type { PaymentRequired } from "@x402/core/types";
import { PAYMENT_REQUIRED_HEADER, PAYMENT_RESPONSE_HEADER } from "../payments/headers.ts";
import type { StoredOutcome } from "../store/store.ts";

/*
 * Answers as MCP tool results, in the x402 MCP transport's shapes (coinbase/x402
 * specs/transports-v2/mcp.md). The ledger keeps answers in their HTTP form (status, headers, body: see
 * src/http/x402-answers.ts), whichever door made them; this reads them back for a tool.
 */

/** Where the x402 MCP transport puts the client's payment (request) and the settlement receipt (result). */
export const PAYMENT_META_KEY = "x402/payment";
export const PAYMENT_RESPONSE_META_KEY = "x402/payment-response";
/** Set on a result another attempt with the same payment produced (HTTP's `x-payment-replayed`). */
export const REPLAYED_META_KEY = "utility402/replayed";

const text = (value: unknown) => [{ type: "text" as const, text: JSON.stringify(value) }];

/**
 * Payment required or rejected: `structuredContent` is the PaymentRequired (with its `error`), and
 * `content[0].text` the `x402/error` wrapper around it, for clients that read text only.
 */
export function paymentRequiredResult(
  paymentRequired: PaymentRequired,
  message: string,
  receipt?: unknown,
): CallToolResult {
  const data =
    receipt === undefined ? paymentRequired : { ...paymentRequired, [PAYMENT_RESPONSE_META_KEY]: receipt };
  return {
    isError: true,
    structuredContent: data as unknown as Record<string, unknown>,
    content: text({ "x402/error": { code: 402, message, data } }),
  };
}

/** An RFC 9457 problem (invalid input with its JSON Pointers, 409, 503 …) as a tool error, nothing charged. */
export function problemResult(problem: Record<string, unknown>, retryAfterSeconds?: number): CallToolResult {
  const structured = retryAfterSeconds === undefined ? problem : { ...problem, retryAfterSeconds };
  return { isError: true, structuredContent: structured, content: text(structured) };
}

/** A kept answer (made through any door) as a tool result: the result with its receipt, or the error. */
export function storedResult(answer: StoredOutcome, replayed: boolean): CallToolResult {
  const receiptHeader = answer.headers[PAYMENT_RESPONSE_HEADER];
  const receipt = receiptHeader ? decodePaymentResponseHeader(receiptHeader) : undefined;
  if (answer.status < 400) {
    const meta = {
      ...(receipt ? { [PAYMENT_RESPONSE_META_KEY]: receipt } : {}),
      ...(replayed ? { [REPLAYED_META_KEY]: true } : {}),
    };
    return {
      structuredContent: JSON.parse(answer.body) as Record<string, unknown>,
      content: [{ type: "text", text: answer.body }],
      ...(Object.keys(meta).length > 0 ? { _meta: meta } : {}),
    };
  }
  const problem = JSON.parse(answer.body) as Record<string, unknown>;
  const termsHeader = answer.headers[PAYMENT_REQUIRED_HEADER];
  if (answer.status === 402 && termsHeader) {
    return paymentRequiredResult(decodePaymentRequiredHeader(termsHeader), String(problem.detail), receipt);
  }
  const retryAfter = answer.headers["retry-after"];
  return problemResult(problem, retryAfter === undefined ? undefined : Number(retryAfter));
}
