// Signed offers (the x402 offer-receipt extension): a seller may sign, per `accepts` entry, what it
// offers (resource URL, scheme, network, asset, payee, amount, expiry). The guard checks the offer of
// the entry it is about to sign before anything is reserved or signed.
//
// The kit has no dependencies: the signatures are checked with the official verifier,
// `@x402/extensions/offer-receipt`, which a buyer of an x402 v2 client already has beside
// `@x402/fetch`. It is imported only when a 402 carries offers and the policy does not ignore them.
export const OFFER_RECEIPT_PACKAGE = "@x402/extensions/offer-receipt";
export const SIGNED_OFFER_MODES = ["ignore", "verify", "require"];

const ADDRESS = /^0x[0-9a-fA-F]{40}$/;
const same = (a, b) => typeof a === "string" && typeof b === "string" && a.toLowerCase() === b.toLowerCase();
const clip = (value) => JSON.stringify(String(value)).slice(0, 100);

let verifier;
/** The official verifier, imported once; a missing package rejects with the import's error. */
export const importOfferVerifier = () => {
  verifier ??= import(OFFER_RECEIPT_PACKAGE).catch((error) => {
    verifier = undefined;
    throw error;
  });
  return verifier;
};

/** An origin as the policy keys it ("https://host[:port]"), or undefined. */
export function originOf(url) {
  try {
    const parsed = new URL(url);
    return ["http:", "https:"].includes(parsed.protocol) ? parsed.origin : undefined;
  } catch {
    return undefined;
  }
}

/** Problems of the policy's `signedOffers` and `trustedOfferSigners` (checkPolicy's). */
export function signedOfferPolicyProblems(policy) {
  const problems = [];
  if (policy.signedOffers !== undefined && !SIGNED_OFFER_MODES.includes(policy.signedOffers)) {
    problems.push(`signedOffers: one of ${SIGNED_OFFER_MODES.map((m) => `"${m}"`).join(", ")}, got ${clip(policy.signedOffers)}`);
  }
  const trusted = policy.trustedOfferSigners;
  if (trusted === undefined) return problems;
  if (!trusted || typeof trusted !== "object" || Array.isArray(trusted)) return [...problems, 'trustedOfferSigners: an object { "<seller origin>": ["<signer address>", …] }'];
  for (const [origin, signers] of Object.entries(trusted)) {
    if (originOf(origin) !== origin) problems.push(`trustedOfferSigners: ${clip(origin)} is not an origin ("https://seller.example", no path or trailing slash)`);
    if (!Array.isArray(signers) || signers.length === 0 || !signers.every((s) => typeof s === "string" && (ADDRESS.test(s) || /^did:[a-z0-9]+:\S+$/.test(s)))) {
      problems.push(`trustedOfferSigners.${origin}: a non-empty list of signer addresses (EIP-712 offers) or key ids (did:…, JWS offers)`);
    }
  }
  return problems;
}

/** The signer and payload of one signed offer, by the official verifier; throws when it does not verify. */
async function verifyOffer(lib, offer) {
  if (offer?.format === "eip712") {
    const { signer, payload } = await lib.verifyOfferSignatureEIP712(offer);
    return { signer, payload };
  }
  if (offer?.format === "jws") {
    const payload = await lib.verifyOfferSignatureJWS(offer);
    return { signer: lib.extractJWSHeader(offer.signature).kid, payload };
  }
  throw new Error(`format ${clip(offer?.format)} is neither "eip712" nor "jws"`);
}

