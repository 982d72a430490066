import assert from "node:assert/strict";
import { test } from "node:test";
import { checkPolicy } from "../lib/policy.mjs";
import { checkSignedOffer } from "../lib/signed-offers.mjs";

// Offline: what the guard decides without the verifier (its own checks, and a missing package).
// The signatures themselves are checked against real sellers in the project's tests
// (test/products/paid-work-kit-signed-offers.test.ts), with @x402/extensions installed.
const USDC = "0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913";
const PAYEE = "0x70997970C51812dc3A010C7d01b50e0d17dc79C8";
const base = { version: 1, networks: ["eip155:8453"], assets: [USDC], maxPerPayment: "100", maxPerDay: "1000" };
const requirements = { scheme: "exact", network: "eip155:8453", asset: USDC, amount: "10", payTo: PAYEE, maxTimeoutSeconds: 60 };
const payment = { network: "eip155:8453", asset: USDC, amount: "10", payTo: PAYEE };
const now = new Date("2026-01-10T12:00:00Z");
const withOffers = (offers) => ({ x402Version: 2, resource: { url: "https://seller.example/x" }, accepts: [requirements], extensions: { "offer-receipt": { info: { offers } } } });
const unsigned = { x402Version: 2, resource: { url: "https://seller.example/x" }, accepts: [requirements] };
const missing = async () => {
  throw new Error("Cannot find package '@x402/extensions'");
};
const offer = { format: "eip712", acceptIndex: 0, payload: {}, signature: "0x00" };

test("signedOffers and trustedOfferSigners are checked", () => {
  assert.deepEqual(checkPolicy({ ...base, signedOffers: "require", trustedOfferSigners: { "https://seller.example": [PAYEE], "http://127.0.0.1:8080": ["did:web:seller.example#key-1"] } }), []);
  assert.deepEqual(checkPolicy({ ...base, signedOffers: "always" }), ['signedOffers: one of "ignore", "verify", "require", got "always"']);
  assert.match(checkPolicy({ ...base, trustedOfferSigners: { "https://seller.example/": [PAYEE] } }).join(), /is not an origin/);
  assert.match(checkPolicy({ ...base, trustedOfferSigners: { "https://seller.example": [] } }).join(), /non-empty list/);
  assert.match(checkPolicy({ ...base, trustedOfferSigners: { "https://seller.example": ["nobody"] } }).join(), /non-empty list/);
  assert.match(checkPolicy({ ...base, trustedOfferSigners: [PAYEE] }).join(), /an object/);
});

test('"require" refuses a 402 without offers, without loading the verifier', async () => {
  const result = await checkSignedOffer({ ...base, signedOffers: "require" }, { paymentRequired: unsigned, requirements, payment, now, load: missing });
  assert.deepEqual(result.reasons, ['signedOffers "require": the seller sent no signed offer']);
});

test('"verify" (the default) lets a 402 without offers through', async () => {
  assert.deepEqual(await checkSignedOffer(base, { paymentRequired: unsigned, requirements, payment, now, load: missing }), {});
});

test("offers present and no verifier installed: refused, naming the package", async () => {
  for (const signedOffers of [undefined, "verify", "require"]) {
    const result = await checkSignedOffer({ ...base, signedOffers }, { paymentRequired: withOffers([offer]), requirements, payment, now, load: missing });
    assert.match(result.reasons?.[0] ?? "", /needs the package @x402\/extensions\/offer-receipt/);
  }
});

test('"ignore" never looks at offers', async () => {
  assert.deepEqual(await checkSignedOffer({ ...base, signedOffers: "ignore" }, { paymentRequired: withOffers([offer]), requirements, payment, now, load: missing }), {});
});

test("an offer the verifier rejects, or for another entry, is refused with the reason", async () => {
  const lib = {
    verifyOfferSignatureEIP712: async (o) => {
      if (o.signature === "0x00") throw new Error("invalid signature length");
      return { signer: PAYEE, payload: o.payload };
    },
  };
  const load = async () => lib;
  const bad = await checkSignedOffer(base, { paymentRequired: withOffers([offer]), requirements, payment, now, load });
  assert.match(bad.reasons[0], /does not verify \(invalid signature length\)/);
  const good = { scheme: "exact", network: "eip155:8453", asset: USDC, payTo: PAYEE, amount: "10", resourceUrl: "https://seller.example/x", validUntil: now.getTime() / 1000 + 60, version: 1 };
  const signed = (payload) => ({ format: "eip712", acceptIndex: 0, payload, signature: "0x01" });
  assert.deepEqual(await checkSignedOffer(base, { paymentRequired: withOffers([signed(good)]), requirements, payment, now, load }), { offerSigner: PAYEE });
  assert.match((await checkSignedOffer(base, { paymentRequired: withOffers([signed({ ...good, amount: "1" })]), requirements, payment, now, load })).reasons[0], /not for the entry to be paid: amount "1" ≠ "10"/);
  assert.match((await checkSignedOffer(base, { paymentRequired: withOffers([signed({ ...good, validUntil: now.getTime() / 1000 })]), requirements, payment, now, load })).reasons[0], /expired/);
  const trusting = { ...base, trustedOfferSigners: { "https://seller.example": ["0x1111111111111111111111111111111111111111"] } };
  const url = "https://seller.example/x";
  assert.match((await checkSignedOffer(trusting, { paymentRequired: withOffers([signed(good)]), requirements, payment, url, now, load })).reasons[0], /not in trustedOfferSigners/);
  // The seller's own resource.url cannot pick the origin whose trust list applies.
  assert.match((await checkSignedOffer(trusting, { paymentRequired: withOffers([signed(good)]), requirements, payment, now, load })).reasons[0], /guard the x402HTTPClient/);
  assert.deepEqual(await checkSignedOffer({ ...base, trustedOfferSigners: { "https://seller.example": [PAYEE] } }, { paymentRequired: withOffers([signed(good)]), requirements, payment, url, now, load }), { offerSigner: PAYEE });
  assert.match((await checkSignedOffer(base, { paymentRequired: withOffers([{ format: "pgp" }]), requirements, payment, now, load })).reasons[0], /neither "eip712" nor "jws"/);
});
