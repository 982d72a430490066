import type { PaymentPayload } from "@x402/core/types";
import {
  declarePaymentIdentifierExtension,
  extractAndValidatePaymentIdentifier,
  PAYMENT_IDENTIFIER,
} from "@x402/extensions/payment-identifier";

/**
 * The x402 `payment-identifier` extension (coinbase/x402 specs/extensions/payment_identifier.md): a
 * client-chosen id that makes a paid call idempotent across retries with new payments. Every route's 402
 * declares it, optional, in its compact form: `info` without the JSON Schema of the id (the official client
 * recognises the declaration by `info.required`; the schema would take 400 of the header's 2800 bytes). The
 * client echoes it with its `id` in the payment payload.
 */
export const paymentIdentifierDeclaration = () => ({
  [PAYMENT_IDENTIFIER]: { info: declarePaymentIdentifierExtension(false).info },
});

/**
 * The payment's idempotency key, none, or why the extension it carries is unreadable (a payment refused).
 * The id is checked against the format the server declared (16-128 of [A-Za-z0-9_-]); the JSON Schema the
 * client echoes is not compiled (the SDK would compile whatever schema a client sends, on every call).
 */
export function paymentIdentifierOf(payment: PaymentPayload): { id?: string } | { unreadable: string } {
  const echoed = payment.extensions?.[PAYMENT_IDENTIFIER];
  if (echoed === undefined) return {};
  const info =
    typeof echoed === "object" && echoed !== null ? (echoed as { info?: unknown }).info : undefined;
  const { id, validation } = extractAndValidatePaymentIdentifier({
    ...payment,
    extensions: { [PAYMENT_IDENTIFIER]: { info } },
  });
  if (!validation.valid) {
    return {
      unreadable: `the ${PAYMENT_IDENTIFIER} extension is malformed: ${validation.errors?.join("; ")}`,
    };
  }
  return id === null ? {} : { id };
}

/**
 * A door's decoded payment and its payment-identifier, as the gate's PaidRequest takes them: a malformed
 * extension makes the payment unreadable (refused with the reason, nothing charged).
 */
export function paymentWithIdentifier(decoded: PaymentPayload | { unreadable: string } | undefined): {
  payment: PaymentPayload | { unreadable: string } | undefined;
  paymentIdentifier?: string;
} {
  if (decoded === undefined || "unreadable" in decoded) return { payment: decoded };
  const identifier = paymentIdentifierOf(decoded);
  if ("unreadable" in identifier) return { payment: identifier };
  return { payment: decoded, paymentIdentifier: identifier.id };
}
