import os from "node:os";
import { decodePaymentRequiredHeader } from "@x402/core/http";
import { x402ResourceServer } from "@x402/core/server";
import { ExactEvmScheme } from "@x402/evm/exact/server";
import { bazaarResourceServerExtension } from "@x402/extensions/bazaar";
import { OFFER_RECEIPT } from "@x402/extensions/offer-receipt";
import pino from "pino";
import { describe, expect, it } from "vitest";
import { OPERATIONS } from "../../src/catalog/registry.ts";
import { loadConfig } from "../../src/config.ts";
import { paymentRequiredBody } from "../../src/http/x402-v1.ts";
import { toolTerms } from "../../src/mcp/tool-terms.ts";
import {
  DEV_OFFER_RECEIPT_KEY,
  OfferReceipts,
  offerReceiptKey,
} from "../../src/payments/resource-server/offer-receipt.ts";
import { SignedOffers } from "../../src/payments/resource-server/signed-offers.ts";
import { buildRouteTerms, MAX_PAYMENT_REQUIRED_BYTES } from "../../src/payments/resource-server/terms.ts";
import { corrective } from "../../src/payments/vouchers/voucher-corrective.ts";
import {
  BATCH_SETTLEMENT,
  offersVouchers,
  type VoucherOffer,
} from "../../src/payments/vouchers/voucher-terms.ts";

/** Every registry route's terms, built as `serve` builds them, with and without the voucher offer. */
const SETTLER = "0x1111111111111111111111111111111111111111";
const BASE_URL = "https://utility402.payments.example.com";

describe("terms with vouchers on", () => {
  const offer: VoucherOffer = { receiverAuthorizer: SETTLER, withdrawDelay: 86_400, minDeposit: "1000000" };
  const terms = async (voucherOffer?: VoucherOffer) => {
    const config = loadConfig({ DATA_DIR: os.tmpdir(), LOG_LEVEL: "silent" });
    const server = new x402ResourceServer()
      .register(config.payment.network, new ExactEvmScheme())
      .registerExtension(bazaarResourceServerExtension);
    const settings = {
      ...config.payment,
      payTo: "0x4444444444444444444444444444444444444444" as const,
      voucherOffer,
    };
    return buildRouteTerms(OPERATIONS, settings, BASE_URL, server);
  };

  it("every sync operation and product offers batch-settlement after exact (HTTP v2 and MCP); async keeps exact; v1 exact only", async () => {
    const all = await terms(offer);
    expect(OPERATIONS.some((operation) => operation.kind === "async")).toBe(true);
    expect(OPERATIONS.some((operation) => operation.kind === "product")).toBe(true);
    for (const operation of OPERATIONS) {
      const route = all.get(operation.id);
      if (!route) throw new Error(`no terms for ${operation.id}`);
      const accepts = decodePaymentRequiredHeader(route.header).accepts;
      const mcp = toolTerms(operation, route).paymentRequired.accepts;
      const v1 = paymentRequiredBody(route.paymentRequired).accepts as { scheme: string }[];
      expect(v1.map((entry) => entry.scheme)).toEqual(["exact"]);
      if (!offersVouchers(operation)) {
        expect(
          accepts.map((entry) => entry.scheme),
          operation.id,
        ).toEqual(["exact"]);
        expect(route.voucher).toBeUndefined();
        continue;
      }
      expect(
        accepts.map((entry) => entry.scheme),
        operation.id,
      ).toEqual(["exact", BATCH_SETTLEMENT]);
      expect(mcp.map((entry) => entry.scheme)).toEqual(["exact", BATCH_SETTLEMENT]);
      const [exact, voucher] = accepts as [(typeof accepts)[0], (typeof accepts)[0]];
      expect(voucher).toEqual(route.voucher);
      for (const field of ["network", "asset", "amount", "payTo", "maxTimeoutSeconds"] as const) {
        expect(voucher[field]).toEqual(exact[field]);
      }
      expect(voucher.extra).toEqual({
        receiverAuthorizer: SETTLER,
        withdrawDelay: 86_400,
        name: "USD Coin",
        version: "2",
        minDeposit: BigInt(exact.amount) > 1_000_000n ? exact.amount : "1000000",
      });
      expect(route.header.length).toBeLessThanOrEqual(MAX_PAYMENT_REQUIRED_BYTES);
    }
  });

  it("quotes a route's price as minDeposit when it is above the configured one", async () => {
    const all = await terms({ ...offer, minDeposit: "1" });
    for (const route of all.values()) {
      if (route.voucher) expect(route.voucher.extra.minDeposit).toBe(route.voucher.amount);
    }
  });

  it("signed: a route quoting vouchers carries its offers (one per entry) in the body, its header the accepts alone within the budget", async () => {
    const all = await terms(offer);
    const key = offerReceiptKey(DEV_OFFER_RECEIPT_KEY, BASE_URL, "eip155:8453");
    const offers = new SignedOffers(new OfferReceipts(key, true), pino({ level: "silent" }));
    for (const [name, route] of all) await offers.keep(route, name);
    for (const [name, route] of all) {
      expect(route.header.length, name).toBeLessThanOrEqual(MAX_PAYMENT_REQUIRED_BYTES);
      const inHeader = decodePaymentRequiredHeader(route.header);
      const signed = route.paymentRequired.extensions?.[OFFER_RECEIPT] as { info: { offers: unknown[] } };
      expect(signed.info.offers, name).toHaveLength(route.paymentRequired.accepts.length);
      expect(inHeader.accepts, name).toEqual(route.paymentRequired.accepts);
      if (route.voucher) expect(inHeader.extensions?.[OFFER_RECEIPT], name).toBeUndefined();
      else expect(inHeader).toEqual(route.paymentRequired);
    }
  });

  it("the corrective 402's PAYMENT-REQUIRED (channel and voucher state at their largest) leaves room for the other headers", async () => {
    const all = await terms(offer);
    const key = offerReceiptKey(DEV_OFFER_RECEIPT_KEY, BASE_URL, "eip155:8453");
    const offers = new SignedOffers(new OfferReceipts(key, true), pino({ level: "silent" }));
    for (const [name, route] of all) await offers.keep(route, name);
    const uint128 = ((1n << 128n) - 1n).toString();
    const sizes: Record<string, number> = {};
    for (const [name, route] of all) {
      if (!route.voucher) continue;
      const problem = corrective(route, {
        channelId: `0x${"ab".repeat(32)}`,
        network: "eip155:8453",
        config: {} as never,
        chargedCumulativeAmount: uint128,
        signedMaxClaimable: uint128,
        signature: `0x${"cd".repeat(65)}`,
        onchain: {
          balance: uint128,
          totalClaimed: uint128,
          withdrawRequestedAt: 4_102_444_800,
          refundNonce: uint128,
        },
        onchainSyncedAt: 0,
        lastRequestAt: 0,
      });
      sizes[name] = (problem.headers["PAYMENT-REQUIRED"] as string).length;
      // The rejection budget of test/hardening/headers.test.ts: 4 KB less 700 bytes for the other headers.
      expect(sizes[name], name).toBeLessThanOrEqual(4096 - 700);
    }
  });

  it("without an offer, nothing changes: exact only", async () => {
    for (const route of (await terms()).values()) {
      expect(route.paymentRequired.accepts.map((entry) => entry.scheme)).toEqual(["exact"]);
    }
  });
});
