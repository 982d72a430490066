import os from "node:os";
import { decodePaymentRequiredHeader, decodePaymentSignatureHeader } from "@x402/core/http";
import { x402ResourceServer } from "@x402/core/server";
import { ExactEvmScheme } from "@x402/evm/exact/server";
import {
  bazaarResourceServerExtension,
  extractDiscoveryInfo,
  validateDiscoveryExtension,
} from "@x402/extensions/bazaar";
import pino from "pino";
import { generatePrivateKey } from "viem/accounts";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { OPERATIONS } from "../../src/catalog/registry.ts";
import { devAccount, devPrivateKey } from "../../src/chain/dev-accounts.ts";
import { createPayer } from "../../src/client/paying-fetch.ts";
import { loadConfig } from "../../src/config.ts";
import { defineOperation } from "../../src/contract/operation.ts";
import { buildX402Manifest } from "../../src/documents/x402-manifest.ts";
import { csvCleanup } from "../../src/operations/csv-cleanup/index.ts";
import { bazaarDeclaration } from "../../src/payments/resource-server/bazaar-declaration.ts";
import {
  DEV_OFFER_RECEIPT_KEY,
  OfferReceipts,
  offerReceiptKey,
} from "../../src/payments/resource-server/offer-receipt.ts";
import { MAX_REASON_LENGTH, shortReason } from "../../src/payments/resource-server/short-reason.ts";
import { SignedOffers } from "../../src/payments/resource-server/signed-offers.ts";
import {
  buildPaymentTerms,
  buildRouteTerms,
  MAX_PAYMENT_REQUIRED_BYTES,
  type PaymentTerms,
} from "../../src/payments/resource-server/terms.ts";
import { jsonPost, startTestService, type TestService } from "../helpers/service.ts";

/** nginx's default proxy_buffer_size (one memory page): all of a response's headers must fit in it. */
const PROXY_BUFFER = 4096;
// A realistic public base URL (it is in every header: the resource's url).
const BASE_URL = "https://utility402.payments.example.com";

/** Terms as `serve` keeps them: carrying their signed offers (signed-offers.ts). */
async function withSignedOffers(terms: Iterable<[string, PaymentTerms]>, baseUrl: string) {
  const key = offerReceiptKey(DEV_OFFER_RECEIPT_KEY, baseUrl, "eip155:8453");
  const offers = new SignedOffers(new OfferReceipts(key, true), pino({ level: "silent" }));
  for (const [name, routeTerms] of terms) await offers.keep(routeTerms, name);
}

/** The payment terms of every registry route, built and signed as `serve` builds and signs them. */
async function allTerms() {
  const config = loadConfig({ DATA_DIR: os.tmpdir(), LOG_LEVEL: "silent" });
  const server = new x402ResourceServer()
    .register(config.payment.network, new ExactEvmScheme())
    .registerExtension(bazaarResourceServerExtension);
  const settings = { ...config.payment, payTo: devAccount(1).address };
  const terms = await buildRouteTerms(OPERATIONS, settings, BASE_URL, server);
  await withSignedOffers(terms, BASE_URL);
  return terms;
}

/** A 402 as the service sends it, for the official client to read. */
const unpaid = (terms: PaymentTerms) =>
  new Response(JSON.stringify({ status: 402, ...terms.paymentRequired }), {
    status: 402,
    headers: { "content-type": "application/problem+json", "PAYMENT-REQUIRED": terms.header },
  });

