import type { x402ResourceServer } from "@x402/core/server";
import { FacilitatorResponseError, SettleError, type SettleResponse, VerifyError } from "@x402/core/types";
import { ChainUnavailableError, isTransportError } from "../../chain/transport-failures.ts";
import type { Metrics } from "../../metrics.ts";
import { Problem } from "../../problem.ts";
import { NO_LEASE, type PaymentCompletion, type Store, type StoredOutcome } from "../../store/store.ts";
import { isUnconfirmedSettlement } from "../settlement-reasons.ts";
import type { AuthorizationChecker, AuthorizationOutcome } from "../settler/authorization-state.ts";
import { countFinalState } from "./final-state-metrics.ts";
import type { LeaseKeeper } from "./lease-keeper.ts";
import { type OfferReceipts, receiptedSettlement } from "./offer-receipt.ts";
import { type KeptAnswers, type PaymentContext, paymentsUnavailable } from "./paid-request.ts";
import type { PaymentFacts, PaymentIdentity } from "./payment-identity.ts";
import { onChainReceipt, settlementVerdict } from "./settlement-verdict.ts";
import { shortReason } from "./short-reason.ts";

export interface SettlementOptions {
  resourceServer: x402ResourceServer;
  store: Store;
  metrics: Metrics;
  answers: KeptAnswers;
  leases: LeaseKeeper;
  /** Chain access to resolve unknown settlements; absent in facilitator mode without RPC_URL. */
  authorizations?: AuthorizationChecker;
  /** Signs each settlement's receipt (offer-receipt.ts); absent: settlements carry none. */
  receipts?: OfferReceipts;
  now: () => number;
}

/**
 * The gate's side of the facilitator and the ledger: verify, settle now, decide an unknown settlement
 * from the token (settlementVerdict), and write a payment's final state once.
 */
export class Settlement {
  constructor(private readonly options: SettlementOptions) {}

  async verify(identity: PaymentIdentity, context: PaymentContext): Promise<void> {
    let verification: Awaited<ReturnType<x402ResourceServer["verifyPayment"]>>;
    try {
      verification = await this.options.resourceServer.verifyPayment(identity.payload, identity.requirements);
    } catch (error) {
      if (error instanceof VerifyError) {
        throw this.rejected(
          context,
          error.invalidReason ?? "invalid_payment",
          error.invalidMessage ?? error.message,
        );
      }
      if (!isOutage(error)) {
        context.log.warn({ err: error }, "payment verification failed");
        throw this.rejected(context, "verification_failed", "the payment could not be verified");
      }
      context.log.warn({ err: error }, "payment verification unavailable");
      throw paymentsUnavailable(
        "the payment facilitator or the chain could not be reached to verify the payment; nothing was charged",
      );
    }
    if (!verification.isValid) {
      const reason = verification.invalidReason ?? "invalid_payment";
      throw this.rejected(context, reason, verification.invalidMessage ?? reason);
    }
  }

