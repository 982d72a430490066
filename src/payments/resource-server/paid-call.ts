import { createHash, timingSafeEqual } from "node:crypto";
import {
  decodePaymentSignatureHeader,
  encodePaymentRequiredHeader,
  encodePaymentResponseHeader,
} from "@x402/core/http";
import type { x402ResourceServer } from "@x402/core/server";
import {
  FacilitatorResponseError,
  type PaymentPayload,
  type PaymentRequirements,
  SettleError,
  type SettleResponse,
  VerifyError,
} from "@x402/core/types";
import pino, { type Logger } from "pino";
import { z } from "zod";
import { canonicalJson } from "../../canonical-json.ts";
import type { AnyOperation, OperationResult } from "../../catalog/operation.ts";
import { ChainUnavailableError, isTransportError } from "../../chain/transport-failures.ts";
import type { Metrics } from "../../metrics.ts";
import { Problem } from "../../problem.ts";
import { isStoreOutage } from "../../store/outage.ts";
import type {
  PaymentCompletion,
  PaymentRecord,
  PaymentState,
  Store,
  StoredOutcome,
} from "../../store/store.ts";
import {
  DOWNLOAD_TOKEN_HEADER,
  PAYMENT_REQUIRED_HEADER,
  PAYMENT_RESPONSE_HEADER,
  PAYMENT_SIGNATURE_HEADER,
} from "../headers.ts";
import type { AuthorizationChecker, AuthorizationOutcome } from "../settler/authorization-state.ts";
import { jobDeadline } from "./held-payment-settler.ts";
import { LeaseKeeper, STALE_LEASE_MS } from "./lease-keeper.ts";
import { replayVerdict } from "./replay-policy.ts";
import { shortReason } from "./short-reason.ts";
import type { PaymentTerms } from "./terms.ts";

/** Seconds a client should wait before retrying when payments cannot be processed right now. */
const RETRY_AFTER_SECONDS = 5;
/** How long a request waits for another one (maybe at another instance) working on the same payment. */
const DUPLICATE_WAIT_MS = 15_000;
/** Beyond two settlement waits, the margin a held payment keeps between its job's deadline and its expiry. */
const SETTLE_MARGIN_MS = 30_000;
/** After validBefore (+ clock skew) an unused authorization can no longer land: the payment is over. */
const EXPIRY_MARGIN_SECONDS = 30;
/** The reference facilitator's "broadcast, not confirmed" answer: the outcome is unknown, not a refusal. */
const SETTLEMENT_PENDING = "settlement_pending";
/** A held payment must leave a job at least this long to run (beyond the time to settle it). */
export const MIN_JOB_WINDOW_SECONDS = 120;
/** How far a client's clock may run ahead of ours when it signs validBefore = now + maxTimeoutSeconds. */
const CLOCK_SKEW_SECONDS = 300;

/**
 * An async operation's payment is held, not settled, when its job is accepted: it is settled only once
 * the job has delivered its result (HeldPaymentSettler), so a job that fails costs nothing.
 */
export const holdsPayment = (operation: AnyOperation) => operation.kind === "async";

export interface PaidCall {
  operation: AnyOperation;
  terms: PaymentTerms;
  input: unknown;
  paymentHeader: string;
  requestId: string;
  log: Logger;
  /** The way the call came in ("http" today; MCP and x402 v1 later): labels its revenue in /metrics. */
  door: string;
  /** The download token the client sent back to resume a paid download (DOWNLOAD_TOKEN_HEADER). */
  downloadToken?: string;
  /** The client's address (behind a trusted proxy, the forwarded one): a sold download is bound to its first caller. */
  client?: string;
  /** Runs the operation; an async one records its job under this payment (see onFinal). */
  run: (payment: { paymentKey: string; payer: string }) => Promise<OperationResult<unknown>>;
  /**
   * Async operations: told when the payment is held (after the ledger says so: the job recorded by
   * run() is queued) or ends unheld (released, failed: the job is dropped), exactly once whichever
   * attempt (this request, a retry, another instance) gets there. Must be idempotent.
   */
  onFinal?: (paymentKey: string, state: Exclude<PaymentState, "verified" | "settled">) => Promise<void>;
}

const hex = (bytes?: number) =>
  z
    .string()
    .regex(bytes ? new RegExp(`^0x[0-9a-fA-F]{${bytes * 2}}$`) : /^0x(?:[0-9a-fA-F]{2})+$/)
    .transform((value) => value as `0x${string}`);
const uint = z.string().regex(/^\d{1,78}$/);