describe("every route's payment headers fit a stock proxy's 4 KB header buffer", () => {
  let terms: Map<string, PaymentTerms>;
  const payer = createPayer(devPrivateKey(3));

  beforeAll(async () => {
    terms = await allTerms();
  });

  it("PAYMENT-REQUIRED is at most MAX_PAYMENT_REQUIRED_BYTES on every route, and carries a valid Bazaar extension", () => {
    expect(terms.size).toBe(OPERATIONS.length);
    for (const operation of OPERATIONS) {
      const { header, paymentRequired } = terms.get(operation.id) as PaymentTerms;
      expect(header.length, operation.id).toBeLessThanOrEqual(MAX_PAYMENT_REQUIRED_BYTES);
      const decoded = decodePaymentRequiredHeader(header);
      expect(decoded).toEqual(paymentRequired);
      const bazaar = decoded.extensions?.bazaar as Parameters<typeof validateDiscoveryExtension>[0];
      expect(validateDiscoveryExtension(bazaar), operation.id).toEqual({ valid: true });
      // Callable from the 402 alone: the method and the route's own example input (its brief one if any),
      // which the route accepts.
      const input = bazaar.info.input as Record<string, unknown>;
      const example = operation.example.briefInput ?? operation.example.input;
      expect(input.method, operation.id).toBe(operation.method);
      if (operation.inputFrom === "body") expect(input.body, operation.id).toEqual(example);
      else expect(input.queryParams ?? {}, operation.id).toEqual(example ?? {});
      expect(operation.input.safeParse(example ?? {}).success, operation.id).toBe(true);
    }
  });

  it("the official client's PAYMENT-SIGNATURE is at most 4 KB on every route, and the facilitator can catalog it", async () => {
    const sizes: Record<string, number> = {};
    for (const operation of OPERATIONS) {
      const routeTerms = terms.get(operation.id) as PaymentTerms;
      const headers = await payer.signPayment(unpaid(routeTerms));
      const signature = headers["PAYMENT-SIGNATURE"] as string;
      sizes[operation.id] = signature.length;
      expect(signature.length, operation.id).toBeLessThanOrEqual(PROXY_BUFFER);
      // The client echoes the compact extension; a facilitator validates and catalogs it from there.
      const payload = decodePaymentSignatureHeader(signature);
      expect(payload.extensions).toEqual(routeTerms.paymentRequired.extensions);
      const discovered = extractDiscoveryInfo(payload, routeTerms.requirements);
      expect(discovered, operation.id).toMatchObject({
        resourceUrl: BASE_URL + operation.path,
        method: operation.method,
      });
    }
    expect(Object.keys(sizes)).toHaveLength(OPERATIONS.length);
  });

  it("a rejected payment's PAYMENT-REQUIRED (the longest reason) still leaves room for the other headers", () => {
    for (const operation of OPERATIONS) {
      const { paymentRequired } = terms.get(operation.id) as PaymentTerms;
      const error = `${"x".repeat(64)}: ${"y".repeat(MAX_REASON_LENGTH)}`;
      const header = Buffer.from(JSON.stringify({ ...paymentRequired, error })).toString("base64");
      expect(header.length, operation.id).toBeLessThanOrEqual(PROXY_BUFFER - 700);
    }
  });

  it("leaves room for a long public base URL: 100 characters, every route's PAYMENT-REQUIRED within budget", async () => {
    const config = loadConfig({ DATA_DIR: os.tmpdir(), LOG_LEVEL: "silent" });
    const server = new x402ResourceServer()
      .register(config.payment.network, new ExactEvmScheme())
      .registerExtension(bazaarResourceServerExtension);
    const settings = { ...config.payment, payTo: devAccount(1).address };
    const longBaseUrl = `https://${"x".repeat(60)}.payments.example.com/utility402`;
    expect(longBaseUrl.length).toBe(100);
    for (const operation of OPERATIONS) {
      const terms = await buildPaymentTerms(operation, settings, longBaseUrl, server);
      await withSignedOffers([[operation.id, terms]], longBaseUrl);
      expect(terms.paymentRequired.extensions?.["offer-receipt"], operation.id).toBeDefined();
      expect(terms.header.length, operation.id).toBeLessThanOrEqual(MAX_PAYMENT_REQUIRED_BYTES);
    }
  });

  it("a route whose PAYMENT-REQUIRED would outgrow the budget is refused at start, naming the route", async () => {
    const config = loadConfig({ DATA_DIR: os.tmpdir(), LOG_LEVEL: "silent" });
    const server = new x402ResourceServer()
      .register(config.payment.network, new ExactEvmScheme())
      .registerExtension(bazaarResourceServerExtension);
    const rows = Array.from({ length: 40 }, (_, i) => ({ id: `row-${i}`, name: ` Name ${i} ` }));
    const bloated = defineOperation({
      ...csvCleanup,
      id: "test-bloated-example",
      path: "/v1/test-bloated-example",
      example: { ...csvCleanup.example, input: { rows, keyColumns: ["id"] } },
    });
    const settings = { ...config.payment, payTo: devAccount(1).address };
    await expect(buildPaymentTerms(bloated, settings, BASE_URL, server)).rejects.toThrow(
      /^test-bloated-example: its PAYMENT-REQUIRED header is \d+ bytes \(at most 3100/,
    );
  });

  it("/.well-known/x402 keeps the full Bazaar extension (complete input and output schemas), valid", () => {
    const manifest = buildX402Manifest(OPERATIONS, terms, BASE_URL);
    for (const operation of OPERATIONS) {
      const entry = manifest.items.find(
        (item) => item.resource === BASE_URL + operation.path && item.method === operation.method,
      ) as unknown as { extensions: { bazaar: Parameters<typeof validateDiscoveryExtension>[0] } };
      const bazaar = entry.extensions.bazaar;
      expect(validateDiscoveryExtension(bazaar), operation.id).toEqual({ valid: true });
      const full = bazaarDeclaration(operation).bazaar as typeof bazaar;
      expect(bazaar.info).toEqual({ ...full.info, input: { ...full.info.input, method: operation.method } });
      const compact = (terms.get(operation.id) as PaymentTerms).paymentRequired.extensions
        ?.bazaar as typeof bazaar;
      // The same input, but for the example: the header may carry a brief one.
      const compactInput = compact.info.input as Record<string, unknown>;
      expect(bazaar.info.input).toEqual(
        operation.example.briefInput ? { ...compactInput, body: operation.example.input } : compactInput,
      );
      expect(JSON.stringify(bazaar).length).toBeGreaterThan(JSON.stringify(compact).length);
    }
  });
});

describe("shortReason", () => {
  it("keeps the first paragraph of a viem error on one line, without the call dump", () => {
    const viem = [
      'The contract function "transferWithAuthorization" reverted with the following reason:',
      "ERC20: transfer amount exceeds balance",
      "",
      "Contract Call:",
      "  address:   0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913",
      "",
      "Docs: https://viem.sh/docs/contract/readContract",
      "Version: viem@2.57.1",
    ].join("\n");
    expect(shortReason(viem)).toBe(
      'The contract function "transferWithAuthorization" reverted with the following reason: ERC20: transfer amount exceeds balance',
    );
  });

  it("bounds the length, and leaves a short reason as it is", () => {
    const long = shortReason("a ".repeat(500));
    expect(long.length).toBe(MAX_REASON_LENGTH);
    expect(long.endsWith("…")).toBe(true);
    expect(shortReason("insufficient_funds")).toBe("insufficient_funds");
    expect(shortReason("x".repeat(100), 64)).toHaveLength(64);
  });
});

describe("a payer without funds", () => {
  let service: TestService;

  beforeAll(async () => {
    service = await startTestService({}, { operations: [csvCleanup] });
  });
  afterAll(async () => {
    await service?.stop();
  });

  it("gets a 402 whose reason is one short line (no viem call dump), in headers that fit 4 KB", async () => {
    const broke = createPayer(generatePrivateKey());
    const response = await broke.fetch(`${service.url}/v1/csv-cleanup`, jsonPost(csvCleanup.example.input));
    expect(response.status).toBe(402);
    const header = response.headers.get("PAYMENT-REQUIRED") as string;
    const { error } = decodePaymentRequiredHeader(header);
    expect(error).toMatch(/insufficient/i);
    expect(error).not.toMatch(/[\r\n]/);
    expect(error).not.toContain("Contract Call");
    expect((error as string).length).toBeLessThanOrEqual(64 + 2 + MAX_REASON_LENGTH);
    const problem = await response.json();
    expect(problem.detail).not.toMatch(/[\r\n]/);
    expect(problem.detail.length).toBeLessThanOrEqual(MAX_REASON_LENGTH);
    expect(problem.error).toBe(error);
    let block = `HTTP/1.1 ${response.status} Payment Required\r\n`;
    for (const [name, value] of response.headers) block += `${name}: ${value}\r\n`;
    expect(Buffer.byteLength(`${block}\r\n`)).toBeLessThanOrEqual(PROXY_BUFFER);
  });
});
