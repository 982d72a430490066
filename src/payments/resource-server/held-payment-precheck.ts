import type { Logger } from "pino";
import type { Job } from "../../jobs/queue.ts";
import type { Store } from "../../store/store.ts";
import type { AuthorizationChecker } from "../settler/authorization-state.ts";
import type { TokenBalances } from "../settler/token-balances.ts";

export interface HeldPaymentPrecheckOptions {
  store: Store;
  /** The token's record of each authorization: used elsewhere or cancelled means it can never settle here. */
  authorizations: AuthorizationChecker;
  /** The payers' balances; absent: only the authorization is checked. */
  balances?: TokenBalances;
  log: Logger;
}

/**
 * Checked before a worker runs a job: why its held payment can no longer settle (its authorization was
 * used elsewhere or cancelled, or the payer's balance no longer covers it), or undefined when it still
 * can. A job that could never be paid is not run (issue 33: two wallets passing the same funds between
 * them). The chain unreachable: undefined, since settlement verifies again and charges nothing unpayable.
 */
export async function whyHeldPaymentUnpayable(
  options: HeldPaymentPrecheckOptions,
  job: Job,
): Promise<string | undefined> {
  if (!job.paymentKey) return undefined;
  const record = await options.store.getPayment(job.paymentKey);
  if (record?.state !== "held" || !record.held) return undefined;
  const { requirements } = record.held;
  const asset = requirements.asset as `0x${string}`;
  const payer = record.payer as `0x${string}`;
  try {
    const onChain = await options.authorizations.check({
      asset,
      payer,
      nonce: record.nonce as `0x${string}`,
      payTo: requirements.payTo as `0x${string}`,
      amount: BigInt(requirements.amount),
    });
    if (onChain.state === "consumed")
      return "the payment authorization was cancelled or spent on another transfer";
    if (onChain.state === "paid" || !options.balances) return undefined;
    const balance = await options.balances.balanceOf(asset, payer);
    return balance < BigInt(requirements.amount)
      ? "the payer's balance no longer covers the payment"
      : undefined;
  } catch (error) {
    options.log.warn(
      { err: error, paymentKey: record.paymentKey },
      "cannot check a job's payment before it runs",
    );
    return undefined;
  }
}
