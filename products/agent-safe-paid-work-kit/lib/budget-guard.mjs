// The budget guard acts where the money is committed: on the x402 client, at the moment it signs.
//
//   import { x402Client, wrapFetchWithPayment } from "@x402/fetch";
//   import { registerExactEvmScheme } from "@x402/evm/exact/client";
//   import { guardClient, recordReceipts } from "agent-safe-paid-work-kit";
//   const client = guardClient(registerExactEvmScheme(new x402Client(), { signer }), { policy, ledgerPath });
//   const pay = wrapFetchWithPayment(recordReceipts(fetch, client), client);
//
// guardClient registers a requirements policy and hooks on the x402Client (the object
// @x402/fetch, @x402/axios and the MCP clients share), and one on an x402HTTPClient when given one:
//   registerPolicy           the cheapest offered entry the whole spend policy allows now (per payee,
//                            per day included) is the only one left for the client to sign.
//   onBeforePaymentCreation  authorizations whose validBefore passed without a receipt are looked up
//                            on chain; then the requirement about to be signed is checked against the
//                            policy and the ledger and its amount reserved, under a lock file (one
//                            decision at a time across calls and processes); otherwise abort.
//   onAfterPaymentCreation   the signed authorization must be exactly what was reserved (amount,
//                            payee, validity); its nonce and validBefore are written ("signed")
//                            before the signature can leave; a mismatch throws, so it never leaves.
//   onPaymentCreationFailure the reservation is released.
//   onPaymentResponse        the seller's receipt (x402 v2; @x402/core runs no response hook for v1,
//                            which is why recordReceipts() reads receipts on the fetch itself).
// A signature that has left counts against the limits until a receipt settles it or the chain shows
// it unused after its validBefore.
import { randomUUID } from "node:crypto";
import fs from "node:fs";
import { resolveLapsedAuthorizations } from "./chain.mjs";
import { appendEntry, foldLedger, LedgerError, lapsedReservations, readLedger, repairLedger } from "./ledger.mjs";
import { withLedgerLock } from "./lock.mjs";
import { checkPolicy, decide, paymentOf, rankRequirements } from "./policy.mjs";
import { checkSignedOffer, importOfferVerifier } from "./signed-offers.mjs";

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

const GUARD = Symbol.for("agent-safe-paid-work-kit.guard");

/**
 * Guards an x402Client (or an x402HTTPClient, whose requested URLs it then also sees) and returns
 * the same object. Options:
 *   policy               a spend policy (policy/spend-policy.schema.json), checked here
 *   ledgerPath           the JSONL ledger shared by every process that spends from the same budget
 *   approve(request)     async; resolve true to sign a payment above `approvalAbove` (default: refuse)
 *   maxValiditySeconds   refuse requirements whose maxTimeoutSeconds is longer (default 3600)
 *   onDecision(event)    called with { payment, decision, id? } for every decision (logging)
 *   now                  clock, for tests
 *   lock                 { timeoutMs, staleMs } of the ledger lock
 *   chainTimeoutMs       how long a payment waits for the policy's RPCs before it goes on with
 *                        what they did not answer still counted (default 3000)
 *   offerVerifier        async; resolves to the module @x402/extensions/offer-receipt, for a kit whose
 *                        folder cannot resolve it (default: import it from here)
 */
