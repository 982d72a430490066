import { encodePaymentRequiredHeader } from "@x402/core/http";
import type { PaymentRequired } from "@x402/core/types";
import { Problem } from "../../problem.ts";
import type { ChannelRecord } from "../../store/voucher-channels.ts";
import { PAYMENT_REQUIRED_HEADER } from "../headers.ts";
import { headerPaymentRequired } from "../resource-server/signed-offers.ts";
import type { PaymentTerms } from "../resource-server/terms.ts";
import { BATCH_SETTLEMENT } from "./voucher-terms.ts";

const CUMULATIVE_AMOUNT_MISMATCH = "invalid_batch_settlement_evm_cumulative_amount_mismatch";

/**
 * The corrective 402: the client's voucher does not follow what this service charged (a lost state, an
 * old voucher). Its batch-settlement entry carries the channel as the service knows it (channelState)
 * and the latest voucher it holds (voucherState), from which the official client resumes.
 */
export function corrective(terms: PaymentTerms, channel: ChannelRecord): Problem {
  // Without the extensions (the Bazaar declaration, the identifier's): the client recovers from the
  // batch-settlement entry and pays again from the terms it first read, and with the channel and voucher
  // state the whole header would outgrow a proxy's 4 KB buffer (3,400 bytes at their largest).
  const { extensions: _extensions, ...base } = headerPaymentRequired(terms);
  const paymentRequired: PaymentRequired = {
    ...base,
    error: CUMULATIVE_AMOUNT_MISMATCH,
    accepts: base.accepts.map((entry) =>
      entry.scheme !== BATCH_SETTLEMENT
        ? entry
        : {
            ...entry,
            extra: {
              ...entry.extra,
              channelState: {
                channelId: channel.channelId,
                balance: channel.onchain?.balance ?? "0",
                totalClaimed: channel.onchain?.totalClaimed ?? "0",
                withdrawRequestedAt: channel.onchain?.withdrawRequestedAt ?? 0,
                refundNonce: channel.onchain?.refundNonce ?? "0",
                chargedCumulativeAmount: channel.chargedCumulativeAmount ?? "0",
              },
              ...(channel.signedMaxClaimable && channel.signature
                ? {
                    voucherState: {
                      signedMaxClaimable: channel.signedMaxClaimable,
                      signature: channel.signature,
                    },
                  }
                : {}),
            },
          },
    ),
  };
  return Problem.of(
    "payment-rejected",
    "the voucher's cumulative amount does not follow what this channel was charged; sign the next one from the channel state in PAYMENT-REQUIRED (nothing was charged)",
    {
      headers: {
        [PAYMENT_REQUIRED_HEADER]: encodePaymentRequiredHeader(paymentRequired),
        "cache-control": "no-store",
      },
      extensions: { reason: CUMULATIVE_AMOUNT_MISMATCH, ...paymentRequired },
    },
  );
}
