import { createHash } from "node:crypto";
import type { PaymentRequired, SettleResponse } from "@x402/core/types";
import {
  createEIP712OfferReceiptIssuer,
  OFFER_RECEIPT,
  type OfferReceiptIssuer,
  type SignTypedDataFn,
} from "@x402/extensions/offer-receipt";
import type { Logger } from "pino";
import { getAddress, isAddress } from "viem";
import { privateKeyToAccount } from "viem/accounts";

/*
 * The x402 offer-receipt extension (coinbase/x402 specs/extensions/extension-offer-and-receipt.md), signed
 * by the official issuer of @x402/extensions/offer-receipt in its EIP-712 form, with a secp256k1 key of the
 * operator's own (OFFER_RECEIPT_SIGNING_KEY): neither the settler's key nor the payee's wallet.
 * - EIP-712, not JWS: an offer rides in every 402's PAYMENT-REQUIRED header and comes back in every
 *   PAYMENT-SIGNATURE, and all of a response's headers must fit a proxy's 4 KB buffer (terms.ts). An
 *   EIP-712 offer is its JSON payload and a 65-byte signature (about 650 bytes once base64-encoded); a JWS
 *   offer base64-encodes its payload inside a header that is base64-encoded again, plus its kid (about
 *   940): with it the largest route's header was 3,076 bytes, over the budget.
 * - An EIP-712 signature verifies offline: `verifyOfferSignatureEIP712` / `verifyReceiptSignatureEIP712`
 *   recover the signer's address, which the client compares with the one this origin publishes in its
 *   did:web document (/.well-known/did.json) and in /.well-known/x402 (the specification's §4.5.1, an
 *   external key registry). Nothing is fetched per verification.
 * See docs/offer-receipt.md.
 */

/** The `info.version` of the extension's wire form (the specification's §4.1 and §5.1). */
export const OFFER_RECEIPT_VERSION = 1;

/** Where a did:web document is served: at the origin's root, or beside the base path (did:web method spec). */
export const DID_DOCUMENT_PATHS = ["/.well-known/did.json", "/did.json"] as const;

/**
 * The did:web identifier of a base URL: the host (its port percent-encoded) and each path segment
 * (`https://api.example.com/x` → `did:web:api.example.com:x`). A resolver fetches
 * `<origin>/.well-known/did.json` (no path) or `<base URL>/did.json`.
 */
export function didWebOf(baseUrl: string): string {
  const url = new URL(baseUrl);
  const segments = url.pathname.split("/").filter(Boolean).map(encodeURIComponent);
  return ["did:web", encodeURIComponent(url.host), ...segments].join(":");
}

/** The operator's signing key for offers and receipts, named under this service's did:web. */
export interface OfferReceiptKey {
  /** The address every offer and receipt recovers to: what a client checks (publishedSigner). */
  address: `0x${string}`;
  /** The key's DID URL in the did:web document: `did:web:<host>#offer-receipt`. */
  kid: string;
  did: string;
  /** The service's public base URL, which the did:web names. */
  baseUrl: string;
  /** The CAIP-2 network whose CAIP-10 account names the key in the did document. */
  network: string;
  signTypedData: SignTypedDataFn;
}

/** The key from its 0x-prefixed 32-byte hex private key, named under the base URL's did:web. */
export function offerReceiptKey(
  privateKey: `0x${string}`,
  baseUrl: string,
  network: string,
): OfferReceiptKey {
  const account = privateKeyToAccount(privateKey);
  const did = didWebOf(baseUrl);
  return {
    address: account.address,
    kid: `${did}#offer-receipt`,
    did,
    baseUrl,
    network,
    signTypedData: (typedData) =>
      account.signTypedData(typedData as Parameters<typeof account.signTypedData>[0]),
  };
}

/**
 * This service's did:web document: the signing key as its assertion method (what signs its statements),
 * named by its CAIP-10 account as an EIP-712 signer is (the signature recovers the address).
 */
export function didDocument(key: OfferReceiptKey) {
  return {
    "@context": [
      "https://www.w3.org/ns/did/v1",
      "https://w3id.org/security/suites/secp256k1recovery-2020/v2",
    ],
    id: key.did,
    verificationMethod: [
      {
        id: key.kid,
        type: "EcdsaSecp256k1RecoveryMethod2020",
        controller: key.did,
        blockchainAccountId: `${key.network}:${key.address}`,
      },
    ],
    assertionMethod: [key.kid],
  };
}

/** Who signs this service's offers and receipts, as the discovery documents publish it. */
export interface PublishedSigner {
  format: "eip712";
  /** The address verifyOfferSignatureEIP712 / verifyReceiptSignatureEIP712 must recover. */
  signer: `0x${string}`;
  did: string;
  didDocument: string;
  /** Whether a receipt names the settlement's transaction (OFFER_RECEIPT_INCLUDE_TRANSACTION). */
  receiptsIncludeTransaction: boolean;
}

