import { decodePaymentSignatureHeader, encodePaymentSignatureHeader } from "@x402/core/http";
import type { PaymentPayload, PaymentRequirements } from "@x402/core/types";
import { BASE_NETWORK, BASE_USDC_ADDRESS } from "../../src/config.ts";
import { httpAnswer } from "../../src/http/paid-route.ts";
import type { PaymentGate } from "../../src/payments/resource-server/gate.ts";
import type { PaidRequest } from "../../src/payments/resource-server/paid-request.ts";
import type { PaymentTerms } from "../../src/payments/resource-server/terms.ts";

/**
 * Terms and payments for tests of the payment gate's decisions with a stand-in resource server (nothing
 * checks a signature there); the end-to-end suites pay with the official clients on a real chain.
 */
export const STAND_IN_PAYER = "0x2222222222222222222222222222222222222222";

export const standInRequirements: PaymentRequirements = {
  scheme: "exact",
  network: BASE_NETWORK as `${string}:${string}`,
  asset: BASE_USDC_ADDRESS,
  amount: "2000000",
  payTo: "0x1111111111111111111111111111111111111111",
  maxTimeoutSeconds: 120,
  extra: { name: "USD Coin", version: "2" },
};

export const standInTerms = {
  requirements: standInRequirements,
  paymentRequired: {
    x402Version: 2,
    resource: { url: "http://x/v1/csv-cleanup" },
    accepts: [standInRequirements],
  },
  header: "terms",
} as unknown as PaymentTerms;

/** A well-formed exact payment of the stand-in terms with this nonce, valid for ten minutes. */
export function standInPayment(nonce: number): string {
  return encodePaymentSignatureHeader({
    x402Version: 2,
    accepted: standInRequirements,
    payload: {
      signature: `0x${"11".repeat(65)}`,
      authorization: {
        from: STAND_IN_PAYER,
        to: standInRequirements.payTo,
        value: standInRequirements.amount,
        validAfter: "0",
        validBefore: String(Math.floor(Date.now() / 1000) + 600),
        nonce: `0x${nonce.toString(16).padStart(64, "0")}`,
      },
    },
  } as PaymentPayload);
}

/** The ledger key of standInPayment(nonce). */
export const standInPaymentKey = (nonce: number) =>
  `${standInRequirements.network}:${standInRequirements.asset}:${STAND_IN_PAYER}:0x${nonce.toString(16).padStart(64, "0")}`.toLowerCase();

/** The gate's outcome for a request, as the HTTP door writes it (status, headers, body). */
export async function httpOutcome(gate: PaymentGate, request: PaidRequest) {
  return httpAnswer(await gate.handle(request), request.operation.path);
}

/** A payment header as the HTTP door gives it to the gate: decoded. */
export const decoded = (header: string) => decodePaymentSignatureHeader(header);
