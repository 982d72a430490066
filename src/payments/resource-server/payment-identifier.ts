import type { PaymentPayload } from "@x402/core/types";
import {
  declarePaymentIdentifierExtension,
  extractAndValidatePaymentIdentifier,
  PAYMENT_IDENTIFIER,
} from "@x402/extensions/payment-identifier";
import type { PaymentRecord, Store } from "../../store/store.ts";
import { inProgress, type PaidRequest } from "./paid-request.ts";
import type { PaymentIdentity } from "./payment-identity.ts";

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

/** A claim this old whose payment never reached the ledger (its attempt stopped in between) frees its id. */
export const UNRECORDED_CLAIM_MS = 60_000;
/** How long a retry waits for the holder of its id to record its payment before "in progress, retry". */
const RECORD_WAIT_MS = 2_000;

/**
 * The ledger side of the extension: a payment-identifier (scoped to its payer) belongs to the first payment
 * that claims it, until that payment charges nothing (released, failed). A later payment under the same id
 * is a retry of that one: it gets that payment's outcome and is never reserved nor settled.
 */
export class PaymentIdentifiers {
  constructor(
    private readonly store: Store,
    private readonly now: () => number,
  ) {}

  /** The payment that holds the request's identifier, if another one does; undefined: this payment goes on. */
  async holder(request: PaidRequest, identity: PaymentIdentity): Promise<PaymentRecord | undefined> {
    if (request.paymentIdentifier === undefined) return undefined;
    const now = this.now();
    const holder = await this.store.claimPaymentIdentifier({
      key: `${identity.facts.payer}:${request.paymentIdentifier}`,
      paymentKey: identity.paymentKey,
      now,
      staleBefore: now - UNRECORDED_CLAIM_MS,
    });
    if (holder === identity.paymentKey) return undefined;
    // Claimed by an attempt about to record its payment (its next step): look again for a moment.
    const deadline = Date.now() + RECORD_WAIT_MS;
    for (;;) {
      const record = await this.store.getPayment(holder);
      if (record) return record;
      if (Date.now() >= deadline) throw inProgress(1);
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
  }
}