/** The EIP-3009 payload of the exact scheme, checked before anything reads it. */
const Eip3009Payload = z.strictObject({
  signature: z
    .string()
    .max(20_002)
    .regex(/^0x(?:[0-9a-fA-F]{2})+$/),
  authorization: z.strictObject({
    from: hex(20),
    to: hex(20),
    value: uint,
    validAfter: uint,
    validBefore: uint,
    nonce: hex(32),
  }),
});
type Eip3009 = z.output<typeof Eip3009Payload>;

/** What the ledger knows of a payment, and all that resolving it from the chain needs. */
type PaymentFacts = Pick<
  PaymentRecord,
  "paymentKey" | "network" | "asset" | "amount" | "payer" | "payTo" | "nonce" | "validBefore" | "createdAt"
>;

interface PaymentIdentity {
  payload: PaymentPayload;
  requirements: PaymentRequirements;
  authorization: Eip3009["authorization"];
  facts: PaymentFacts;
  paymentKey: string;
  payloadHash: string;
  requestHash: string;
}

/** What deciding a payment's outcome needs of its call; a recovery without a client has no more than this. */
type CallContext = Pick<PaidCall, "operation" | "terms" | "log" | "onFinal"> &
  Partial<Pick<PaidCall, "door">>;

const safeEqual = (a: string, b: string) =>
  a.length === b.length && timingSafeEqual(Buffer.from(a), Buffer.from(b));

const sha256 = (text: string) => createHash("sha256").update(text).digest("hex");

/**
 * The paid-call pipeline: verify → reserve (payer, nonce) → run → keep the answer → settle only
 * on success. See docs/payments.md.
 *
 * A payment is reserved in the store before any work, so the same payment arriving twice
 * (concurrently, later, or at another instance sharing the store) runs the work once and is
 * settled at most once; a retry of the identical request gets the stored outcome. A payment whose
 * settlement outcome is unknown (lost receipt, crash) stays open and is resolved from the token's
 * own authorization state on the next retry.
 */
export class PaymentGate {
  private readonly inflight = new Map<string, Promise<StoredOutcome>>();
  private initialized: Promise<void> | undefined;
  private active = 0;
  private idle: (() => void) | undefined;

  private readonly resourceServer: x402ResourceServer;
  private readonly store: Store;
  private readonly metrics: Metrics;
  private readonly authorizations?: AuthorizationChecker;
  private readonly now: () => number;
  private readonly settlementTimeoutMs: number;
  private readonly maxHeldPerPayer: number;
  /** The leases this instance holds on payments it works on, renewed while it works. */
  readonly leases: LeaseKeeper;

  constructor(options: {
    resourceServer: x402ResourceServer;
    store: Store;
    metrics: Metrics;
    /** Chain access to resolve unknown settlements; absent in facilitator mode without RPC_URL. */
    authorizations?: AuthorizationChecker;
    /** Epoch milliseconds; injectable so tests can move past leases and replay windows. */
    now?: () => number;
    /** How long one settlement may wait for its receipt; leases cover two of them. */
    settlementTimeoutMs: number;
    /** Jobs one payer may run at once on held payments. */
    maxHeldPerPayer?: number;
    /** Shared with the recovery sweeper; by default one of the gate's own. */
    leases?: LeaseKeeper;
    log?: Logger;
  }) {
    this.resourceServer = options.resourceServer;
    this.store = options.store;
    this.metrics = options.metrics;
    this.authorizations = options.authorizations;
    this.now = options.now ?? Date.now;
    this.settlementTimeoutMs = options.settlementTimeoutMs;
    this.maxHeldPerPayer = options.maxHeldPerPayer ?? Number.POSITIVE_INFINITY;
    this.leases =
      options.leases ?? new LeaseKeeper(options.store, options.log ?? pino({ level: "silent" }), this.now);
    this.leases.start();
  }

  /** 402 for a call that carries no payment: the route's static terms, as header and as problem+json body. */
  static unpaid(terms: PaymentTerms): StoredOutcome {
    return {
      status: 402,
      headers: {
        "content-type": "application/problem+json",
        [PAYMENT_REQUIRED_HEADER]: terms.header,
        "cache-control": "no-store",
      },
      body: JSON.stringify({
        ...new Problem(402, "payment-required", "Payment required", paymentRequiredDetail(terms)).body(),
        ...terms.paymentRequired,
      }),
    };
  }

  /** Until when the job of a held payment may run before it is given up and the payment released. */
  jobDeadline(record: Pick<PaymentRecord, "validBefore">): number {
    return jobDeadline(record, this.settlementTimeoutMs);
  }

  /** Resolves when no paid call is between verification and its answer. */
  async drain(): Promise<void> {
    if (this.active === 0) return;
    await new Promise<void>((resolve) => {
      this.idle = resolve;
    });
  }

