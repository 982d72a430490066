import type { PaymentRecord, Store } from "../../store/store.ts";
import { inProgress, type PaidRequest } from "./paid-request.ts";
import type { PaymentIdentity } from "./payment-identity.ts";

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
