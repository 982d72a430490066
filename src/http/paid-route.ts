import { decodePaymentSignatureHeader } from "@x402/core/http";
import type { PaymentPayload } from "@x402/core/types";
import type { Context } from "hono";
import type { Logger } from "pino";
import type { AnyOperation, StartedOperation } from "../catalog/operation.ts";
import {
  DOWNLOAD_TOKEN_HEADER,
  PAYMENT_REQUIRED_HEADER,
  PAYMENT_SIGNATURE_HEADER,
  X_PAYMENT_HEADER,
} from "../payments/headers.ts";
import type { PaymentGate } from "../payments/resource-server/gate.ts";
import {
  asPaymentPayload,
  type GateOutcome,
  paidRequestOf,
} from "../payments/resource-server/paid-request.ts";
import type { PaymentTerms } from "../payments/resource-server/terms.ts";
import { Problem } from "../problem.ts";
import { fileResponse } from "../products/download.ts";
import type { StoredOutcome } from "../store/store.ts";
import { requestClient } from "./connection-limits.ts";
import { isBrowserNavigation, paywallPage } from "./paywall/paywall-page.ts";
import type { RequestVariables } from "./request-context.ts";
import { respond } from "./response-headers.ts";
import { decodeV1Payment, paymentRequiredBody, v1Answer } from "./x402-v1.ts";

/** How a paid call's payment is written: x402 v2 (PAYMENT-SIGNATURE) or v1 (X-PAYMENT, x402-v1.ts). */
interface Dialect {
  /** The door's name for the revenue metric. */
  door: string;
  decode(header: string, terms: PaymentTerms): PaymentPayload | { unreadable: string };
  /** The answer as this dialect's client reads it (the ledger keeps v2). */
  render(answer: StoredOutcome): StoredOutcome;
}

const V2: Dialect = { door: "http", decode: decodePayment, render: (answer) => answer };
const V1: Dialect = { door: "http-x402-v1", decode: decodeV1Payment, render: v1Answer };

/**
 * The HTTP door to the payment gate (x402 v2 over HTTP, and v1 for its clients: x402-v1.ts): reads the
 * payment, the download token and the client from the request, asks the gate, and writes its outcome as
 * status codes and headers in the dialect the payment came in.
 */
export function paidRoute(options: {
  gate: PaymentGate;
  operation: AnyOperation;
  terms: PaymentTerms;
  log: Logger;
  now: () => Date;
  /** The service settles on its local test chain (the paywall page warns people). */
  testChain: boolean;
  /** A product's answer to a call without payment: a signed-in buyer's download again, or its 402. */
  signIn?: (c: Context, handler: StartedOperation<unknown, unknown>) => Promise<Response>;
}): (
  c: Context<{ Variables: RequestVariables }>,
  input: unknown,
  handler: StartedOperation<unknown, unknown>,
) => Promise<Response> {
  const { gate, operation, terms, log, now, testChain, signIn } = options;
  // The 402 of a call without payment is the same bytes every time: encoded once, and again only when the
  // terms' signed offers are renewed (signed-offers.ts replaces their header). A person's browser opening a
  // paid GET (a download, the tender shortlist) gets a page to pay from instead, renewed with them.
  const pageOf = () =>
    operation.method === "GET" ? paywallPage(operation, terms, { testChain }) : undefined;
  let unpaid = unpaidAnswer(terms);
  let page = pageOf();
  return async (c, input, handler) => {
    if (unpaid.headers[PAYMENT_REQUIRED_HEADER] !== terms.header) {
      unpaid = unpaidAnswer(terms);
      page = pageOf();
    }
    const v2Header = c.req.header(PAYMENT_SIGNATURE_HEADER);
    const v1Header = v2Header ? undefined : c.req.header(X_PAYMENT_HEADER);
    const header = v2Header ?? v1Header;
    const dialect = v1Header ? V1 : V2;
    // A call without payment gets the terms at once, as the MCP door answers one: nothing of the request is
    // read for it and the gate is not asked (the 402 is hot). Work that cannot be taken now (an async
    // operation without a live worker) is refused before it.
    if (!header) {
      if (handler.admit) await handler.admit();
      if (page && isBrowserNavigation(c.req.raw)) {
        return respond(c, page.body, { status: page.status, headers: page.headers });
      }
      if (signIn) return signIn(c, handler);
      return respond(c, unpaid.body, { status: unpaid.status, headers: unpaid.headers });
    }
    const requestId = c.get("requestId");
    const requestLog = log.child({ requestId, operation: operation.id });
    const decoded = dialect.decode(header, terms);
    const request = paidRequestOf({
      operation,
      terms,
      input,
      decoded,
      handler,
      requestId,
      log: requestLog,
      now,
      door: dialect.door,
      downloadToken: c.req.header(DOWNLOAD_TOKEN_HEADER),
      client: requestClient(c),
    });
    const answer = dialect.render(httpAnswer(await gate.handle(request), operation.path, unpaid));
    // A download streams its file (honouring Range and HEAD), also when the outcome is replayed.
    if (answer.file) return fileResponse({ ...answer, file: answer.file }, c.req.raw);
    // Whatever a payment got is the payer's: a shared cache keyed by the URL of a paid GET (the tender
    // shortlist's query) must never hand it to the next request of that URL, which carries no payment.
    const headers = {
      ...answer.headers,
      "cache-control": answer.headers["cache-control"] ?? PAID_ANSWER_CACHING,
    };
    return respond(c, answer.body, { status: answer.status, headers });
  };
}

/** How an answer to a payment may be cached: by the payer's own client only, and not kept there either. */
const PAID_ANSWER_CACHING = "private, no-store";

function decodePayment(header: string): PaymentPayload | { unreadable: string } {
  try {
    return asPaymentPayload(decodePaymentSignatureHeader(header), PAYMENT_SIGNATURE_HEADER);
  } catch {
    return { unreadable: `${PAYMENT_SIGNATURE_HEADER} is not a base64-encoded x402 payment` };
  }
}

/** The gate's outcome as status, headers and body (`unpaid`: the route's 402, if encoded already). */
export function httpAnswer(outcome: GateOutcome, instance: string, unpaid?: StoredOutcome): StoredOutcome {
  switch (outcome.kind) {
    case "payment-required":
      return unpaid ?? unpaidAnswer(outcome.terms);
    case "answer":
      return outcome.replayed
        ? { ...outcome.answer, headers: { ...outcome.answer.headers, "x-payment-replayed": "true" } }
        : outcome.answer;
    case "refused":
      return outcome.problem.toResponse(instance);
    case "retry-later": {
      const answer = outcome.problem.toResponse(instance);
      return { ...answer, headers: { ...answer.headers, "retry-after": String(outcome.retryAfterSeconds) } };
    }
  }
}

/**
 * 402 for a call that carries no payment: the route's terms, as the v2 header and as a problem+json body
 * a v1 client can pay from (paymentRequiredBody).
 */
function unpaidAnswer(terms: PaymentTerms): StoredOutcome {
  const { amount, asset, network, payTo } = terms.requirements;
  const detail = `pay ${amount} atomic units of ${asset} on ${network} to ${payTo} with x402 v2 (send the ${PAYMENT_SIGNATURE_HEADER} header) or x402 v1 (the ${X_PAYMENT_HEADER} header)`;
  return {
    status: 402,
    headers: {
      "content-type": "application/problem+json",
      [PAYMENT_REQUIRED_HEADER]: terms.header,
      "cache-control": "no-store",
    },
    body: JSON.stringify({
      ...Problem.of("payment-required", detail).body(),
      ...paymentRequiredBody(terms.paymentRequired),
    }),
  };
}
