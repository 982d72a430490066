import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import type { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { decodePaymentRequiredHeader } from "@x402/core/http";
import type { PaymentRequired } from "@x402/core/types";
import {
  convertNetworkStringToCAIP2,
  type DecodedOffer,
  decodeSignedOffers,
  type EIP712SignedOffer,
  type EIP712SignedReceipt,
  extractOffersFromPaymentRequired,
  extractReceiptFromResponse,
  findAcceptsObjectFromSignedOffer,
  OFFER_RECEIPT,
  type SignedReceipt,
  verifyOfferSignatureEIP712,
  verifyReceiptMatchesOffer,
  verifyReceiptSignatureEIP712,
} from "@x402/extensions/offer-receipt";
import { createWalletClient, http, publicActions } from "viem";
import { privateKeyToAccount } from "viem/accounts";
import { base } from "viem/chains";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { decodeXPaymentResponse, wrapFetchWithPayment as wrapFetchWithPaymentV1 } from "x402-fetch";
import type { AnyOperation } from "../src/catalog/operation.ts";
import { devPrivateKey } from "../src/chain/dev-accounts.ts";
import { createPayer } from "../src/client/paying-fetch.ts";
import { jsonDiff } from "../src/operations/json-diff/index.ts";
import { researchBrief } from "../src/operations/research-brief/index.ts";
import { buildProducts } from "../src/products/build.ts";
import { products } from "../src/products/index.ts";
import { jsonPost, startTestService, type TestService } from "./helpers/service.ts";
import { callTool, connectMcp, receiptOf, termsOf, toolPayer } from "./mcp/paying-mcp-client.ts";
import { type SourceStandIns, startSourceStandIns } from "./operations/research-sources-standins.ts";

const KIT = "agent-safe-paid-work-kit";
const kit = products.find((operation) => operation.path === `/v1/products/${KIT}`) as AnyOperation;

/**
 * Every 402 carries a signed offer per `accepts` entry and every paid answer a signed receipt, on every
 * door, checked only with @x402/extensions' own functions (verifyOfferSignatureEIP712,
 * verifyReceiptSignatureEIP712, extractReceiptFromResponse, verifyReceiptMatchesOffer …) against the
 * signer this origin publishes in its did:web document.
 */
describe("signed offers and receipts (x402 offer-receipt), verified with @x402/extensions", () => {
  let standIns: SourceStandIns;
  let service: TestService;
  let mcp: Client;
  let signer: string;
  const work = fs.mkdtempSync(path.join(os.tmpdir(), "utility402-offers-"));

  beforeAll(async () => {
    standIns = await startSourceStandIns();
    const releasesDir = path.join(work, "releases");
    const [built] = await buildProducts({ releasesDir, clinicalDb: path.join(work, "none.sqlite") }, [KIT]);
    if (built?.state === "unbuildable") throw new Error(built.reason);
    service = await startTestService(
      {
        RELEASES_DIR: releasesDir,
        RESEARCH_WIKIPEDIA_URL: standIns.wikipediaUrl,
        RESEARCH_CROSSREF_URL: standIns.crossrefUrl,
        RESEARCH_CONTACT: "research-ops@example.org",
      },
      { operations: [jsonDiff, researchBrief, kit] },
    );
    mcp = await connectMcp(service.url);
    // The signer as a client learns it: from the origin's did:web document.
    const did = await (await fetch(`${service.url}/.well-known/did.json`)).json();
    signer = (did.verificationMethod[0].blockchainAccountId as string).split(":")[2] as string;
  }, 180_000);
  afterAll(async () => {
    await mcp?.close();
    await service?.stop();
    await standIns?.stop();
    fs.rmSync(work, { recursive: true, force: true });
  });

  /** Each offer verified and matched to its `accepts` entry; the one for the first entry, decoded. */
  async function verifiedOffer(paymentRequired: PaymentRequired, resourceUrl: string): Promise<DecodedOffer> {
    const offers = extractOffersFromPaymentRequired(paymentRequired);
    expect(offers).toHaveLength(paymentRequired.accepts.length);
    for (const offer of offers) {
      expect(offer.format).toBe("eip712");
      const verified = await verifyOfferSignatureEIP712(offer as EIP712SignedOffer);
      expect(verified.signer).toBe(signer);
      expect(verified.payload.resourceUrl).toBe(resourceUrl);
      expect(verified.payload.validUntil).toBeGreaterThan(Date.now() / 1000);
      // A v1 body's entries name the network "base"; the offer, CAIP-2 (the specification's §4.2).
      const accepts = paymentRequired.accepts.map((accepted) => ({
        ...accepted,
        network: convertNetworkStringToCAIP2(accepted.network) as `${string}:${string}`,
      }));
      expect(findAcceptsObjectFromSignedOffer(offer, accepts)).toBeDefined();
    }
    return decodeSignedOffers(offers)[0] as DecodedOffer;
  }

  /** The receipt verified: this origin's signer, the resource, the payer, the network, the transaction. */
  async function verifyReceipt(
    receipt: SignedReceipt | undefined,
    expected: { offer: DecodedOffer; payer: string; transaction: string },
  ) {
    expect(receipt?.format).toBe("eip712");
    const verified = await verifyReceiptSignatureEIP712(receipt as EIP712SignedReceipt);
    expect(verified.signer).toBe(signer);
    expect(verified.payload).toMatchObject({
      resourceUrl: expected.offer.resourceUrl,
      payer: expected.payer,
      network: "eip155:8453",
      transaction: expected.transaction,
    });
    expect(verifyReceiptMatchesOffer(receipt as SignedReceipt, expected.offer, [expected.payer])).toBe(true);
  }

  it("the did:web document names the signer (not the settler, not the payee), at both did:web paths", async () => {
    const atRoot = await fetch(`${service.url}/.well-known/did.json`);
    expect(atRoot.headers.get("content-type")).toBe("application/did+json");
    const document = await atRoot.json();
    expect(await (await fetch(`${service.url}/did.json`)).json()).toEqual(document);
    expect(document.id).toBe(`did:web:${encodeURIComponent(new URL(service.url).host)}`);
    expect(document.assertionMethod).toEqual([document.verificationMethod[0].id]);
    expect(signer).toMatch(/^0x[0-9a-fA-F]{40}$/);
    expect(signer).not.toBe(service.payTo);
    expect(signer).not.toBe(privateKeyToAccount(devPrivateKey(0)).address);
    const manifest = await (await fetch(`${service.url}/.well-known/x402`)).json();
    expect(manifest.offerReceipt).toMatchObject({ format: "eip712", signer, did: document.id });
  });

  it("HTTP v2, json-diff: the 402's offer and the paid answer's receipt (with its transaction) verify", async () => {
    const url = `${service.url}/v1/json-diff`;
    const unpaid = await fetch(url, jsonPost(jsonDiff.example.input));
    expect(unpaid.status).toBe(402);
    const terms = decodePaymentRequiredHeader(unpaid.headers.get("PAYMENT-REQUIRED") as string);
    const offer = await verifiedOffer(terms, url);
    // The body (what a v1 client reads) carries the same offers.
    expect((await unpaid.json()).extensions[OFFER_RECEIPT]).toEqual(terms.extensions?.[OFFER_RECEIPT]);

    const payer = createPayer(devPrivateKey(2));
    const paid = await payer.fetch(url, jsonPost(jsonDiff.example.input));
    expect(paid.status).toBe(200);
    const settlement = JSON.parse(
      Buffer.from(paid.headers.get("PAYMENT-RESPONSE") as string, "base64").toString(),
    );
    await verifyReceipt(extractReceiptFromResponse(paid), {
      offer,
      payer: payer.address,
      transaction: settlement.transaction,
    });
  });

  it("HTTP v2, a product download: offer and receipt verify", async () => {
    const url = `${service.url}/v1/products/${KIT}`;
    const unpaid = await fetch(url);
    expect(unpaid.status).toBe(402);
    const offer = await verifiedOffer(
      decodePaymentRequiredHeader(unpaid.headers.get("PAYMENT-REQUIRED") as string),
      url,
    );
    const payer = createPayer(devPrivateKey(3));
    const paid = await payer.fetch(url);
    expect(paid.status).toBe(200);
    expect(paid.headers.get("content-type")).toBe("application/zip");
    const receipt = extractReceiptFromResponse(paid) as EIP712SignedReceipt;
    expect(receipt.payload.transaction).toMatch(/^0x[0-9a-f]{64}$/);
    await verifyReceipt(receipt, { offer, payer: payer.address, transaction: receipt.payload.transaction });
    await paid.arrayBuffer();
  });

  it("HTTP v1 (x402-fetch): the 402 body's offers and the X-PAYMENT-RESPONSE receipt verify", async () => {
    const url = `${service.url}/v1/json-diff`;
    const unpaid = await fetch(url, jsonPost(jsonDiff.example.input));
    const body = await unpaid.json();
    expect(body.x402Version).toBe(1);
    const offer = await verifiedOffer(body as PaymentRequired, url);
    const wallet = createWalletClient({
      account: privateKeyToAccount(devPrivateKey(6)),
      chain: base,
      transport: http(service.localChain?.rpcUrl as string),
    }).extend(publicActions);
    const paid = await wrapFetchWithPaymentV1(
      fetch,
      wallet as never,
      100_000_000n,
    )(url, jsonPost(jsonDiff.example.input));
    expect(paid.status).toBe(200);
    const settlement = decodeXPaymentResponse(paid.headers.get("X-PAYMENT-RESPONSE") as string) as {
      transaction: string;
      extensions?: Record<string, { info: { receipt: SignedReceipt } }>;
    };
    // The receipt's network is CAIP-2 (the specification's §5.2), the v1 settlement's "base".
    await verifyReceipt(settlement.extensions?.[OFFER_RECEIPT]?.info.receipt, {
      offer,
      payer: wallet.account.address,
      transaction: settlement.transaction,
    });
  });

  it("MCP, json-diff tool: the unpaid result's offer (mcp://tool/json-diff) and the _meta receipt verify", async () => {
    const args = jsonDiff.example.input as Record<string, unknown>;
    const terms = termsOf(await callTool(mcp, "json-diff", args));
    const offer = await verifiedOffer(terms, "mcp://tool/json-diff");
    const payer = toolPayer(devPrivateKey(7));
    const paid = await callTool(mcp, "json-diff", args, await payer.sign(terms));
    expect(paid.isError, JSON.stringify(paid).slice(0, 300)).toBeFalsy();
    const settlement = receiptOf(paid) as {
      transaction: string;
      extensions?: Record<string, { info: { receipt: SignedReceipt } }>;
    };
    await verifyReceipt(settlement.extensions?.[OFFER_RECEIPT]?.info.receipt, {
      offer,
      payer: payer.address,
      transaction: settlement.transaction,
    });
  });

  it("research brief: the 402's offer verifies; the receipt is issued on delivery and shown on the job view (HTTP and get_job)", async () => {
    const url = `${service.url}/v1/research-brief`;
    const request = {
      question: "What is the Python programming language used for in ecological research?",
      requiredSources: 3,
      maxWords: 300,
    };
    const unpaid = await fetch(url, jsonPost(request));
    expect(unpaid.status).toBe(402);
    const offer = await verifiedOffer(
      decodePaymentRequiredHeader(unpaid.headers.get("PAYMENT-REQUIRED") as string),
      url,
    );
    const payer = createPayer(devPrivateKey(8));
    const accepted = await payer.fetch(url, jsonPost(request));
    expect(accepted.status).toBe(202);
    // Held, not settled: no receipt yet.
    expect(extractReceiptFromResponse(accepted)).toBeUndefined();
    const { statusUrl, jobId } = await accepted.json();
    let job: {
      status?: string;
      payment?: { state?: string; transaction?: string; receipt?: SignedReceipt };
    } = {};
    for (let look = 0; look < 300; look++) {
      job = await (await fetch(statusUrl)).json();
      if (job.status === "failed" || (job.status === "succeeded" && job.payment?.state === "settled")) break;
      expect(job.payment?.receipt).toBeUndefined();
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    expect(job.status).toBe("succeeded");
    expect(job.payment?.state).toBe("settled");
    await verifyReceipt(job.payment?.receipt, {
      offer,
      payer: payer.address,
      transaction: job.payment?.transaction as string,
    });
    const viaMcp = await callTool(mcp, "get_job", { id: jobId });
    const shown = viaMcp.structuredContent?.payment as { receipt?: unknown } | undefined;
    expect(shown?.receipt).toEqual(job.payment?.receipt);
  });
});
