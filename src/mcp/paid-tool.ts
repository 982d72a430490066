import { randomUUID } from "node:crypto";
import type { CallToolResult } from "@modelcontextprotocol/sdk/types.js";
import type { PaymentRequired } from "@x402/core/types";
import type { Logger } from "pino";
import type { AnyOperation, StartedOperation } from "../catalog/operation.ts";
import { httpAnswer } from "../http/paid-route.ts";
import type { PaymentGate } from "../payments/resource-server/gate.ts";
import { asPaymentPayload, paidRequestOf } from "../payments/resource-server/paid-request.ts";
import type { PaymentTerms } from "../payments/resource-server/terms.ts";
import { Problem } from "../problem.ts";
import { isStoreOutage } from "../store/outage.ts";
import { readToolInput } from "./tool-input.ts";
import { PAYMENT_META_KEY, paymentRequiredResult, problemResult, storedResult } from "./tool-results.ts";

/** What a tool call carries: its arguments (absent when the client sent none) and its `_meta`. */
export interface ToolCall {
  arguments?: Record<string, unknown>;
  _meta?: Record<string, unknown>;
}

/**
 * The MCP door to the payment gate (the x402 MCP transport), the HTTP door's sibling
 * (src/http/paid-route.ts): reads the tool's arguments and the payment in `_meta["x402/payment"]`, asks
 * the same gate, and renders its outcome as a tool result. The gate decides everything about money
 * (ledger, replay, 409, nothing charged on failure, recovery); a kept answer is read back with
 * tool-results.ts whichever door made it.
 */
export function paidTool(options: {
  gate: PaymentGate;
  operation: AnyOperation;
  /** The tool's terms (tool-terms.ts): the route's, under the resource mcp://tool/<id>. */
  terms: PaymentTerms;
  /** The operation as started; absent: not available on this service (never asks for payment). */
  handler: StartedOperation<unknown, unknown> | undefined;
  log: Logger;
  now: () => Date;
}): (call: ToolCall) => Promise<CallToolResult> {
  const { gate, operation, terms, handler, log, now } = options;
  const instance = terms.paymentRequired.resource.url;
  const { amount, asset, network, payTo } = terms.requirements;
  // The answer to a call without payment: built once, and again only when the terms' signed offers are
  // renewed (signed-offers.ts replaces their paymentRequired).
  const unpaidFor = (paymentRequired: PaymentRequired) => ({
    paymentRequired,
    result: paymentRequiredResult(
      { ...paymentRequired, error: "payment required" },
      `pay ${amount} atomic units of ${asset} on ${network} to ${payTo} with x402 v2: call the tool again with the PaymentPayload in params._meta["${PAYMENT_META_KEY}"]`,
    ),
  });
  let built = unpaidFor(terms.paymentRequired);
  const unpaid = () => {
    if (built.paymentRequired !== terms.paymentRequired) built = unpaidFor(terms.paymentRequired);
    return built.result;
  };
  return async (call) => {
    const presented = call._meta?.[PAYMENT_META_KEY];
    try {
      if (!handler) {
        throw Problem.of(
          "not-implemented",
          `${operation.id} is not available on this service yet; no payment is asked for`,
        );
      }
      // Arguments that are present are checked first (invalid ones are a tool error before any payment);
      // an unpaid call without any is a probe for the price, as a route's call without a body.
      const input =
        presented === undefined && call.arguments === undefined
          ? undefined
          : await readToolInput(operation, call.arguments ?? {});
      // Work that cannot be taken now (an async operation without a live worker) is refused before the terms.
      if (presented === undefined) {
        await handler.admit?.();
        return unpaid();
      }
      const requestId = randomUUID();
      const requestLog = log.child({ requestId, operation: operation.id, door: "mcp" });
      const decoded = asPaymentPayload(presented, `_meta["${PAYMENT_META_KEY}"]`);
      const request = paidRequestOf({
        operation,
        terms,
        input,
        decoded,
        handler,
        requestId,
        log: requestLog,
        now,
        door: "mcp",
      });
      const outcome = await gate.handle(request);
      if (outcome.kind === "payment-required") return unpaid();
      return storedResult(httpAnswer(outcome, instance), outcome.kind === "answer" && outcome.replayed);
    } catch (error) {
      if (error instanceof Problem) return storedResult(error.toResponse(instance), false);
      if (isStoreOutage(error)) {
        log.warn({ err: error, operation: operation.id }, "the store cannot be reached");
        const unavailable = Problem.of(
          "store-unavailable",
          "the service's database cannot be reached right now; nothing was charged; retry shortly",
        );
        return problemResult(unavailable.body(instance), 5);
      }
      log.error({ err: error, operation: operation.id }, "tool call failed unexpectedly");
      const failed = Problem.of("internal-error", "the tool call failed unexpectedly; nothing was charged");
      return problemResult(failed.body(instance));
    }
  };
}

/** The payment in `_meta`: the PaymentPayload object itself (the gate checks its shape and terms). */