  async handle(call: PaidCall): Promise<StoredOutcome> {
    this.active++;
    try {
      return await this.process(call);
    } catch (error) {
      if (error instanceof Problem) return error.toResponse(call.operation.path);
      if (isStoreOutage(error)) {
        // Before settlement nothing was sent; after it, finish() answers itself. Either way: retry, not 500.
        call.log.warn({ err: error }, "the ledger cannot be reached");
        return paymentsUnavailable(
          "the payment ledger cannot be reached right now; nothing was charged; retry the same request",
        ).toResponse(call.operation.path);
      }
      throw error;
    } finally {
      this.active--;
      if (this.active === 0) this.idle?.();
    }
  }

  /**
   * Resolves a payment its owner left unfinished (a crash, a lost store) without waiting for the client:
   * the recovery sweeper calls this for "verified" payments whose lease ran out. Paid on chain → settled,
   * the kept result and its receipt ready for the client's retry; spent elsewhere → failed; unused once
   * expired → released. Unused and still valid → left open: the client's retry resumes and settles it, or
   * it is released when it expires. A job's payment is never sent before it is held, so one left
   * "verified" is released at once (the workers drop its job). Returns the payment's state after the look.
   */
  async recover(record: PaymentRecord, call: CallContext): Promise<PaymentState | "busy"> {
    const lease = this.leases.fresh();
    if (
      this.inflight.has(record.paymentKey) ||
      !(await this.store.takeOverPayment(record.paymentKey, this.now(), lease))
    ) {
      return "busy";
    }
    try {
      await this.track(record.paymentKey, lease, async () => {
        if (!holdsPayment(call.operation)) return this.resolveUnknown(record, call, record.pendingOutcome);
        const released = this.rejected(
          call,
          "payment_released",
          "the service stopped before the job was accepted; nothing was charged; sign a new payment",
        );
        return this.finish(record, call, "released", released.toResponse(call.operation.path), {
          error: "the service stopped before the job was accepted",
        });
      });
    } catch (error) {
      if (!(error instanceof Problem)) throw error;
    }
    return (await this.store.getPayment(record.paymentKey))?.state ?? "busy";
  }

  private async process(call: PaidCall): Promise<StoredOutcome> {
    const identity = this.identify(call);
    const known = await this.store.getPayment(identity.paymentKey);
    if (known) return this.repeat(known, identity, call);

    await this.ensureInitialized();
    if (holdsPayment(call.operation)) {
      this.checkHoldWindow(identity, call);
      await this.checkHeldByPayer(identity);
    }
    try {
      await this.verify(identity, call);
    } catch (error) {
      // A duplicate of this payment sent at the same time (maybe to another instance) may have settled it
      // between the lookup above and this verification: the nonce is then spent and verification refuses
      // it. That payment's outcome is the answer, never a rejection the client would pay again after.
      const meanwhile = await this.store.getPayment(identity.paymentKey);
      if (meanwhile) return this.repeat(meanwhile, identity, call);
      throw error;
    }
    const lease = this.leases.fresh();
    const reservation = await this.store.reservePayment({
      ...identity.facts,
      payloadHash: identity.payloadHash,
      requestHash: identity.requestHash,
      operationId: call.operation.id,
      requestId: call.requestId,
      leaseUntil: lease,
    });
    if (!reservation.reserved) return this.repeat(reservation.existing, identity, call);
    this.metrics.paymentState(call.operation.id, "verified");
    return this.track(identity.paymentKey, lease, () => this.runAndSettle(identity, call, null, false));
  }