export function publishedSigner(key: OfferReceiptKey, receiptsIncludeTransaction: boolean): PublishedSigner {
  const atRoot = new URL(key.baseUrl).pathname === "/";
  return {
    format: "eip712",
    signer: key.address,
    did: key.did,
    didDocument: key.baseUrl + (atRoot ? DID_DOCUMENT_PATHS[0] : DID_DOCUMENT_PATHS[1]),
    receiptsIncludeTransaction,
  };
}

/** What the discovery documents tell an agent about signed offers and receipts, in one paragraph. */
export function signedOffersNote(signer: PublishedSigner): string {
  const named = signer.receiptsIncludeTransaction ? "payer, network and transaction" : "payer and network";
  return (
    `Signed offers and receipts (x402 offer-receipt extension, EIP-712): every 402 carries, in extensions["${OFFER_RECEIPT}"].info.offers, ` +
    `an offer per accepts entry signed by ${signer.signer}; every paid answer's settlement (PAYMENT-RESPONSE, X-PAYMENT-RESPONSE, ` +
    `MCP _meta["x402/payment-response"], and a research job's payment once settled) carries in extensions["${OFFER_RECEIPT}"].info.receipt ` +
    `a signed receipt naming the resource, ${named}. Verify both with @x402/extensions/offer-receipt ` +
    `(verifyOfferSignatureEIP712, verifyReceiptSignatureEIP712): the recovered signer must be the one in ${signer.didDocument} (${signer.did}).`
  );
}

/** The offer-receipt extension as one 402 carries it: a signed offer per `accepts` entry, in order. */
export type OffersExtension = { info: { version: number; offers: unknown[] } };

/**
 * Signs offers and receipts with the operator's key through the official issuer. Offers are signed per
 * route and kept (signed-offers.ts), receipts once per settled payment.
 */
export class OfferReceipts {
  private readonly issuer: OfferReceiptIssuer;

  constructor(
    readonly key: OfferReceiptKey,
    /** Whether a receipt names the settlement's transaction (OFFER_RECEIPT_INCLUDE_TRANSACTION; default yes). */
    private readonly includeTransaction: boolean,
  ) {
    this.issuer = createEIP712OfferReceiptIssuer(key.kid, key.signTypedData);
  }

  /**
   * The signed offers of a PaymentRequired, one per `accepts` entry, for its `resource.url`, each valid for
   * `validitySeconds` (its `validUntil`).
   */
  async offers(paymentRequired: PaymentRequired, validitySeconds: number): Promise<OffersExtension> {
    const offers = await Promise.all(
      paymentRequired.accepts.map((accepted, acceptIndex) =>
        this.issuer.issueOffer(paymentRequired.resource.url, {
          acceptIndex,
          scheme: accepted.scheme,
          network: accepted.network,
          asset: accepted.asset,
          payTo: accepted.payTo,
          amount: accepted.amount,
          offerValiditySeconds: validitySeconds,
        }),
      ),
    );
    return { info: { version: OFFER_RECEIPT_VERSION, offers } };
  }

  /**
   * The settlement with its signed receipt in `extensions["offer-receipt"].info.receipt`: the resource
   * that was paid for, the payer, the network and (unless configured out) the transaction.
   */
  async withReceipt(settlement: SettleResponse, resourceUrl: string): Promise<SettleResponse> {
    if (!settlement.success || !settlement.payer) return settlement;
    const transaction =
      this.includeTransaction && settlement.transaction ? settlement.transaction : undefined;
    // The ledger keeps addresses lowercase; a receipt names the payer as its wallet shows it (EIP-55).
    const payer = isAddress(settlement.payer) ? getAddress(settlement.payer) : settlement.payer;
    const receipt = await this.issuer.issueReceipt(resourceUrl, payer, settlement.network, transaction);
    return {
      ...settlement,
      extensions: {
        ...settlement.extensions,
        [OFFER_RECEIPT]: { info: { version: OFFER_RECEIPT_VERSION, receipt } },
      },
    };
  }
}

/**
 * A settlement with its signed receipt, for a payment whose money has moved: a receipt that cannot be
 * signed is logged and left out, never a reason to withhold the answer. Without an issuer: unchanged.
 */
export async function receiptedSettlement(
  receipts: OfferReceipts | undefined,
  settlement: SettleResponse,
  resourceUrl: string,
  log: Logger,
): Promise<SettleResponse> {
  if (!receipts) return settlement;
  try {
    return await receipts.withReceipt(settlement, resourceUrl);
  } catch (error) {
    log.error({ err: error }, "settled, but its receipt could not be signed");
    return settlement;
  }
}

/**
 * A development key anyone can know, as anvil's accounts are (and none of them): local mode signs with it
 * when OFFER_RECEIPT_SIGNING_KEY is not set. Its offers and receipts prove nothing outside a test.
 */
export const DEV_OFFER_RECEIPT_KEY: `0x${string}` = `0x${createHash("sha256")
  .update("utility402 local development offer and receipt signing key")
  .digest("hex")}`;
