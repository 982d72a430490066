import type { FacilitatorClient } from "@x402/core/server";
import type { VoucherSettings } from "../../config.ts";
import { BATCH_SETTLEMENT, type VoucherOffer } from "./voucher-terms.ts";

/**
 * Whether the terms offer vouchers (x402 `batch-settlement`) and with which channel parameters. Offered
 * only when they are switched on and the facilitator that would verify and settle them — the in-process
 * one in local and self modes, the remote one in facilitator mode — lists `batch-settlement` on this
 * network in its /supported: a quote no facilitator can verify would be a payment the service refuses.
 * The terms are built once at start; a facilitator that cannot be asked then leaves `exact` only.
 */
export async function resolveVoucherOffer(options: {
  vouchers: VoucherSettings;
  network: string;
  facilitator: Pick<FacilitatorClient, "getSupported">;
  /** The settler's account (local and self modes): the receiver authorizer unless one is configured. */
  settlerAddress?: `0x${string}`;
  timeoutMs: number;
  /** Whether the chain can be read (RPC_URL, or the local chain): the claimer and the withdrawal watch need it. */
  chainReadable: boolean;
}): Promise<{ offer?: VoucherOffer; why: string }> {
  const { vouchers } = options;
  if (!vouchers.enabled) return { why: "vouchers off (X402_VOUCHERS)" };
  if (!options.chainReadable) {
    // Vouchers answered and never claimed would be given away: without chain reads nothing claims them.
    return { why: "vouchers need RPC_URL (the claimer and the withdrawal watch read the chain): exact only" };
  }
  let supported: Awaited<ReturnType<FacilitatorClient["getSupported"]>>;
  try {
    supported = await Promise.race([
      options.facilitator.getSupported(),
      new Promise<never>((_, reject) =>
        setTimeout(
          () => reject(new Error(`no answer within ${options.timeoutMs} ms`)),
          options.timeoutMs,
        ).unref(),
      ),
    ]);
  } catch (error) {
    return {
      why: `the facilitator's /supported could not be read (${(error as Error).message}): exact only`,
    };
  }
  const kind = supported.kinds.find(
    (k) => k.x402Version === 2 && k.scheme === BATCH_SETTLEMENT && k.network === options.network,
  );
  if (!kind)
    return { why: `the facilitator does not list ${BATCH_SETTLEMENT} on ${options.network}: exact only` };
  const declared = kind.extra?.receiverAuthorizer;
  const receiverAuthorizer =
    vouchers.receiverAuthorizer ??
    options.settlerAddress ??
    (typeof declared === "string" && /^0x[0-9a-fA-F]{40}$/.test(declared)
      ? (declared as `0x${string}`)
      : undefined);
  if (!receiverAuthorizer) {
    return {
      why: "no receiver authorizer (set X402_VOUCHER_RECEIVER_AUTHORIZER, or use a facilitator that declares one)",
    };
  }
  return {
    offer: {
      receiverAuthorizer,
      withdrawDelay: vouchers.withdrawDelaySeconds,
      minDeposit: vouchers.minDeposit,
    },
    why: `${BATCH_SETTLEMENT} offered beside exact`,
  };
}
