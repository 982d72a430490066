// A budget guard around any fetch that pays x402 402s (for example @x402/fetch's wrapFetchWithPayment):
// it asks the policy BEFORE the paying fetch runs and records every settled receipt in the ledger.
import fs from "node:fs";
import { decide, termsFrom402 } from "./policy.mjs";
import { appendEntry, readLedger } from "./ledger.mjs";

export class PaymentDenied extends Error {
  constructor(decision) {
    super(`payment refused by the spend policy: ${decision.reasons.join("; ")}`);
    this.decision = decision;
  }
}

/**
 * guardedFetch(url, init): probes the resource without paying; when it answers 402, checks the
 * terms against the policy and today's ledger; only then lets `payingFetch` pay. A settled
 * receipt (PAYMENT-RESPONSE) is appended to the ledger. `approve(terms)` is asked for payments
 * above `approvalAbove` (resolve true to pay).
 */
export function createBudgetGuard({ policy, ledgerPath, payingFetch, plainFetch = fetch, approve = async () => false, now = () => new Date() }) {
  return async function guardedFetch(url, init = {}) {
    const probe = await plainFetch(url, init);
    if (probe.status !== 402) return probe;
    const body = await probe.json().catch(() => undefined);
    const terms = termsFrom402(probe.headers.get("payment-required"), body);
    const payment = { network: terms.network, asset: terms.asset, amount: terms.amount, payTo: terms.payTo, url: String(url) };
    const decision = decide(policy, payment, fs.existsSync(ledgerPath) ? readLedger(ledgerPath) : [], now());
    if (decision.decision === "deny" || (decision.decision === "approve" && !(await approve(terms)))) throw new PaymentDenied(decision);
    const response = await payingFetch(url, init);
    const receipt = response.headers.get("payment-response");
    if (receipt) {
      const settled = JSON.parse(Buffer.from(receipt, "base64").toString("utf8"));
      appendEntry(ledgerPath, {
        at: now().toISOString(),
        url: String(url),
        network: payment.network,
        asset: payment.asset,
        amount: payment.amount,
        payTo: payment.payTo,
        transaction: settled.transaction ?? null,
        state: settled.success ? "settled" : "failed",
        status: response.status,
      });
    }
    return response;
  };
}
