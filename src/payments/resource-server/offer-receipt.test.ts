import type { PaymentRequired, SettleResponse } from "@x402/core/types";
import {
  type EIP712SignedOffer,
  type EIP712SignedReceipt,
  OFFER_RECEIPT,
  verifyOfferSignatureEIP712,
  verifyReceiptSignatureEIP712,
} from "@x402/extensions/offer-receipt";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { DEV_OFFER_RECEIPT_KEY, didWebOf, OfferReceipts, offerReceiptKey } from "./offer-receipt.ts";

const BASE_URL = "https://utility402.example.com";
const key = offerReceiptKey(DEV_OFFER_RECEIPT_KEY, BASE_URL, "eip155:8453");
const signer = new OfferReceipts(key, true);

const paymentRequired: PaymentRequired = {
  x402Version: 2,
  resource: { url: `${BASE_URL}/v1/json-diff`, description: "diff", mimeType: "application/json" },
  accepts: [
    {
      scheme: "exact",
      network: "eip155:8453",
      asset: "0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913",
      amount: "10000",
      payTo: "0x70997970C51812dc3A010C7d01b50e0d17dc79C8",
      maxTimeoutSeconds: 120,
      extra: { name: "USD Coin", version: "2" },
    },
  ],
};
const settlement: SettleResponse = {
  success: true,
  transaction: `0x${"ab".repeat(32)}`,
  network: "eip155:8453",
  payer: "0x3c44cdddb6a900fa2b585dd299e03d12fa4293bc",
};

/** The receipt a settlement carries in extensions["offer-receipt"].info.receipt. */
const receiptIn = (receipted: SettleResponse) =>
  (receipted.extensions as Record<string, { info: { receipt: EIP712SignedReceipt } }>)[OFFER_RECEIPT]?.info
    .receipt as EIP712SignedReceipt;

/** A seed of its own per property, printed, so that a failure is replayed with FC_SEED=<seed>. */
function seeded(name: string): { seed: number; numRuns: number } {
  const seed = Number(process.env.FC_SEED ?? Math.floor(Math.random() * 2 ** 31));
  console.log(`${name}: fast-check seed ${seed}`);
  return { seed, numRuns: Number(process.env.FC_NUM_RUNS ?? 150) };
}

/** A value for a payload field that differs from the one signed (same JSON type). */
const otherValue = (original: unknown): fc.Arbitrary<unknown> =>
  (typeof original === "number"
    ? (fc.nat({ max: 2 ** 40 }) as fc.Arbitrary<unknown>)
    : fc.oneof(
        fc.string(),
        fc
          .uint8Array({ minLength: 20, maxLength: 20 })
          .map((bytes) => `0x${Buffer.from(bytes).toString("hex")}`),
      )
  ).filter((value) => value !== original);

/** The signature still recovers to the signer: the tampered artifact would pass verification. */
const recovers = async (verify: () => Promise<{ signer: string }>) => {
  try {
    return (await verify()).signer === key.address;
  } catch {
    return false;
  }
};