export function guardClient(
  client,
  { policy, ledgerPath, approve = async () => false, maxValiditySeconds = 3600, onDecision = () => {}, now = () => new Date(), lock = {}, chainTimeoutMs = 3_000, offerVerifier = importOfferVerifier } = {},
) {
  const problems = checkPolicy(policy);
  if (problems.length > 0) throw new Error(`invalid spend policy: ${problems.join("; ")}`);
  if (!ledgerPath) throw new Error("guardClient needs a ledgerPath");
  const core = typeof client?.onBeforePaymentCreation === "function" ? client : client?.client;
  if (typeof core?.onBeforePaymentCreation !== "function" || typeof core.onAfterPaymentCreation !== "function") {
    throw new Error("guardClient needs an x402Client (or x402HTTPClient) from @x402/core ≥ 2 with payment-creation hooks");
  }
  if (core[GUARD]) throw new Error("this client is already guarded");

  // The URL actually requested, when the caller guards the x402HTTPClient it gives the transport.
  const requestedUrls = new WeakMap();
  if (core !== client && typeof client.onPaymentRequired === "function") {
    client.onPaymentRequired(async ({ paymentRequired, requestUrl }) => {
      requestedUrls.set(paymentRequired, requestUrl);
    });
  }
  // Reservations waiting for their signature, by the requirement object the client signs.
  const pending = new WeakMap();
  const ownErrors = new WeakSet();
  // The size of the ledger when this guard last wrote it: a smaller or missing file means it was
  // truncated or deleted under us, and what it held (signatures that can still move money) is lost.
  let knownSize = 0;
  // The ledger as this guard last read it under the lock: what the chain is asked about before the
  // next decision, without reading the whole file once more (the decision reads it again, locked).
  let lastEntries;

  /** Runs `work(records, at)` under the lock on a repaired, checked ledger. */
  const underLock = (work) =>
    withLedgerLock(
      ledgerPath,
      () => {
        repairLedger(ledgerPath);
        const size = fileSize(ledgerPath);
        if (size < knownSize) {
          throw new LedgerError(
            `${ledgerPath}: the ledger ${size === 0 ? "is gone or empty" : "is shorter"} (${size} bytes; this guard wrote ${knownSize}): it was deleted or truncated while in use; restore it before paying again`,
          );
        }
        lastEntries = readLedger(ledgerPath);
        const result = work(lastEntries, now());
        knownSize = fileSize(ledgerPath);
        return result;
      },
      lock,
    );

  /** Under the lock: expire lapsed reservations, decide, and reserve when allowed (or approved). */
  const decideAndReserve = async (payment, validitySeconds, approved) => {
    await resolveLapsedAuthorizations(ledgerPath, policy, { now: now(), lock, timeoutMs: chainTimeoutMs, records: lastEntries && foldLedger(lastEntries) });
    return underLock((entries, at) => {
      for (const old of lapsedReservations(foldLedger(entries), at)) {
        appendEntry(ledgerPath, { at: at.toISOString(), id: old.id, state: "expired", reason: "reservation passed without a signature" });
      }
      const decision = decide(policy, payment, entries, at, ledgerPath);
      if (decision.decision === "deny" || (decision.decision === "approve" && !approved)) return { decision };
      const id = randomUUID();
      // Margin: the signer reads its own clock when it sets validBefore = now + maxTimeoutSeconds.
      const expiresAt = new Date(at.getTime() + (validitySeconds + 60) * 1000).toISOString();
      appendEntry(ledgerPath, { at: at.toISOString(), id, state: "reserved", ...payment, expiresAt });
      return { decision, id, expiresAt };
    });
  };

  /**
   * A receipt (or a 402 after paying) for the authorization with this payer and nonce; written once.
   * Never throws: the answer has arrived and is the caller's; a receipt that cannot be written
   * leaves the payment "signed", counted until the chain says otherwise.
   */
  const recordReceipt = (signed, { settleResponse, paymentRequired, status }) =>
    underLock((entries) => {
      const record = foldLedger(entries).find((r) => r.id && same(r.nonce, signed.nonce) && same(r.payer, signed.payer));
      if (!record || record.state !== "signed") return; // not ours, or recorded already
      const at = now().toISOString();
      if (settleResponse?.success === true && typeof settleResponse.transaction === "string" && settleResponse.transaction !== "") {
        appendEntry(ledgerPath, { at, id: record.id, state: "settled", transaction: settleResponse.transaction, status });
      } else if (settleResponse || paymentRequired) {
        // The seller's word that nothing moved; the signature stays usable, so it still counts.
        appendEntry(ledgerPath, { at, id: record.id, state: "failed", status, reason: String(settleResponse?.errorReason ?? paymentRequired?.error ?? "refused after payment").slice(0, 500) });
      }
      // No receipt at all: the line stays "signed" and counts until the chain says otherwise.
    }).catch((error) => process.emitWarning(`budget guard: the receipt for nonce ${signed.nonce} was not recorded: ${error.message}`));

  Object.defineProperty(core, GUARD, { value: { recordReceipt } });

  // The entry the client signs is the one the guard ranks first (given alone); the ledger is read
  // without the lock here: the decision on that entry is made again under it.
  core.registerPolicy?.((version, requirements) => {
    let entries = lastEntries ?? [];
    try {
      entries = lastEntries ?? readLedger(ledgerPath);
    } catch {} // refused, naming the file, by the decision under the lock
    return rankRequirements(policy, requirements, entries, now(), version);
  });

  core.onBeforePaymentCreation(async ({ paymentRequired, selectedRequirements }) => {
    const requirements = selectedRequirements;
    const url = requestedUrls.get(paymentRequired) ?? paymentRequired?.resource?.url ?? requirements.resource;
    const payment = paymentOf(requirements, url, paymentRequired?.x402Version);
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
    // Before anything is reserved: a refused offer leaves no line but the caller's decision.
    const offer = await checkSignedOffer(policy, { paymentRequired, requirements, payment, url: requestedUrls.get(paymentRequired), now: now(), load: offerVerifier });
    if (offer.reasons) return refuse({ decision: "deny", reasons: offer.reasons });
    if (offer.offerSigner) payment.offerSigner = offer.offerSigner;
    let outcome;
    try {
      outcome = await decideAndReserve(payment, validitySeconds, false);
      if (outcome.decision.decision === "approve" && !outcome.id) {
        const yes = await approve({ ...payment, requirements, reasons: outcome.decision.reasons });
        if (!yes) return refuse({ decision: "deny", reasons: [...outcome.decision.reasons, "not approved"] });
        // Decided again: the ledger may have moved while a human was asked.
        outcome = await decideAndReserve(payment, validitySeconds, true);
      }
    } catch (error) {
      if (error instanceof LedgerError) return refuse({ decision: "deny", reasons: [error.message] });
      throw error;
    }
    if (!outcome.id) return refuse(outcome.decision);
    onDecision({ payment, decision: outcome.decision, id: outcome.id });
    const queue = pending.get(requirements) ?? [];
    queue.push({ id: outcome.id, payment, expiresAt: outcome.expiresAt });
    pending.set(requirements, queue);
    return undefined;
  });

  core.onAfterPaymentCreation(async ({ selectedRequirements, paymentPayload }) => {
    const fail = (message) => {
      const error = new Error(`budget guard: ${message}; the signature is not sent`);
      ownErrors.add(error);
      throw error;
    };
    const reservation = pending.get(selectedRequirements)?.shift();
    if (!reservation) fail("a payment was signed without a reservation");
    const signed = signedTerms(paymentPayload);
    const accepted = paymentPayload.accepted ?? selectedRequirements;
    const mismatch = !signed
      ? "the signed payload is not an EIP-3009 or Permit2 authorization the guard can read"
      : signed.amount !== reservation.payment.amount
        ? `signed amount ${signed.amount} ≠ reserved ${reservation.payment.amount}`
        : !same(signed.payTo, reservation.payment.payTo)
          ? `signed payee ${signed.payTo} ≠ reserved ${reservation.payment.payTo}`
          : !/^\d{1,20}$/.test(signed.validBefore) || Number(signed.validBefore) * 1000 > Date.parse(reservation.expiresAt)
            ? `validBefore ${signed.validBefore} is later than the reservation allows`
            : paymentOf(accepted).network !== reservation.payment.network || !same(accepted.asset, reservation.payment.asset)
              ? "the accepted network or asset differs from the one reserved"
              : undefined;
    // Written under the lock, before createPaymentPayload returns, so before the signature can leave
    // this process, and only while the reservation still holds (another process may have expired it).
    const written = await underLock((entries, at) => {
      const record = foldLedger(entries).find((r) => r.id === reservation.id);
      if (mismatch || record?.state !== "reserved") {
        const why = mismatch ?? `its reservation is ${record?.state ?? "gone from the ledger"}`;
        if (record?.state === "reserved") appendEntry(ledgerPath, { at: at.toISOString(), id: reservation.id, state: "released", reason: `not sent: ${why}` });
        return why;
      }
      appendEntry(ledgerPath, { at: at.toISOString(), id: reservation.id, state: "signed", payer: signed.payer, nonce: signed.nonce, validBefore: signed.validBefore });
      return undefined;
    }).catch((error) => (error instanceof LedgerError ? error.message : Promise.reject(error)));
    if (written) fail(written);
  });

  core.onPaymentCreationFailure?.(async ({ selectedRequirements, error }) => {
    if (ownErrors.has(error)) return undefined; // already recorded by the check above
    const reservation = pending.get(selectedRequirements)?.shift();
    if (reservation) {
      await underLock((entries, at) => {
        if (foldLedger(entries).find((r) => r.id === reservation.id)?.state !== "reserved") return;
        appendEntry(ledgerPath, { at: at.toISOString(), id: reservation.id, state: "released", reason: `signing failed: ${error?.message ?? error}` });
      });
    }
    return undefined;
  });

  core.onPaymentResponse?.(async ({ paymentPayload, settleResponse, paymentRequired }) => {
    const signed = signedTerms(paymentPayload);
    if (signed) await recordReceipt(signed, { settleResponse, paymentRequired });
    return undefined;
  });

  return client;
}