  /**
   * Settles a kept answer now; undefined when the payment's lease passed to another attempt while the
   * operation ran (that attempt settles it). `resumed`: an earlier attempt may already have broadcast.
   */
  async settleNow(
    identity: PaymentIdentity,
    context: PaymentContext,
    answer: StoredOutcome,
    resumed: boolean,
  ): Promise<StoredOutcome | undefined> {
    const { log } = context;
    if (!(await this.options.leases.renew(identity.paymentKey))) {
      log.warn("the payment's lease passed to another attempt while the operation ran: not settling here");
      return undefined;
    }
    let settlement: SettleResponse;
    try {
      settlement = await this.options.resourceServer.settlePayment(identity.payload, identity.requirements);
    } catch (error) {
      if (!(error instanceof SettleError)) {
        log.error({ err: error }, "settlement outcome unknown");
        return this.resolve(identity.facts, context, answer);
      }
      settlement = { ...error, success: false } as SettleResponse;
    }
    if (settlement.success) {
      log.info({ transaction: settlement.transaction, payer: settlement.payer }, "payment settled");
      return this.finish(
        identity.facts,
        context,
        "settled",
        this.options.answers.withReceipt(answer, await this.receipted(settlement, context)),
        { txHash: settlement.transaction },
      );
    }
    if (isUnconfirmedSettlement(settlement.errorReason)) {
      log.warn({ transaction: settlement.transaction }, "settlement broadcast but not confirmed yet");
      return this.resolve(identity.facts, context, answer);
    }
    // Keep the first line: viem appends a multi-line call dump to revert messages.
    const reason = (settlement.errorMessage ?? settlement.errorReason ?? "settlement failed").split(
      "\n",
    )[0] as string;
    log.warn({ reason: settlement.errorReason, detail: reason, resumed }, "settlement refused");
    if (resumed || this.options.authorizations) {
      // A refusal may hide a transfer that landed anyway (an earlier attempt's, or the same signed payment
      // submitted by someone else first): where the chain can be asked, the token decides.
      return this.resolve(identity.facts, context, answer, {
        refusal: reason,
        refusalCode: settlement.errorReason,
        refusalStands: !resumed,
      });
    }
    const rejected = this.rejected(context, settlement.errorReason ?? "settlement_failed", reason);
    return this.finish(identity.facts, context, "failed", rejected.toResponse(context.operation.path), {
      error: reason,
    });
  }

  /**
   * The settlement's outcome is not known from the settlement call: the token decides
   * (settlementVerdict). Kept open → the client retries with the same payment (503).
   */
  async resolve(
    facts: PaymentFacts,
    context: PaymentContext,
    answer: StoredOutcome | null,
    known: {
      refusal?: string;
      refusalCode?: string;
      onChain?: AuthorizationOutcome;
      refusalStands?: boolean;
    } = {},
  ): Promise<StoredOutcome> {
    let onChain: AuthorizationOutcome | undefined;
    try {
      onChain = known.onChain ?? (await this.chainOutcome(facts));
    } catch (error) {
      context.log.warn({ err: error }, "the chain cannot tell what became of the payment");
      return this.keepOpen(facts);
    }
    const verdict = settlementVerdict({
      onChain,
      refusal: known.refusal,
      refusalStands: known.refusalStands,
      nowMs: this.options.now(),
      validBefore: facts.validBefore,
    });
    const path = context.operation.path;
    switch (verdict.verdict) {
      case "keep-open":
        return this.keepOpen(facts);
      case "settled": {
        context.log.info({ transaction: verdict.transaction }, "payment found settled on chain");
        const receipt = await this.receipted(onChainReceipt(facts, verdict.transaction), context);
        const delivered =
          answer ??
          Problem.of(
            "result-lost",
            `the payment was settled (transaction ${verdict.transaction}) but its result was not kept; contact the operator`,
          ).toResponse(path);
        return this.finish(facts, context, "settled", this.options.answers.withReceipt(delivered, receipt), {
          txHash: verdict.transaction,
        });
      }
      case "failed": {
        if (verdict.cause === "consumed") {
          const message =
            "the payment authorization was cancelled or spent on another transfer; the result is withheld";
          const rejected = this.rejected(context, "authorization_consumed", message);
          return this.finish(facts, context, "failed", rejected.toResponse(path), {
            error: message,
            txHash: verdict.transaction ?? null,
          });
        }
        // Only this attempt's own refusal carries its code; a refusal trusted without chain access does not.
        const code = onChain ? (known.refusalCode ?? "settlement_failed") : "settlement_failed";
        const rejected = this.rejected(context, code, verdict.refusal);
        return this.finish(facts, context, "failed", rejected.toResponse(path), { error: verdict.refusal });
      }
      case "released": {
        const expired = this.rejected(
          context,
          "authorization_expired",
          "the payment expired before it could be settled; nothing was charged; sign a new payment",
        );
        return this.finish(facts, context, "released", expired.toResponse(path), {
          error: "expired unsettled",
        });
      }
    }
  }

  /** The settlement with its signed receipt, for the resource the payment was presented to. */
  private receipted = (settlement: SettleResponse, context: PaymentContext) =>
    receiptedSettlement(
      this.options.receipts,
      settlement,
      context.terms.paymentRequired.resource.url,
      context.log,
    );