  /** Decodes and checks the payment header against the route's terms; 402 for anything unusable. */
  private identify(call: PaidCall): PaymentIdentity {
    const { terms } = call;
    let payload: PaymentPayload;
    try {
      payload = decodePaymentSignatureHeader(call.paymentHeader);
    } catch {
      throw this.rejected(
        call,
        "invalid_payload",
        `${PAYMENT_SIGNATURE_HEADER} is not a base64-encoded x402 payment`,
      );
    }
    if (payload?.x402Version !== 2) {
      throw this.rejected(call, "invalid_x402_version", "only x402 version 2 payment payloads are accepted");
    }
    const requirements =
      typeof payload.accepted === "object" && payload.accepted !== null
        ? this.resourceServer.findMatchingRequirements([terms.requirements], payload)
        : undefined;
    if (!requirements) {
      const { network, asset, amount, payTo } = terms.requirements;
      throw this.rejected(
        call,
        "payment_terms_mismatch",
        `the payment does not match this route's terms (exact scheme, ${network}, asset ${asset}, amount ${amount}, payTo ${payTo})`,
      );
    }
    // A payment names the resource it was signed for (x402 v2 echoes the 402's `resource`): it pays for
    // that route only, not for another one that happens to cost the same.
    const named = payload.resource?.url;
    if (named !== undefined && routeOf(named) !== routeOf(terms.paymentRequired.resource.url)) {
      throw this.rejected(
        call,
        "resource_mismatch",
        `the payment was signed for ${routeOf(named) ?? "another resource"}, not ${call.operation.path}; sign a payment for this route`,
      );
    }
    const parsed = Eip3009Payload.safeParse(payload.payload);
    if (!parsed.success) {
      const where = parsed.error.issues[0]?.path.join(".") || "payload";
      throw this.rejected(call, "invalid_payload", `the EIP-3009 payment payload is malformed at ${where}`);
    }
    const { authorization } = parsed.data;
    const paymentKey = [requirements.network, requirements.asset, authorization.from, authorization.nonce]
      .join(":")
      .toLowerCase();
    return {
      payload,
      requirements,
      authorization,
      facts: {
        paymentKey,
        network: requirements.network,
        asset: requirements.asset,
        amount: requirements.amount,
        payer: authorization.from.toLowerCase(),
        payTo: requirements.payTo,
        nonce: authorization.nonce.toLowerCase(),
        validBefore: Number(authorization.validBefore),
        // Wall-clock time, as the ledger's own: where settlement latency starts (resume() uses the ledger's).
        createdAt: new Date().toISOString(),
      },
      paymentKey,
      payloadHash: sha256(canonicalJson(parsed.data)),
      requestHash: sha256(`${call.operation.id}\n${canonicalJson(call.input)}`),
    };
  }

  private async verify(identity: PaymentIdentity, call: PaidCall): Promise<void> {
    let verification: Awaited<ReturnType<x402ResourceServer["verifyPayment"]>>;
    try {
      verification = await this.resourceServer.verifyPayment(identity.payload, identity.requirements);
    } catch (error) {
      if (error instanceof VerifyError) {
        throw this.rejected(
          call,
          error.invalidReason ?? "invalid_payment",
          error.invalidMessage ?? error.message,
        );
      }
      if (!isOutage(error)) {
        call.log.warn({ err: error }, "payment verification failed");
        throw this.rejected(call, "verification_failed", "the payment could not be verified");
      }
      call.log.warn({ err: error }, "payment verification unavailable");
      throw paymentsUnavailable(
        "the payment facilitator or the chain could not be reached to verify the payment; nothing was charged",
      );
    }
    if (!verification.isValid) {
      const reason = verification.invalidReason ?? "invalid_payment";
      throw this.rejected(call, reason, verification.invalidMessage ?? reason);
    }
  }

  /**
   * Runs the operation (unless its answer is already kept from an earlier attempt), keeps the
   * answer, then settles. Status ≥ 400 releases the payment; an unknown settlement leaves it open.
   * `resumed` says an earlier attempt may already have broadcast a settlement for this payment. It
   * settles only while it still holds the payment's lease.
   */
  private async runAndSettle(
    identity: PaymentIdentity,
    call: PaidCall,
    kept: StoredOutcome | null,
    resumed: boolean,
  ): Promise<StoredOutcome> {
    const { operation, log } = call;
    let answer = kept;
    if (!answer) {
      let result: OperationResult<unknown>;
      try {
        result = await call.run({ paymentKey: identity.paymentKey, payer: identity.facts.payer });
      } catch (error) {
        const problem =
          error instanceof Problem
            ? error
            : new Problem(
                500,
                "internal-error",
                "Internal error",
                "the operation failed unexpectedly; nothing was charged",
              );
        if (!(error instanceof Problem)) log.error({ err: error }, "operation failed");
        log.info({ status: problem.status }, "operation failed: payment released, nothing charged");
        return this.finish(identity.facts, call, "released", problem.toResponse(operation.path), {
          error: problem.detail,
        });
      }
      answer = {
        status: result.status ?? 200,
        headers: { "content-type": operation.outputContentType, ...result.headers },
        ...(operation.kind === "product" && call.client ? { firstCaller: sha256(call.client) } : {}),
        ...(result.file
          ? { body: "", file: result.file }
          : { body: result.bodyText ?? JSON.stringify(result.body) }),
      };
      await this.store.recordPendingOutcome(identity.paymentKey, answer);
    }
    if (holdsPayment(operation)) return this.hold(identity, call, answer);
    // If another attempt took the payment over while this one stalled past its lease, that attempt settles it.
    if (!(await this.leases.renew(identity.paymentKey))) {
      log.warn("the payment's lease passed to another attempt while the operation ran: not settling here");
      return (await this.awaitOwner(identity.paymentKey, Date.now() + DUPLICATE_WAIT_MS)) ?? inProgress(1);
    }

    let settlement: SettleResponse;
    try {
      settlement = await this.resourceServer.settlePayment(identity.payload, identity.requirements);
    } catch (error) {
      if (!(error instanceof SettleError)) {
        log.error({ err: error }, "settlement outcome unknown");
        return this.resolveUnknown(identity.facts, call, answer);
      }
      settlement = { ...error, success: false } as SettleResponse;
    }
    if (settlement.success) {
      log.info({ transaction: settlement.transaction, payer: settlement.payer }, "payment settled");
      return this.finish(identity.facts, call, "settled", withReceipt(answer, settlement), {
        txHash: settlement.transaction,
      });
    }
    if (settlement.errorReason === SETTLEMENT_PENDING) {
      log.warn({ transaction: settlement.transaction }, "settlement broadcast but not confirmed yet");
      return this.resolveUnknown(identity.facts, call, answer);
    }
    // Keep the first line: viem appends a multi-line call dump to revert messages.
    const reason = (settlement.errorMessage ?? settlement.errorReason ?? "settlement failed").split(
      "\n",
    )[0] as string;
    log.warn({ reason: settlement.errorReason, detail: reason, resumed }, "settlement refused");
    if (resumed || this.authorizations) {
      // A refusal may hide a transfer that landed anyway (an earlier attempt's, or the same signed payment
      // submitted by someone else first): where the chain can be asked, the token decides.
      return this.resolveUnknown(identity.facts, call, answer, {
        refusal: reason,
        refusalCode: settlement.errorReason,
        firstAttempt: !resumed,
      });
    }
    const rejected = this.rejected(call, settlement.errorReason ?? "settlement_failed", reason);
    return this.finish(identity.facts, call, "failed", rejected.toResponse(operation.path), {
      error: reason,
    });
  }