function fileSize(file) {
  try {
    return fs.statSync(file).size;
  } catch (error) {
    if (error.code === "ENOENT") return 0;
    throw error;
  }
}

const decodeHeader = (value) => {
  try {
    return value ? JSON.parse(Buffer.from(value, "base64").toString("utf8")) : undefined;
  } catch {
    return undefined;
  }
};

/**
 * A fetch that records the seller's receipt of every paid request of a guarded client, on every
 * x402 version: @x402/core 2.27 runs no onPaymentResponse hook for x402 v1, so a v1 seller's
 * receipts never reach the guard's hook. Give it to the transport:
 * `wrapFetchWithPayment(recordReceipts(fetch, client), client)`. It sees the signed payment as it
 * leaves (PAYMENT-SIGNATURE or X-PAYMENT) and the receipt that comes back (PAYMENT-RESPONSE or
 * X-PAYMENT-RESPONSE; a 402 without one is a refusal after payment).
 */
export function recordReceipts(fetchImpl, client) {
  const guard = (client?.[GUARD] ? client : client?.client)?.[GUARD];
  if (!guard) throw new Error("recordReceipts needs a client guarded by guardClient");
  return async (input, init) => {
    const request = new Request(input, init);
    const sent = decodeHeader(request.headers.get("payment-signature") ?? request.headers.get("x-payment"));
    const response = await fetchImpl(request);
    const signed = sent && signedTerms(sent);
    if (signed) {
      const settleResponse = decodeHeader(response.headers.get("payment-response") ?? response.headers.get("x-payment-response"));
      const paymentRequired = !settleResponse && response.status === 402 ? (decodeHeader(response.headers.get("payment-required")) ?? { error: "402 after payment" }) : undefined;
      await guard.recordReceipt(signed, { settleResponse, paymentRequired, status: response.status });
    }
    return response;
  };
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