  /** Leaves the payment open for the client's retry with the same payment; the retry resumes it at once. */
  async keepOpen(facts: PaymentFacts): Promise<never> {
    // A ledger that fails here must not turn this answer into "nothing was charged": the lease runs out anyway.
    await this.options.store.releaseLease(facts.paymentKey).catch(() => undefined);
    throw paymentsUnavailable(
      "the settlement could not be confirmed (facilitator or chain unreachable); retry the same request with the " +
        "same payment to receive the result; it is charged at most once",
    );
  }

  /** What the token says became of this payment; undefined without chain access; throws if the chain cannot tell. */
  chainOutcome(facts: PaymentFacts): Promise<AuthorizationOutcome | undefined> {
    const { authorizations } = this.options;
    if (!authorizations) return Promise.resolve(undefined);
    return authorizations.check({
      asset: facts.asset as `0x${string}`,
      payer: facts.payer as `0x${string}`,
      nonce: facts.nonce as `0x${string}`,
      payTo: facts.payTo as `0x${string}`,
      amount: BigInt(facts.amount),
    });
  }

  /** Writes the payment's final state once; another attempt that got there first has its outcome stand. */
  async finish(
    facts: PaymentFacts,
    context: PaymentContext,
    state: PaymentCompletion["state"],
    outcome: StoredOutcome,
    extra: { txHash?: string | null; error?: string } = {},
  ): Promise<StoredOutcome> {
    const { store } = this.options;
    // A release or a failure lands only under this attempt's lease (a settlement lands anyway).
    const lease = (await this.options.leases.settledLease(facts.paymentKey)) ?? NO_LEASE;
    let completed: boolean;
    if (state === "settled") {
      // Money moved. Should the store fail now, the client must not read "nothing was charged": the payment
      // stays open and its retry delivers the kept answer, charged once.
      try {
        completed = await store.completePayment(facts.paymentKey, { state, outcome, lease, ...extra });
      } catch (error) {
        context.log.error({ err: error }, "settled, but the outcome could not be recorded");
        await store.releaseLease(facts.paymentKey).catch(() => undefined);
        throw paymentsUnavailable(
          "the payment was settled but its outcome could not be recorded; retry the same request with the same " +
            "payment to receive the result; it is charged at most once",
        );
      }
    } else {
      // Nothing was charged: drop what the payment would have paid for only once the ledger says so, so a
      // later attempt that does settle it (a resume) still finds its job.
      completed = await store.completePayment(facts.paymentKey, { state, outcome, lease, ...extra });
      if (completed) await context.onFinal?.(facts.paymentKey, state);
    }
    if (!completed) {
      // Another attempt (one that outlived its lease) made the payment final first: its outcome stands,
      // and that attempt counted it.
      const record = await store.getPayment(facts.paymentKey);
      return record?.outcome ?? outcome;
    }
    countFinalState(this.options.metrics, state, {
      ...facts,
      operationId: context.operation.id,
      door: context.door,
    });
    return outcome;
  }

  /** A presented payment that cannot be accepted: the terms again, with the reason (counted). */
  rejected(
    context: Pick<PaymentContext, "operation" | "terms">,
    rawReason: string,
    rawMessage: string,
  ): Problem {
    // One short line each: a facilitator's or viem's message can carry a multi-KB call dump, which in
    // the terms' header would outgrow a proxy's 4 KB header buffer (nginx answers 502).
    const reason = shortReason(rawReason, 64);
    const message = shortReason(rawMessage);
    this.options.metrics.paymentRejected(context.operation.id, reason);
    return this.options.answers.rejection(context.terms, reason, message);
  }
}

/** Failures that say nothing about the payment: the facilitator or the chain did not answer. */
function isOutage(error: unknown): boolean {
  return (
    error instanceof ChainUnavailableError ||
    (error instanceof Error &&
      /^Facilitator (verify|settle|getSupported) failed \(5\d\d\)/.test(error.message)) ||
    error instanceof FacilitatorResponseError ||
    isTransportError(error) ||
    (error instanceof Error && isTransportError(error.cause))
  );
}
