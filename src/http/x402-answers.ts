import { encodePaymentRequiredHeader, encodePaymentResponseHeader } from "@x402/core/http";
import type { SettleResponse } from "@x402/core/types";
import {
  DOWNLOAD_TOKEN_HEADER,
  PAYMENT_REQUIRED_HEADER,
  PAYMENT_RESPONSE_HEADER,
} from "../payments/headers.ts";
import type { KeptAnswers } from "../payments/resource-server/paid-request.ts";
import { headerPaymentRequired } from "../payments/resource-server/signed-offers.ts";
import type { PaymentTerms } from "../payments/resource-server/terms.ts";
import { Problem } from "../problem.ts";
import type { StoredOutcome } from "../store/store.ts";
import { paymentRequiredBody } from "./x402-v1.ts";

/**
 * x402 v2 over HTTP, as the ledger keeps answers: a refused payment is a 402 whose PAYMENT-REQUIRED
 * header repeats the terms with the reason (and whose body a v1 client reads, x402-v1.ts); a settled answer carries its receipt in PAYMENT-RESPONSE;
 * a sold download's token is its x-download-token header.
 */
export const x402HttpAnswers: KeptAnswers = {
  rejection(terms: PaymentTerms, reason: string, message: string): Problem {
    const paymentRequired = { ...terms.paymentRequired, error: `${reason}: ${message}` };
    const inHeader = { ...headerPaymentRequired(terms), error: paymentRequired.error };
    return Problem.of("payment-rejected", message, {
      headers: {
        [PAYMENT_REQUIRED_HEADER]: encodePaymentRequiredHeader(inHeader),
        "cache-control": "no-store",
      },
      extensions: { reason, ...paymentRequiredBody(paymentRequired) },
    });
  },
  withReceipt: (answer: StoredOutcome, settlement: SettleResponse): StoredOutcome => ({
    ...answer,
    headers: { ...answer.headers, [PAYMENT_RESPONSE_HEADER]: encodePaymentResponseHeader(settlement) },
  }),
  downloadToken: (answer: StoredOutcome) => answer.headers[DOWNLOAD_TOKEN_HEADER],
  downloadTokenName: `the ${DOWNLOAD_TOKEN_HEADER} header`,
};
