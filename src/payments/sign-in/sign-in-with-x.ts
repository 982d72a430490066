import type { PaymentRequirements } from "@x402/core/types";
import {
  createSIWxResourceServerExtension,
  declareSIWxExtension,
  parseSIWxHeader,
  SIGN_IN_WITH_X,
  type SIWxPayload,
  type SIWxValidationCode,
  validateSIWxMessage,
  verifySIWxSignature,
} from "@x402/extensions/sign-in-with-x";
import { type FieldError, Problem } from "../../problem.ts";

/** The request header a signed-in client sends (x402 sign-in-with-x, CAIP-122). */
export const SIGN_IN_HEADER = SIGN_IN_WITH_X.toUpperCase();

/** A message is accepted for this long after its issuedAt (the package's own default), and never after its expirationTime. */
export const SIGN_IN_MAX_AGE_MS = 5 * 60_000;

/**
 * A used nonce is kept this much longer than a message carrying it is accepted: each instance forgets
 * nonces by its own clock, and one running ahead of another by less than this cannot forget a nonce that
 * the other would still accept a message with.
 */
const NONCE_CLOCK_MARGIN_MS = 5 * 60_000;

/** A header longer than this is no sign-in message of this service (its challenge encodes to under 1 KB). */
const MAX_HEADER_LENGTH = 8192;

const STATEMENT = "Sign in with the wallet that paid. This costs nothing.";

export interface SignInSettings {
  /** The service's public origin (BASE_URL): the domain and uri every message must name. */
  origin: string;
  /** The one chain a message may name (CAIP-2), the chain the service is paid on. */
  network: string;
}

/** Where used nonces are kept (the store's sign_in_nonces table, SQLite or PostgreSQL). */
export interface SignInNonces {
  useSignInNonce(nonce: string, keepUntil: number, now: number): Promise<boolean>;
}

/**
 * The sign-in-with-x challenge of one 402: a fresh nonce, issuedAt and expirationTime, this origin's
 * domain, the resource's URL, and the chain, in the shape the official package declares and enriches
 * (`extensions["sign-in-with-x"]` = { info, supportedChains, schema }).
 */
export class SignInChallenges {
  private readonly origin: URL;
  private readonly extension;
  private readonly declaration;

  constructor(settings: SignInSettings) {
    this.origin = new URL(settings.origin);
    // Only its 402 enrichment is used: this service's gate decides who is granted (verifySignIn below), so
    // the package's own request and settlement hooks, and their storage, never run.
    this.extension = createSIWxResourceServerExtension({
      origin: this.origin.origin,
      storage: { hasPaid: () => false, recordPayment: () => undefined },
    });
    this.declaration = declareSIWxExtension({
      statement: STATEMENT,
      network: settings.network,
      expirationSeconds: SIGN_IN_MAX_AGE_MS / 1000,
    })[SIGN_IN_WITH_X];
  }

  /** `{ "sign-in-with-x": … }` for a 402 of `path` whose payment (if any) is `requirements`. */
  async challenge(path: string, requirements: PaymentRequirements[] = []): Promise<Record<string, unknown>> {
    const enrich = this.extension.enrichPaymentRequiredResponse as (
      declaration: unknown,
      context: { resourceInfo: { url: string }; requirements: PaymentRequirements[] },
    ) => Promise<unknown>;
    const url = new URL(path, this.origin).toString();
    return { [SIGN_IN_WITH_X]: await enrich(this.declaration, { resourceInfo: { url }, requirements }) };
  }
}

/**
 * The challenge as a PAYMENT-REQUIRED header carries it: `info` and `supportedChains`, which is all a client
 * signs from, without the JSON Schema of the signed payload (1 KB once base64-encoded, and echoed back in
 * PAYMENT-SIGNATURE by the official payment client), so that a product's 402 headers still fit a proxy's
 * 4 KB buffer (terms.ts). The body and /.well-known/x402 carry the schema.
 */
export function compactChallenge(challenge: Record<string, unknown>): Record<string, unknown> {
  const { schema: _schema, ...compact } = challenge[SIGN_IN_WITH_X] as Record<string, unknown>;
  return { [SIGN_IN_WITH_X]: compact };
}

