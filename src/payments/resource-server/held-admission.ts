import { atomicToUsd } from "../../contract/price.ts";
import { Problem } from "../../problem.ts";
import type { HeldRefusal, NewPayment, Reservation } from "../../store/store.ts";
import type { KindServices } from "./kind-services.ts";
import { type PaidRequest, paymentsUnavailable, RetryLater } from "./paid-request.ts";
import type { PaymentIdentity } from "./payment-identity.ts";

/** How long a payer at its cap is told to wait: about one job. */
const CAP_RETRY_AFTER_SECONDS = 30;

/**
 * Reserves a held payment only if its payer can pay for it: verification cannot reserve the payer's
 * balance, so a payer with funds for one job could otherwise start many (issue 33: 9 of 12 accepted,
 * 8 never payable). Under the store's per-payer serialisation the payer's unfinished payments (verified:
 * in flight, held: accepted jobs) are counted against the cap, and the balance read now must cover every
 * unfinished authorization of the payer plus this one. Refused: 429 at the cap, 402 naming the
 * shortfall; nothing is charged either way.
 */
export async function reserveHeld(
  payment: NewPayment,
  identity: PaymentIdentity,
  request: PaidRequest,
  services: KindServices,
): Promise<Reservation> {
  const balance = await payerBalance(identity, request, services);
  const reservation = await services.store.reservePayment(payment, {
    maxOutstanding: services.maxHeldPerPayer,
    ...(balance === undefined ? {} : { balance: balance.toString() }),
  });
  if ("refused" in reservation) throw refusal(reservation.refused, payment, balance, request, services);
  return reservation;
}

/** balanceOf, read once per admission; undefined without chain access (such a service takes no job). */
async function payerBalance(
  identity: PaymentIdentity,
  request: PaidRequest,
  { balances }: KindServices,
): Promise<bigint | undefined> {
  if (!balances) return undefined;
  try {
    return await balances.balanceOf(
      identity.requirements.asset as `0x${string}`,
      identity.authorization.from as `0x${string}`,
    );
  } catch (error) {
    request.log.warn({ err: error }, "cannot read the payer's balance");
    throw paymentsUnavailable(
      "the chain could not be reached to read the payer's balance; nothing was charged",
    );
  }
}

function refusal(
  refused: HeldRefusal,
  payment: NewPayment,
  balance: bigint | undefined,
  request: PaidRequest,
  { settlement, maxHeldPerPayer }: KindServices,
): Problem | RetryLater {
  if (refused.why === "cap") {
    return new RetryLater(
      Problem.of(
        "too-many-held-payments",
        `${refused.outstanding} jobs of this payer are accepted or being accepted on payments held until they deliver (at most ${maxHeldPerPayer}); retry when one has finished; nothing was charged`,
      ),
      CAP_RETRY_AFTER_SECONDS,
    );
  }
  const usd = (atomic: bigint | string) => `${atomicToUsd(BigInt(atomic))} USDC`;
  return settlement.rejected(
    request,
    "insufficient_funds",
    `the payer's balance (${usd(balance ?? 0n)}) does not cover its ${refused.outstanding} unfinished payment(s) held or in progress here (${usd(refused.outstandingAmount)}) plus this one (${usd(payment.amount)}): short by ${usd(refused.shortfall ?? "0")}; nothing was charged`,
  );
}
