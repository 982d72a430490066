import { encodePaymentRequiredHeader } from "@x402/core/http";
import type { PaymentRequired } from "@x402/core/types";
import type { Context } from "hono";
import type { Logger } from "pino";
import type { AnyOperation, StartedOperation } from "../catalog/operation.ts";
import { JOBS_LIST_PATH } from "../catalog/sign-in-routes.ts";
import { jobView } from "../jobs/job-view.ts";
import type { Job } from "../jobs/queue.ts";
import { PAYMENT_REQUIRED_HEADER } from "../payments/headers.ts";
import type { PaymentTerms } from "../payments/resource-server/terms.ts";
import {
  compactChallenge,
  SIGN_IN_HEADER,
  SignInChallenges,
  type SignInSettings,
  verifySignIn,
} from "../payments/sign-in/sign-in-with-x.ts";
import { Problem } from "../problem.ts";
import { fileResponse } from "../products/download.ts";
import type { PaymentRecord, Store, StoredOutcome } from "../store/store.ts";
import { respond } from "./response-headers.ts";
import { paymentRequiredBody } from "./x402-v1.ts";

/** A signed-in wallet's jobs are listed newest first, at most this many. */
export const JOBS_LISTED = 20;
/** The purchases of a product looked at for one re-download, newest first. */
const PURCHASES_LOOKED_AT = 50;

export interface SignInOptions {
  settings: SignInSettings;
  /** How long after a purchase it may be downloaded again; unset: while the release bought is served. */
  downloadMs?: number;
}

/**
 * x402 sign-in-with-x at the HTTP door: a product bought by a wallet is downloaded again by that
 * wallet's signature, and the jobs a wallet paid for are listed and read by its signature. A 402 of
 * these routes carries a fresh challenge (`extensions["sign-in-with-x"]`); src/payments/sign-in checks
 * the signed answer (origin, chain, route, time, signature, single-use nonce).
 */
export class SignInDoor {
  private readonly challenges: SignInChallenges;

  constructor(
    private readonly options: SignInOptions,
    private readonly services: { store: Store; log: Logger; now: () => Date },
  ) {
    this.challenges = new SignInChallenges(options.settings);
  }

  /**
   * The signer of the request's SIGN-IN-WITH-X header for `paths`, undefined without one; a message that
   * is not accepted throws its 401 (nothing is charged on a sign-in route).
   */
  async signer(c: Context, paths: readonly string[]): Promise<string | undefined> {
    const header = c.req.header(SIGN_IN_HEADER);
    if (header === undefined) return undefined;
    const result = await verifySignIn(header, {
      settings: this.options.settings,
      paths,
      nonces: this.services.store,
      now: () => this.services.now().getTime(),
    });
    if ("rejected" in result) throw result.rejected;
    return result.address;
  }

  /**
   * A product's answer to a request without payment: the file again for a signed-in buyer of the release
   * served now (within SIGN_IN_DOWNLOAD_DAYS if set), else the route's 402 with a fresh challenge.
   */
  async product(
    c: Context,
    operation: AnyOperation,
    terms: PaymentTerms,
    handler: StartedOperation<unknown, unknown>,
  ): Promise<Response> {
    const signer = await this.signer(c, [operation.path]);
    if (signer !== undefined) {
      const answer = await this.redownload(signer, operation, handler);
      if (answer) return fileResponse(answer, c.req.raw);
    }
    return this.paymentRequired(c, terms.paymentRequired, operation.path);
  }

  private async redownload(
    payer: string,
    operation: AnyOperation,
    handler: StartedOperation<unknown, unknown>,
  ): Promise<(StoredOutcome & { file: NonNullable<StoredOutcome["file"]> }) | undefined> {
    const { store, log, now } = this.services;
    const purchases = await store.paymentsOfPayer({
      payer,
      operationIds: [operation.id],
      states: ["settled"],
      limit: PURCHASES_LOOKED_AT,
    });
    const since = this.options.downloadMs === undefined ? 0 : now().getTime() - this.options.downloadMs;
    const current = purchases.filter((purchase) => Date.parse(purchase.createdAt) >= since);
    if (current.length === 0) return undefined;
    const served = await handler.handle(undefined, { requestId: "sign-in", log, now, payer });
    if (!served.file) return undefined;
    const release = served.file.sha256;
    const bought = current.find((purchase) => purchase.outcome?.file?.sha256 === release);
    if (!bought) return undefined;
    const disposition = served.headers?.["content-disposition"];
    return {
      status: 200,
      headers: {
        ...(disposition ? { "content-disposition": disposition } : {}),
        "x-sign-in-with-x": "granted",
      },
      body: "",
      file: served.file,
    };
  }