export type SignInResult = { address: string } | { rejected: Problem };

/** Why a message is refused: which field (a JSON Pointer into the header's decoded JSON) and what is wrong. */
const rejected = (errors: FieldError[]): { rejected: Problem } => ({
  rejected: Problem.of(
    "sign-in-rejected",
    `the ${SIGN_IN_HEADER} header is not accepted (${errors.map((e) => `${e.pointer || "(header)"}: ${e.message}`).join("; ")}); ` +
      "ask the route again for a fresh challenge and sign it with the wallet that paid; nothing was charged",
    { errors, extensions: { header: SIGN_IN_HEADER } },
  ),
});

const POINTER_OF_VALIDATION: Record<SIWxValidationCode, string> = {
  invalid_siwx_domain_mismatch: "/domain",
  invalid_siwx_uri_mismatch: "/uri",
  invalid_siwx_issued_at: "/issuedAt",
  invalid_siwx_issued_at_too_old: "/issuedAt",
  invalid_siwx_issued_at_in_future: "/issuedAt",
  invalid_siwx_expiration_time: "/expirationTime",
  invalid_siwx_expired: "/expirationTime",
  invalid_siwx_not_before: "/notBefore",
  invalid_siwx_not_yet_valid: "/notBefore",
  invalid_siwx_nonce: "/nonce",
};

/**
 * Checks a SIGN-IN-WITH-X header for a request to one of `paths` (the message's uri must name one):
 * the official package parses it, checks its domain and uri against this origin and its issuedAt,
 * expirationTime and notBefore against the clock, and recovers the signer (EOA signatures, EIP-191);
 * this service adds the chain (only its own network), the route, and the nonce, which is used once
 * (stored until no message carrying it could be accepted any more, by any instance's clock). The signer's address, lower-cased,
 * or a 401 problem whose pointer names the field.
 */
export async function verifySignIn(
  header: string,
  context: { settings: SignInSettings; paths: readonly string[]; nonces: SignInNonces; now: () => number },
): Promise<SignInResult> {
  if (header.length > MAX_HEADER_LENGTH) {
    return rejected([{ pointer: "", message: `longer than ${MAX_HEADER_LENGTH} characters` }]);
  }
  let payload: SIWxPayload;
  try {
    payload = parseSIWxHeader(header);
  } catch (error) {
    return rejected([{ pointer: "", message: (error as Error).message }]);
  }
  const origin = new URL(context.settings.origin);
  const validation = await validateSIWxMessage(payload, origin, { maxAge: SIGN_IN_MAX_AGE_MS });
  if (!validation.isValid) {
    return rejected([
      { pointer: POINTER_OF_VALIDATION[validation.invalidReason], message: validation.invalidMessage },
    ]);
  }
  if (payload.chainId !== context.settings.network) {
    return rejected([
      { pointer: "/chainId", message: `this service signs in on ${context.settings.network} only` },
    ]);
  }
  if (payload.type !== "eip191") {
    return rejected([{ pointer: "/type", message: "only eip191 (EVM) signatures are accepted" }]);
  }
  const signedPath = new URL(payload.uri).pathname;
  if (!context.paths.includes(signedPath)) {
    return rejected([
      { pointer: "/uri", message: `signed for ${signedPath}, not for ${context.paths.join(" or ")}` },
    ]);
  }
  let signer: string | undefined;
  try {
    const verification = await verifySIWxSignature(payload);
    if (verification.isValid) signer = verification.payer;
  } catch {
    // A message the SIWE library cannot even format (an address that is no EIP-55 address): not signed.
  }
  if (signer === undefined) {
    return rejected([{ pointer: "/signature", message: "not a signature of this message by this address" }]);
  }
  const issuedAt = Date.parse(payload.issuedAt);
  const now = context.now();
  const keepUntil = issuedAt + SIGN_IN_MAX_AGE_MS + NONCE_CLOCK_MARGIN_MS;
  if (!(await context.nonces.useSignInNonce(payload.nonce, keepUntil, now))) {
    return rejected([{ pointer: "/nonce", message: "this nonce was used already: sign a fresh challenge" }]);
  }
  return { address: signer.toLowerCase() };
}