  /**
   * An accepted job: its payment is held, unsettled, with the answer (the 202) as its outcome, and the
   * job queued. HeldPaymentSettler settles it when the job delivers, or releases it when it does not.
   */
  private async hold(
    identity: PaymentIdentity,
    call: PaidCall,
    answer: StoredOutcome,
  ): Promise<StoredOutcome> {
    const held = await this.store.holdPayment(identity.paymentKey, {
      outcome: answer,
      held: { payload: identity.payload, requirements: identity.requirements, door: call.door },
    });
    if (!held) {
      // Another attempt (one that outlived its lease) moved the payment on first: its outcome stands.
      const record = await this.store.getPayment(identity.paymentKey);
      if (record?.outcome) return record.outcome;
      throw paymentsUnavailable("the payment is being processed by another request; retry the same request");
    }
    this.metrics.paymentState(call.operation.id, "held");
    call.log.info({ validBefore: identity.authorization.validBefore }, "payment held until the job delivers");
    // The ledger says held first: a crash here, or a store error now, leaves the job awaiting payment, and
    // the settler or the workers' maintenance queues it from the ledger. The 202 stands either way.
    await call
      .onFinal?.(identity.paymentKey, "held")
      .catch((error) =>
        call.log.error({ err: error }, "held, but the job could not be queued now: the settler queues it"),
      );
    return answer;
  }

  /**
   * Verification cannot reserve the payer's balance for a held payment: a payer with funds for one job
   * could start many. Jobs per payer on held payments are capped (429, nothing charged).
   */
  private async checkHeldByPayer(identity: PaymentIdentity): Promise<void> {
    const payer = identity.authorization.from.toLowerCase();
    const held = (await this.store.heldPayments()).filter((record) => record.payer === payer).length;
    if (held >= this.maxHeldPerPayer) {
      throw new Problem(
        429,
        "too-many-held-payments",
        "Too many jobs running for this payer",
        `${held} jobs of this payer are still running on payments held until they deliver (at most ${this.maxHeldPerPayer}); retry when one has finished; nothing was charged`,
        { headers: { "retry-after": "30" } },
      );
    }
  }

  /**
   * A held payment must outlive the job: an authorization that expires too soon is refused before any
   * work; one valid far longer than the terms ask (it would keep a queued job's payment held for as long)
   * is refused too.
   */
  private checkHoldWindow(identity: PaymentIdentity, call: PaidCall): void {
    const left = Number(identity.authorization.validBefore) - this.now() / 1000;
    const allowed = call.terms.requirements.maxTimeoutSeconds + CLOCK_SKEW_SECONDS;
    if (left > allowed) {
      throw this.rejected(
        call,
        "authorization_too_long",
        `this job's payment may be held at most ${call.terms.requirements.maxTimeoutSeconds} s (maxTimeoutSeconds): sign validBefore within that`,
      );
    }
    const needed = MIN_JOB_WINDOW_SECONDS + (2 * this.settlementTimeoutMs + SETTLE_MARGIN_MS) / 1000;
    if (left < needed) {
      throw this.rejected(
        call,
        "authorization_too_short",
        `this job's payment is settled only when its result is ready: sign an authorization valid for at least ${Math.ceil(needed)} s (validBefore), as maxTimeoutSeconds says`,
      );
    }
  }