  /** GET /v1/jobs: the signed-in wallet's jobs (each job's view, as GET /v1/jobs/{id} shows it), newest first. */
  async listJobs(c: Context, asyncOperationIds: readonly string[], deadline: JobDeadline): Promise<Response> {
    const signer = await this.signer(c, [JOBS_LIST_PATH]);
    if (signer === undefined) return this.paymentRequired(c, undefined, JOBS_LIST_PATH);
    const { store } = this.services;
    const payments = await store.paymentsOfPayer({
      payer: signer,
      operationIds: asyncOperationIds,
      states: ["verified", "held", "settled", "released", "failed"],
      limit: JOBS_LISTED,
    });
    const jobs: ReturnType<typeof jobView>[] = [];
    for (const record of payments) {
      const job = await store.jobs.getByPayment(record.paymentKey);
      if (job) jobs.push(jobView(job, { record, deadline: deadline(record) }));
    }
    return respond(c, JSON.stringify({ payer: signer, jobs }), {
      status: 200,
      headers: { "content-type": "application/json; charset=utf-8", "cache-control": "no-store" },
    });
  }

  /**
   * GET /v1/jobs/{id} with a SIGN-IN-WITH-X header (signed for that path or for /v1/jobs): only the wallet
   * that paid for the job reads it so. Without the header the job id alone reads it, as before.
   */
  async checkJobReader(c: Context, job: Job, payment: PaymentRecord | undefined): Promise<void> {
    const signer = await this.signer(c, [`${JOBS_LIST_PATH}/${job.id}`, JOBS_LIST_PATH]);
    if (signer === undefined) return;
    if (payment?.payer.toLowerCase() !== signer) {
      throw Problem.of("not-the-payer", `job ${job.id} was not paid for by ${signer}; nothing is shown`, {
        errors: [{ pointer: "/address", message: "not the wallet that paid for this job" }],
        extensions: { header: SIGN_IN_HEADER },
      });
    }
  }

  /**
   * A 402 with a fresh sign-in challenge: the route's terms when it sells something (a product), or none
   * (`accepts: []`, the package's sign-in-only route) where a signature is all that is asked.
   */
  private async paymentRequired(
    c: Context,
    terms: PaymentRequired | undefined,
    path: string,
  ): Promise<Response> {
    const resource = new URL(path, this.options.settings.origin).toString();
    const base: PaymentRequired = terms ?? {
      x402Version: 2,
      resource: { url: resource, description: "Your research jobs: sign in with the wallet that paid" },
      // Nothing is sold here: a v1 client must not read the default "X-PAYMENT header is required".
      error: "sign-in required (SIGN-IN-WITH-X): no payment is accepted here",
      accepts: [],
    };
    const challenge = await this.challenges.challenge(path, base.accepts);
    const paymentRequired: PaymentRequired = { ...base, extensions: { ...base.extensions, ...challenge } };
    const inHeader: PaymentRequired = {
      ...base,
      extensions: { ...base.extensions, ...compactChallenge(challenge) },
    };
    const problem = terms
      ? Problem.of(
          "payment-required",
          "pay for this product (PAYMENT-SIGNATURE), or, if this wallet bought it, sign in (SIGN-IN-WITH-X) to download it again without paying",
        )
      : Problem.of(
          "sign-in-required",
          "sign in with the wallet that paid (SIGN-IN-WITH-X, x402 sign-in-with-x) to list its jobs; nothing is charged",
        );
    return respond(c, JSON.stringify({ ...problem.body(path), ...paymentRequiredBody(paymentRequired) }), {
      status: 402,
      headers: {
        "content-type": "application/problem+json",
        [PAYMENT_REQUIRED_HEADER]: encodePaymentRequiredHeader(inHeader),
        "cache-control": "no-store",
      },
    });
  }
}

/** A held payment's job deadline (the gate's), as the job view shows it. */
export type JobDeadline = (record: PaymentRecord) => number;
