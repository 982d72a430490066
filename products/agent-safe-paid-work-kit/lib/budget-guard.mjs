// The budget guard acts where the money is committed: on the x402 client, at the moment it signs.
//
//   import { x402Client, wrapFetchWithPayment } from "@x402/fetch";
//   import { registerExactEvmScheme } from "@x402/evm/exact/client";
//   import { guardClient } from "agent-safe-paid-work-kit";
//   const client = guardClient(registerExactEvmScheme(new x402Client(), { signer }), { policy, ledgerPath });
//   const pay = wrapFetchWithPayment(fetch, client);
//
// guardClient registers three hooks on the x402Client (the object @x402/fetch, @x402/axios and
// the MCP clients share) and one on an x402HTTPClient when given one:
//   onBeforePaymentCreation  the requirement about to be signed is checked against the policy and
//                            the ledger, and its amount reserved in the ledger, under a lock file
//                            (one decision at a time across calls and processes); otherwise abort.
//   onAfterPaymentCreation   the signed authorization must be exactly what was reserved (amount,
//                            payee, validity); its nonce and validBefore are written ("signed")
//                            before the signature can leave; a mismatch throws, so it never leaves.
//   onPaymentCreationFailure the reservation is released.
//   onPaymentResponse        the seller's receipt: "settled" (with the transaction) or "failed".
// A signed payment without a receipt counts against the limits until its validBefore has passed.
import { randomUUID } from "node:crypto";
import { appendEntry, foldLedger, newlyExpired, readLedger } from "./ledger.mjs";
import { withLedgerLock } from "./lock.mjs";
import { checkPolicy, decide, paymentOf } from "./policy.mjs";

export class PaymentDenied extends Error {
  constructor(decision) {
    super(`payment refused by the spend policy: ${decision.reasons.join("; ")}`);
    this.decision = decision;
  }
}

const same = (a, b) => typeof a === "string" && typeof b === "string" && a.toLowerCase() === b.toLowerCase();

/** The signed terms of an x402 "exact" EVM payload (EIP-3009 or Permit2), or undefined. */
export function signedTerms(paymentPayload) {
  const payload = paymentPayload?.payload ?? {};
  const eip3009 = payload.authorization;
  if (eip3009?.nonce && eip3009.validBefore !== undefined) {
    return { kind: "eip3009", payer: eip3009.from, payTo: eip3009.to, amount: String(eip3009.value), nonce: eip3009.nonce, validBefore: String(eip3009.validBefore) };
  }
  const permit2 = payload.permit2Authorization;
  if (permit2?.nonce && permit2.deadline !== undefined) {
    return { kind: "permit2", payer: permit2.from, payTo: permit2.witness?.to, amount: String(permit2.permitted?.amount), nonce: String(permit2.nonce), validBefore: String(permit2.deadline) };
  }
  return undefined;
}

/**
 * Guards an x402Client (or an x402HTTPClient, whose requested URLs it then also sees) and returns
 * the same object. Options:
 *   policy               a spend policy (policy/spend-policy.schema.json), checked here
 *   ledgerPath           the JSONL ledger shared by every process that spends from the same budget
 *   approve(request)     async; resolve true to sign a payment above `approvalAbove` (default: refuse)
 *   maxValiditySeconds   refuse requirements whose maxTimeoutSeconds is longer (default 3600): a
 *                        signature valid for a year would count against the limits for a year
 *   onDecision(event)    called with { payment, decision, id? } for every decision (logging)
 *   now                  clock, for tests
 *   lock                 { timeoutMs, staleMs } of the ledger lock
 */
