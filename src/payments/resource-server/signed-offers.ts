import { encodePaymentRequiredHeader } from "@x402/core/http";
import type { PaymentRequired } from "@x402/core/types";
import { OFFER_RECEIPT } from "@x402/extensions/offer-receipt";
import type { Logger } from "pino";
import type { OfferReceipts } from "./offer-receipt.ts";
import { checkedPaymentRequiredHeader, type PaymentTerms } from "./terms.ts";

/**
 * The terms as a route's PAYMENT-REQUIRED header carries them: without the signed offers when they also
 * quote vouchers (see SignedOffers.keep), whole otherwise.
 */
export function headerPaymentRequired(terms: PaymentTerms): PaymentRequired {
  if (!terms.voucher || !terms.paymentRequired.extensions?.[OFFER_RECEIPT]) return terms.paymentRequired;
  const { [OFFER_RECEIPT]: _offers, ...extensions } = terms.paymentRequired.extensions;
  return { ...terms.paymentRequired, extensions };
}

/** How often the kept terms are looked at for offers past half their validity. */
const REFRESH_INTERVAL_MS = 5_000;

interface Kept {
  terms: PaymentTerms;
  name: string;
  /** Whether the terms travel in an HTTP header (the route's), bounded by MAX_PAYMENT_REQUIRED_BYTES. */
  inHeader: boolean;
  /** The terms as built, without offers: what every signing starts from. */
  unsigned: PaymentRequired;
  validitySeconds: number;
  /** Epoch ms after which the offers are signed again (half their validity). */
  renewAt: number;
}

/**
 * Keeps route and tool terms carrying signed offers (offer-receipt.ts) that are never stale: each set is
 * signed once, kept in the terms (`paymentRequired` and its encoded `header`), and signed again in the
 * background once half its validity has passed. A 402 is then as cheap as before: its terms are read,
 * never signed, per request. Validity is the route's maxTimeoutSeconds (what the official extension
 * takes): an offer stays valid at least half of it after any 402 that carries it.
 */
export class SignedOffers {
  private readonly kept = new Map<PaymentTerms, Kept>();
  private readonly first: Promise<void>[] = [];
  private timer: NodeJS.Timeout | undefined;

  constructor(
    private readonly signer: OfferReceipts,
    private readonly log: Logger,
    private readonly now: () => number = Date.now,
  ) {}

  /**
   * Keeps these terms signed from now on; resolves once their first offers are in place. Terms that travel
   * in a header (a route's; an MCP tool's travel in JSON) are refused when signed they outgrow its budget
   * (terms.ts), as an unsigned route's would be.
   *
   * Terms that also quote vouchers (a second `accepts` entry) carry their offers in the 402's body only,
   * not in its header: an offer is about 700 bytes, the batch-settlement entry about 470, and with both
   * entries signed every route's header came to 3,184–3,956 bytes, past the 3,100 that keep a 402's
   * headers within a proxy's 4 KB buffer (signing the exact entry alone left clinical-trials-query at 3,308 even without its dataset).
   * A paying client needs only the accepts in the header; a client that checks offers reads them from
   * the body (or the MCP result), where nothing bounds them. docs/payments.md, "Vouchers".
   */
  keep(terms: PaymentTerms, name: string, transport: "header" | "json" = "header"): Promise<void> {
    if (this.kept.has(terms)) return Promise.resolve();
    const entry: Kept = {
      terms,
      name,
      inHeader: transport === "header",
      unsigned: terms.paymentRequired,
      validitySeconds: Math.min(
        ...terms.paymentRequired.accepts.map((accepted) => accepted.maxTimeoutSeconds),
      ),
      renewAt: 0,
    };
    this.kept.set(terms, entry);
    const signed = this.sign(entry);
    this.first.push(signed);
    return signed;
  }

  /** Resolves once every set kept so far carries its first offers (rejects if one could not be signed). */
  async ready(): Promise<void> {
    await Promise.all(this.first);
  }

  start(): void {
    this.timer ??= setInterval(() => void this.renew(), REFRESH_INTERVAL_MS).unref();
  }

  stop(): void {
    clearInterval(this.timer);
    this.timer = undefined;
  }

  /** Signs again every kept set past half its validity. */
  async renew(): Promise<void> {
    const due = [...this.kept.values()].filter((entry) => this.now() >= entry.renewAt);
    await Promise.all(
      due.map((entry) =>
        this.sign(entry).catch((error) =>
          // The previous offers stay (still valid for half their time); the next look tries again.
          this.log.error(
            { err: error, resource: entry.unsigned.resource.url },
            "could not sign offers again",
          ),
        ),
      ),
    );
  }

  private async sign(entry: Kept): Promise<void> {
    const signedAt = this.now();
    const offers = await this.signer.offers(entry.unsigned, entry.validitySeconds);
    const paymentRequired: PaymentRequired = {
      ...entry.unsigned,
      extensions: { ...entry.unsigned.extensions, [OFFER_RECEIPT]: offers },
    };
    const header = entry.inHeader
      ? checkedPaymentRequiredHeader(
          entry.name,
          entry.terms.voucher ? entry.unsigned : paymentRequired,
          this.signer.key.baseUrl,
        )
      : encodePaymentRequiredHeader(paymentRequired);
    // Both in one synchronous step: a reader never sees one set's header with another's object.
    entry.terms.paymentRequired = paymentRequired;
    entry.terms.header = header;
    entry.renewAt = signedAt + (entry.validitySeconds * 1000) / 2;
  }
}