  /**
   * The settlement's outcome is not known from the settlement call: ask the token. Paid → settled;
   * used up otherwise (cancelled, spent elsewhere) → failed; still usable → the payment stays open
   * and the client retries with the same payment (503), unless it has expired (released).
   */
  private async resolveUnknown(
    facts: PaymentFacts,
    call: CallContext,
    answer: StoredOutcome | null,
    context: {
      refusal?: string;
      refusalCode?: string;
      known?: AuthorizationOutcome;
      firstAttempt?: boolean;
    } = {},
  ): Promise<StoredOutcome> {
    let outcome: AuthorizationOutcome | undefined;
    try {
      outcome = context.known ?? (await this.chainOutcome(facts));
    } catch (error) {
      call.log.warn({ err: error }, "the chain cannot tell what became of the payment");
      return this.keepOpen(facts);
    }
    if (!outcome) {
      // No chain access (facilitator mode without RPC_URL): trust a refusal, otherwise wait.
      if (context.refusal === undefined) return this.keepOpen(facts);
      const rejected = this.rejected(call, "settlement_failed", context.refusal);
      return this.finish(facts, call, "failed", rejected.toResponse(call.operation.path), {
        error: context.refusal,
      });
    }
    if (outcome.state === "paid") {
      call.log.info({ transaction: outcome.transaction }, "payment found settled on chain");
      const settlement: SettleResponse = {
        success: true,
        transaction: outcome.transaction,
        network: facts.network as `${string}:${string}`,
        payer: facts.payer,
      };
      const delivered =
        answer ??
        new Problem(
          500,
          "result-lost",
          "Result lost",
          `the payment was settled (transaction ${outcome.transaction}) but its result was not kept; contact the operator`,
        ).toResponse(call.operation.path);
      return this.finish(facts, call, "settled", withReceipt(delivered, settlement), {
        txHash: outcome.transaction,
      });
    }
    if (outcome.state === "consumed") {
      const message =
        "the payment authorization was cancelled or spent on another transfer; the result is withheld";
      const rejected = this.rejected(call, "authorization_consumed", message);
      return this.finish(facts, call, "failed", rejected.toResponse(call.operation.path), {
        error: message,
        txHash: outcome.transaction ?? null,
      });
    }
    // Unused, and this very attempt was refused (nothing of it is pending): the refusal stands.
    if (context.firstAttempt && context.refusal !== undefined) {
      const rejected = this.rejected(call, context.refusalCode ?? "settlement_failed", context.refusal);
      return this.finish(facts, call, "failed", rejected.toResponse(call.operation.path), {
        error: context.refusal,
      });
    }
    // Unused. A transfer broadcast before validBefore cannot land after it (plus clock skew).
    if (this.now() / 1000 >= facts.validBefore + EXPIRY_MARGIN_SECONDS) {
      const expired = this.rejected(
        call,
        "authorization_expired",
        "the payment expired before it could be settled; nothing was charged; sign a new payment",
      );
      return this.finish(facts, call, "released", expired.toResponse(call.operation.path), {
        error: "expired unsettled",
      });
    }
    return this.keepOpen(facts);
  }

  /** Leaves the payment open for the client's retry with the same payment; the retry resumes it at once. */
  private async keepOpen(facts: PaymentFacts): Promise<never> {
    await this.store.releaseLease(facts.paymentKey);
    throw paymentsUnavailable(
      "the settlement could not be confirmed (facilitator or chain unreachable); retry the same request with the " +
        "same payment to receive the result; it is charged at most once",
    );
  }

  /** What the token says became of this payment; undefined without chain access; throws if the chain cannot tell. */
  private chainOutcome(facts: PaymentFacts): Promise<AuthorizationOutcome | undefined> {
    if (!this.authorizations) return Promise.resolve(undefined);
    return this.authorizations.check({
      asset: facts.asset as `0x${string}`,
      payer: facts.payer as `0x${string}`,
      nonce: facts.nonce as `0x${string}`,
      payTo: facts.payTo as `0x${string}`,
      amount: BigInt(facts.amount),
    });
  }