describe("offers and receipts signed with the operator's key (verified with @x402/extensions)", () => {
  it("an offer per accepts entry and a receipt naming resource, payer, network and transaction verify as signed", async () => {
    const { info } = await signer.offers(paymentRequired, 120);
    expect(info.version).toBe(1);
    const offer = info.offers[0] as EIP712SignedOffer;
    const verified = await verifyOfferSignatureEIP712(offer);
    expect(verified.signer).toBe(key.address);
    expect(verified.payload).toMatchObject({
      resourceUrl: paymentRequired.resource.url,
      scheme: "exact",
      network: "eip155:8453",
      asset: paymentRequired.accepts[0]?.asset,
      payTo: paymentRequired.accepts[0]?.payTo,
      amount: "10000",
    });
    const receipted = await signer.withReceipt(settlement, paymentRequired.resource.url);
    const receipt = receiptIn(receipted);
    const checked = await verifyReceiptSignatureEIP712(receipt);
    expect(checked.signer).toBe(key.address);
    expect(checked.payload).toMatchObject({
      resourceUrl: paymentRequired.resource.url,
      payer: "0x3C44CdDdB6a900fa2b585dd299e03d12FA4293BC",
      network: "eip155:8453",
      transaction: settlement.transaction,
    });
  });

  it("leaves the transaction out when configured to, and signs nothing for a failed settlement", async () => {
    const private_ = new OfferReceipts(key, false);
    const receipted = await private_.withReceipt(settlement, paymentRequired.resource.url);
    const receipt = receiptIn(receipted);
    expect(receipt.payload.transaction).toBe("");
    expect((await verifyReceiptSignatureEIP712(receipt)).signer).toBe(key.address);
    const failed = { ...settlement, success: false, errorReason: "insufficient_funds" };
    expect(await signer.withReceipt(failed, paymentRequired.resource.url)).toEqual(failed);
  });

  it("a tampered offer (any payload field altered, or a signature byte) no longer verifies as ours", async () => {
    const offer = (await signer.offers(paymentRequired, 120)).info.offers[0] as EIP712SignedOffer;
    const fields = Object.keys(offer.payload) as (keyof EIP712SignedOffer["payload"])[];
    expect(fields.sort()).toEqual(
      ["amount", "asset", "network", "payTo", "resourceUrl", "scheme", "validUntil", "version"].sort(),
    );
    await fc.assert(
      fc.asyncProperty(
        fc
          .constantFrom(...fields)
          .chain((field) => fc.tuple(fc.constant(field), otherValue(offer.payload[field]))),
        async ([field, value]) => {
          const tampered = { ...offer, payload: { ...offer.payload, [field]: value } } as EIP712SignedOffer;
          expect(await recovers(() => verifyOfferSignatureEIP712(tampered))).toBe(false);
        },
      ),
      seeded("tampered offer"),
    );
    await fc.assert(
      fc.asyncProperty(fc.integer({ min: 2, max: 131 }), fc.integer({ min: 1, max: 15 }), async (at, xor) => {
        const digit = (Number.parseInt(offer.signature[at] as string, 16) ^ xor).toString(16);
        const signature = offer.signature.slice(0, at) + digit + offer.signature.slice(at + 1);
        expect(await recovers(() => verifyOfferSignatureEIP712({ ...offer, signature }))).toBe(false);
      }),
      seeded("offer with a tampered signature"),
    );
  });

  it("a tampered receipt (any payload field altered, or a signature byte) no longer verifies as ours", async () => {
    const receipted = await signer.withReceipt(settlement, paymentRequired.resource.url);
    const receipt = receiptIn(receipted);
    const fields = Object.keys(receipt.payload) as (keyof EIP712SignedReceipt["payload"])[];
    expect(fields.sort()).toEqual(["issuedAt", "network", "payer", "resourceUrl", "transaction", "version"]);
    await fc.assert(
      fc.asyncProperty(
        fc
          .constantFrom(...fields)
          .chain((field) => fc.tuple(fc.constant(field), otherValue(receipt.payload[field]))),
        async ([field, value]) => {
          const tampered = {
            ...receipt,
            payload: { ...receipt.payload, [field]: value },
          } as EIP712SignedReceipt;
          expect(await recovers(() => verifyReceiptSignatureEIP712(tampered))).toBe(false);
        },
      ),
      seeded("tampered receipt"),
    );
    await fc.assert(
      fc.asyncProperty(fc.integer({ min: 2, max: 131 }), fc.integer({ min: 1, max: 15 }), async (at, xor) => {
        const digit = (Number.parseInt(receipt.signature[at] as string, 16) ^ xor).toString(16);
        const signature = receipt.signature.slice(0, at) + digit + receipt.signature.slice(at + 1);
        expect(await recovers(() => verifyReceiptSignatureEIP712({ ...receipt, signature }))).toBe(false);
      }),
      seeded("receipt with a tampered signature"),
    );
  });

  it("names the key under the base URL's did:web (port and path as the did:web method encodes them)", () => {
    expect(didWebOf("http://127.0.0.1:8402")).toBe("did:web:127.0.0.1%3A8402");
    expect(didWebOf("https://api.example.com/utility402")).toBe("did:web:api.example.com:utility402");
    expect(key.kid).toBe("did:web:utility402.example.com#offer-receipt");
  });
});
