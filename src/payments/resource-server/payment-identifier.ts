import type { PaymentPayload } from "@x402/core/types";
import {
  declarePaymentIdentifierExtension,
  extractAndValidatePaymentIdentifier,
  PAYMENT_IDENTIFIER,
} from "@x402/extensions/payment-identifier";

/**
 * The x402 `payment-identifier` extension (coinbase/x402 specs/extensions/payment_identifier.md): a
 * client-chosen id that makes a paid call idempotent across retries with new payments. Every route's 402
 * declares it (optional), the client echoes the declaration with its `id` in the payment payload.
 */
export const paymentIdentifierDeclaration = () => ({
  [PAYMENT_IDENTIFIER]: declarePaymentIdentifierExtension(false),
});

/** The payment's idempotency key, none, or why the extension it carries is unreadable (a payment refused). */
export function paymentIdentifierOf(payment: PaymentPayload): { id?: string } | { unreadable: string } {
  const { id, validation } = extractAndValidatePaymentIdentifier(payment);
  if (!validation.valid) {
    return {
      unreadable: `the ${PAYMENT_IDENTIFIER} extension is malformed: ${validation.errors?.join("; ")}`,
    };
  }
  return id === null ? {} : { id };
}