  /** The same payment seen again: the stored outcome, the first attempt's answer, a resumption, or a refusal. */
  private async repeat(
    record: PaymentRecord,
    identity: PaymentIdentity,
    call: PaidCall,
  ): Promise<StoredOutcome> {
    if (record.payloadHash !== identity.payloadHash) {
      throw this.rejected(
        call,
        "nonce_already_used",
        "this payment authorization nonce has already been used",
      );
    }
    if (record.requestHash !== identity.requestHash) {
      throw new Problem(
        409,
        "payment-already-used",
        "Payment already used",
        "this payment was made for a different request; sign a new payment for this one",
      );
    }
    const replayed = (outcome: StoredOutcome) => ({
      ...outcome,
      headers: { ...outcome.headers, "x-payment-replayed": "true" },
    });
    if (record.outcome) {
      // The signed payload is public once settled (it is the transaction's calldata): replay only
      // to the client's own prompt retries, not forever to anyone who reads the chain.
      // A sold download may be resumed for longer; a failed one is a failure like any other.
      const token = record.outcome.headers[DOWNLOAD_TOKEN_HEADER];
      const { firstCaller } = record.outcome;
      const verdict = replayVerdict({
        soldDownload: call.operation.kind === "product" && record.state === "settled",
        ageMs: this.now() - Date.parse(record.updatedAt),
        token,
        tokenPresented:
          token !== undefined && call.downloadToken !== undefined && safeEqual(call.downloadToken, token),
        firstCaller:
          firstCaller !== undefined &&
          call.client !== undefined &&
          safeEqual(sha256(call.client), firstCaller),
      });
      if (verdict !== "serve") {
        throw new Problem(
          409,
          "payment-already-used",
          "Payment already used",
          verdict === "expired"
            ? "this payment was already used and its outcome is no longer served; sign a new payment"
            : `this download is resumed with its payment and the ${DOWNLOAD_TOKEN_HEADER} header its first answer carried`,
        );
      }
      return replayed(record.outcome);
    }
    const running = this.inflight.get(record.paymentKey);
    if (running) return replayed(await running);
    const deadline = Date.now() + DUPLICATE_WAIT_MS;
    for (;;) {
      const lease = this.leases.fresh();
      if (await this.store.takeOverPayment(record.paymentKey, this.now(), lease)) {
        return replayed(
          await this.track(record.paymentKey, lease, () => this.resume(record, identity, call)),
        );
      }
      const outcome = await this.awaitOwner(record.paymentKey, deadline);
      if (outcome) return replayed(outcome);
    }
  }

  /** Finishes a payment whose owner stopped before its final state (a crash, or an unknown settlement). */
  private async resume(
    record: PaymentRecord,
    presented: PaymentIdentity,
    call: PaidCall,
  ): Promise<StoredOutcome> {
    call.log.info({ paymentKey: record.paymentKey }, "resuming an unfinished payment");
    // Accepted when it was first reserved, not now (its settlement latency counts from then).
    const identity = { ...presented, facts: { ...presented.facts, createdAt: record.createdAt } };
    let outcome: AuthorizationOutcome | undefined;
    try {
      outcome = await this.chainOutcome(identity.facts);
    } catch (error) {
      call.log.warn({ err: error }, "cannot read the authorization state to resume the payment");
      return this.keepOpen(identity.facts);
    }
    if (outcome && outcome.state !== "unused") {
      return this.resolveUnknown(identity.facts, call, record.pendingOutcome, { known: outcome });
    }
    if (this.now() / 1000 >= Number(identity.authorization.validBefore)) {
      // Too late to settle; whether an earlier broadcast may still land is decided there.
      return this.resolveUnknown(identity.facts, call, record.pendingOutcome, {
        refusal: "the authorization expired",
        known: outcome,
      });
    }
    return this.runAndSettle(identity, call, record.pendingOutcome, true);
  }

  /** Runs the work of this instance on a payment whose lease it holds, renewing the lease until it ends. */
  private async track(
    paymentKey: string,
    lease: number,
    work: () => Promise<StoredOutcome>,
  ): Promise<StoredOutcome> {
    this.leases.hold(paymentKey, lease);
    const promise = work();
    this.inflight.set(paymentKey, promise);
    try {
      return await promise;
    } finally {
      this.inflight.delete(paymentKey);
      this.leases.forget(paymentKey);
    }
  }