export function guardClient(client, { policy, ledgerPath, approve = async () => false, maxValiditySeconds = 3600, onDecision = () => {}, now = () => new Date(), lock = {} } = {}) {
  const problems = checkPolicy(policy);
  if (problems.length > 0) throw new Error(`invalid spend policy: ${problems.join("; ")}`);
  if (!ledgerPath) throw new Error("guardClient needs a ledgerPath");
  const core = typeof client?.onBeforePaymentCreation === "function" ? client : client?.client;
  if (typeof core?.onBeforePaymentCreation !== "function" || typeof core.onAfterPaymentCreation !== "function") {
    throw new Error("guardClient needs an x402Client (or x402HTTPClient) from @x402/core ≥ 2 with payment-creation hooks");
  }
  if (core.__budgetGuard) throw new Error("this client is already guarded");
  Object.defineProperty(core, "__budgetGuard", { value: true });

  // The URL actually requested, when the caller guards the x402HTTPClient it gives the transport.
  const requestedUrls = new WeakMap();
  if (core !== client && typeof client.onPaymentRequired === "function") {
    client.onPaymentRequired(async ({ paymentRequired, requestUrl }) => {
      requestedUrls.set(paymentRequired, requestUrl);
    });
  }
  // Reservations waiting for their signature, by the requirement object the client signs.
  const pending = new WeakMap();
  const byNonce = new Map();
  const ownErrors = new WeakSet();

  const record = (entry) => appendEntry(ledgerPath, { at: now().toISOString(), ...entry });

  /** Under the lock: expire what has passed, decide, and reserve when allowed (or approved). */
  const decideAndReserve = (payment, validitySeconds, approved) =>
    withLedgerLock(
      ledgerPath,
      () => {
        const at = now();
        const entries = readLedger(ledgerPath);
        for (const old of newlyExpired(foldLedger(entries), at)) {
          appendEntry(ledgerPath, { at: at.toISOString(), id: old.id, state: "expired", reason: old.state === "reserved" ? "reservation passed without a signature" : "validBefore passed without a receipt" });
        }
        const decision = decide(policy, payment, entries, at);
        if (decision.decision === "deny" || (decision.decision === "approve" && !approved)) return { decision };
        const id = randomUUID();
        // Margin: the signer reads its own clock when it sets validBefore = now + maxTimeoutSeconds.
        const expiresAt = new Date(at.getTime() + (validitySeconds + 60) * 1000).toISOString();
        appendEntry(ledgerPath, { at: at.toISOString(), id, state: "reserved", ...payment, expiresAt });
        return { decision, id, expiresAt };
      },
      lock,
    );

  core.onBeforePaymentCreation(async ({ paymentRequired, selectedRequirements }) => {
    const requirements = selectedRequirements;
    const url = requestedUrls.get(paymentRequired) ?? paymentRequired?.resource?.url ?? requirements.resource;
    const payment = paymentOf(requirements, url);
    const validitySeconds = Number(requirements.maxTimeoutSeconds ?? 0);
    const refuse = (decision) => {
      onDecision({ payment, decision });
      return { abort: true, reason: `spend policy: ${decision.reasons.join("; ")}` };
    };
    if (!Number.isFinite(validitySeconds) || validitySeconds <= 0 || validitySeconds > maxValiditySeconds) {
      return refuse({ decision: "deny", reasons: [`maxTimeoutSeconds ${requirements.maxTimeoutSeconds} is outside 1..${maxValiditySeconds}`] });
    }
    if (policy.hosts && !requestedUrls.has(paymentRequired)) {
      // The seller's own resource.url is its word, not the URL we called.
      return refuse({ decision: "deny", reasons: ["hosts: guard the x402HTTPClient given to the transport, so the requested URL is known"] });
    }
    let outcome = await decideAndReserve(payment, validitySeconds, false);
    if (outcome.decision.decision === "approve" && !outcome.id) {
      const yes = await approve({ ...payment, requirements, reasons: outcome.decision.reasons });
      if (!yes) return refuse({ decision: "deny", reasons: [...outcome.decision.reasons, "not approved"] });
      // Decided again: the ledger may have moved while a human was asked.
      outcome = await decideAndReserve(payment, validitySeconds, true);
    }
    if (!outcome.id) return refuse(outcome.decision);
    onDecision({ payment, decision: outcome.decision, id: outcome.id });
    const queue = pending.get(requirements) ?? [];
    queue.push({ id: outcome.id, payment, expiresAt: outcome.expiresAt });
    pending.set(requirements, queue);
    return undefined;
  });

  core.onAfterPaymentCreation(async ({ selectedRequirements, paymentPayload }) => {
    const reservation = pending.get(selectedRequirements)?.shift();
    if (!reservation) {
      const error = new Error("budget guard: a payment was signed without a reservation; it is not sent");
      ownErrors.add(error);
      throw error;
    }
    const signed = signedTerms(paymentPayload);
    const accepted = paymentPayload.accepted ?? selectedRequirements;
    const mismatch = !signed
      ? "the signed payload is not an EIP-3009 or Permit2 authorization the guard can read"
      : signed.amount !== reservation.payment.amount
        ? `signed amount ${signed.amount} ≠ reserved ${reservation.payment.amount}`
        : !same(signed.payTo, reservation.payment.payTo)
          ? `signed payee ${signed.payTo} ≠ reserved ${reservation.payment.payTo}`
          : Number(signed.validBefore) * 1000 > Date.parse(reservation.expiresAt)
            ? `validBefore ${signed.validBefore} is later than the reservation allows`
            : paymentOf(accepted).network !== reservation.payment.network || !same(accepted.asset, reservation.payment.asset)
              ? "the accepted network or asset differs from the one reserved"
              : undefined;
    if (mismatch) {
      record({ id: reservation.id, state: "released", reason: `not sent: ${mismatch}` });
      const error = new Error(`budget guard: ${mismatch}; the signature is not sent`);
      ownErrors.add(error);
      throw error;
    }
    // Written before createPaymentPayload returns, so before the signature can leave this process.
    record({ id: reservation.id, state: "signed", payer: signed.payer, nonce: signed.nonce, validBefore: signed.validBefore });
    byNonce.set(signed.nonce.toLowerCase(), reservation.id);
  });

  core.onPaymentCreationFailure?.(async ({ selectedRequirements, error }) => {
    if (ownErrors.has(error)) return undefined; // already recorded by the check above
    const reservation = pending.get(selectedRequirements)?.shift();
    if (reservation) record({ id: reservation.id, state: "released", reason: `signing failed: ${error?.message ?? error}` });
    return undefined;
  });

  core.onPaymentResponse?.(async ({ paymentPayload, settleResponse, paymentRequired }) => {
    const signed = signedTerms(paymentPayload);
    const id = signed && byNonce.get(signed.nonce.toLowerCase());
    if (!id) return undefined;
    if (settleResponse?.success && settleResponse.transaction) {
      record({ id, state: "settled", transaction: settleResponse.transaction });
      byNonce.delete(signed.nonce.toLowerCase());
    } else if (settleResponse || paymentRequired) {
      // The seller's word that nothing moved; the signature stays usable until validBefore, so it still counts.
      record({ id, state: "failed", reason: settleResponse?.errorReason ?? paymentRequired?.error ?? "refused after payment" });
    }
    // No receipt at all: the line stays "signed" and counts until validBefore.
    return undefined;
  });

  return client;
}

/**
 * Version 1 of this kit wrapped a paying fetch and checked a probe's 402 before it; the paying
 * fetch then signed whatever the next 402 asked. That cannot hold a limit, so it is gone.
 */
export function createBudgetGuard() {
  throw new Error(
    "createBudgetGuard was replaced by guardClient(client, { policy, ledgerPath }): guard the x402Client you give wrapFetchWithPayment (see README.md)",
  );
}