/** Why one offer does not cover the entry about to be paid, or its signer when it does. */
async function judgeOffer(lib, offer, { entry, resourceUrl, trusted, nowSeconds }) {
  let verified;
  try {
    verified = await verifyOffer(lib, offer);
  } catch (error) {
    return { problem: `its signature does not verify (${String(error?.message ?? error).slice(0, 200)})` };
  }
  const { signer, payload } = verified;
  const p = payload ?? {};
  const differs = [];
  if (p.scheme !== entry.scheme) differs.push(`scheme ${clip(p.scheme)} ≠ ${clip(entry.scheme)}`);
  if (p.version !== 1) differs.push(`version ${clip(p.version)} is not 1, the only offer format this guard reads`);
  // CAIP-2 in every offer, also for an x402 v1 entry named "base" (the extension's §4.2).
  if (p.network !== entry.network) differs.push(`network ${clip(p.network)} ≠ ${clip(entry.network)}`);
  if (!same(p.asset, entry.asset)) differs.push(`asset ${clip(p.asset)} ≠ ${clip(entry.asset)}`);
  if (!same(p.payTo, entry.payTo)) differs.push(`payTo ${clip(p.payTo)} ≠ ${clip(entry.payTo)}`);
  if (String(p.amount) !== entry.amount || typeof p.amount !== "string") differs.push(`amount ${clip(p.amount)} ≠ ${clip(entry.amount)}`);
  if (p.resourceUrl !== resourceUrl) differs.push(`resourceUrl ${clip(p.resourceUrl)} ≠ ${clip(resourceUrl)}`);
  if (differs.length > 0) return { problem: `it is not for the entry to be paid: ${differs.join(", ")}`, signer };
  if (!Number.isSafeInteger(p.validUntil) || p.validUntil <= nowSeconds) return { problem: `it expired (validUntil ${clip(p.validUntil)}, now ${nowSeconds})`, signer };
  if (trusted && !trusted.some((t) => same(t, signer))) return { problem: `its signer ${signer} is not in trustedOfferSigners for this origin`, signer };
  return { signer };
}

/**
 * The signed-offer check of the entry about to be signed, under the policy's `signedOffers`
 * ("verify" by default): { reasons } to refuse, or { offerSigner? } to go on.
 * - "ignore": offers are not looked at.
 * - "verify": when the 402 carries offers, one of them must verify, be for exactly this entry
 *   (scheme, network, asset, payTo, amount) and this resource URL, be unexpired, and be signed by a
 *   signer `trustedOfferSigners` lists for the seller's origin when it lists any.
 * - "require": the same, and a 402 without offers is refused.
 * `url` is the URL requested (when the guard knows it), else the seller's resource URL.
 */
export async function checkSignedOffer(policy, { paymentRequired, requirements, payment, url, now, load = importOfferVerifier }) {
  const mode = policy.signedOffers ?? "verify";
  if (mode === "ignore") return {};
  const offers = paymentRequired?.extensions?.["offer-receipt"]?.info?.offers;
  if (!Array.isArray(offers) || offers.length === 0) {
    return mode === "require" ? { reasons: ['signedOffers "require": the seller sent no signed offer'] } : {};
  }
  let lib;
  try {
    lib = await load();
  } catch (error) {
    return {
      reasons: [
        `signedOffers "${mode}": the seller signed its offers and checking them needs the package ${OFFER_RECEIPT_PACKAGE} (install @x402/extensions beside @x402/fetch, or set signedOffers to "ignore"): ${String(error?.message ?? error).slice(0, 200)}`,
      ],
    };
  }
  // The seller names its own resource URL: trust bound to an origin needs the URL actually requested.
  if (!url && Object.keys(policy.trustedOfferSigners ?? {}).length > 0) {
    return { reasons: ["trustedOfferSigners: guard the x402HTTPClient given to the transport, so the requested URL (and its origin) is known"] };
  }
  // The resource the 402 names (v2: resource.url; v1: the entry's own resource).
  const resourceUrl = paymentRequired?.resource?.url ?? requirements?.resource ?? url;
  const origin = originOf(url ?? resourceUrl);
  const trusted = origin ? policy.trustedOfferSigners?.[origin] : undefined;
  const context = { entry: { ...payment, scheme: requirements?.scheme }, resourceUrl, trusted, nowSeconds: Math.floor(now.getTime() / 1000) };
  const judged = [];
  for (const offer of offers.slice(0, 32)) {
    const verdict = await judgeOffer(lib, offer, context);
    if (!verdict.problem) return { offerSigner: verdict.signer };
    judged.push({ offer, ...verdict });
  }
  // The refusal names the offer that claims this entry (by its acceptIndex), else the first one.
  const index = Array.isArray(paymentRequired?.accepts) ? paymentRequired.accepts.indexOf(requirements) : -1;
  const named = judged.find((j) => j.offer?.acceptIndex === index && index >= 0) ?? judged[0];
  return { reasons: [`signed offer refused (${offers.length} offered, none covers the entry to be paid): ${named.problem}`] };
}