  /**
   * Another attempt (maybe at another instance) works on the payment: its outcome once final, or
   * undefined as soon as its lease has run out (the caller may take the payment over). An owner keeps its
   * lease fresh while it works (LeaseKeeper); a lease left to go stale means the owner stopped, so the
   * answer is "in progress, retry after the lease" at once, as it is when the wait runs past `deadline`.
   */
  private async awaitOwner(paymentKey: string, deadline: number): Promise<StoredOutcome | undefined> {
    for (;;) {
      const record = await this.store.getPayment(paymentKey);
      if (!record) return undefined;
      if (record.outcome) return record.outcome;
      const left = record.leaseUntil - this.now();
      if (left <= 0) return undefined;
      if (left < STALE_LEASE_MS) return inProgress(Math.ceil(left / 1000));
      if (Date.now() >= deadline) return inProgress(RETRY_AFTER_SECONDS);
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
  }

  private async finish(
    facts: PaymentFacts,
    call: CallContext,
    state: PaymentCompletion["state"],
    outcome: StoredOutcome,
    extra: { txHash?: string | null; error?: string } = {},
  ): Promise<StoredOutcome> {
    let completed: boolean;
    if (state === "settled") {
      // Money moved. Should the store fail now, the client must not read "nothing was charged": the payment
      // stays open and its retry delivers the kept answer, charged once.
      try {
        completed = await this.store.completePayment(facts.paymentKey, { state, outcome, ...extra });
      } catch (error) {
        call.log.error({ err: error }, "settled, but the outcome could not be recorded");
        await this.store.releaseLease(facts.paymentKey).catch(() => undefined);
        throw paymentsUnavailable(
          "the payment was settled but its outcome could not be recorded; retry the same request with the same " +
            "payment to receive the result; it is charged at most once",
        );
      }
    } else {
      // Nothing was charged: drop what the payment would have paid for only once the ledger says so, so a
      // later attempt that does settle it (a resume) still finds its job.
      completed = await this.store.completePayment(facts.paymentKey, { state, outcome, ...extra });
      if (completed) await call.onFinal?.(facts.paymentKey, state);
    }
    if (!completed) {
      // Another attempt (one that outlived its lease) made the payment final first: its outcome stands.
      const record = await this.store.getPayment(facts.paymentKey);
      if (record?.outcome) return record.outcome;
    }
    this.metrics.paymentState(call.operation.id, state);
    if (state === "settled") {
      const { amount, createdAt } = facts;
      this.metrics.paymentSettled({
        operation: call.operation.id,
        door: call.door,
        amount,
        acceptedAt: createdAt,
      });
    }
    return outcome;
  }

  /** 402 for a payment that was presented but cannot be accepted: the terms again, with the reason. */
  private rejected(call: CallContext, rawReason: string, rawMessage: string): Problem {
    // One short line each: a facilitator's or viem's message can carry a multi-KB call dump, which in
    // PAYMENT-REQUIRED would outgrow a proxy's 4 KB header buffer (nginx answers 502).
    const reason = shortReason(rawReason, 64);
    const message = shortReason(rawMessage);
    this.metrics.paymentRejected(call.operation.id, reason);
    const paymentRequired = { ...call.terms.paymentRequired, error: `${reason}: ${message}` };
    return new Problem(402, "payment-rejected", "Payment rejected", message, {
      headers: {
        [PAYMENT_REQUIRED_HEADER]: encodePaymentRequiredHeader(paymentRequired),
        "cache-control": "no-store",
      },
      extensions: { reason, ...paymentRequired },
    });
  }

  private ensureInitialized(): Promise<void> {
    this.initialized ??= this.resourceServer.initialize().catch((error) => {
      this.initialized = undefined;
      throw paymentsUnavailable(
        `the payment facilitator is unreachable (${(error as Error).message}); nothing was charged`,
      );
    });
    return this.initialized;
  }
}

/** The path a resource URL names (the base URL may differ between a proxy's name and the instance's). */
function routeOf(url: unknown): string | undefined {
  if (typeof url !== "string") return undefined;
  try {
    return new URL(url).pathname;
  } catch {
    return url.slice(0, 200);
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

const withReceipt = (answer: StoredOutcome, settlement: SettleResponse): StoredOutcome => ({
  ...answer,
  headers: { ...answer.headers, [PAYMENT_RESPONSE_HEADER]: encodePaymentResponseHeader(settlement) },
});

function paymentRequiredDetail(terms: PaymentTerms): string {
  const { amount, asset, network, payTo } = terms.requirements;
  return `pay ${amount} atomic units of ${asset} on ${network} to ${payTo} with x402 v2 (send the PAYMENT-SIGNATURE header)`;
}

function paymentsUnavailable(detail: string): Problem {
  return new Problem(503, "payments-unavailable", "Payments temporarily unavailable", detail, {
    headers: { "retry-after": String(RETRY_AFTER_SECONDS) },
  });
}

/** Another attempt works on this payment: never a rejection, a retry with the same payment gets its outcome. */
function inProgress(retryAfterSeconds: number): never {
  const seconds = Math.max(1, retryAfterSeconds);
  throw new Problem(
    409,
    "payment-in-progress",
    "Payment in progress",
    `this payment is being processed; retry the same request with the same payment in ${seconds} s to receive its outcome; it is charged at most once`,
    { headers: { "retry-after": String(seconds) } },
  );
}
