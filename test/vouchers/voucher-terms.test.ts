import os from "node:os";
import { decodePaymentRequiredHeader } from "@x402/core/http";
import { x402ResourceServer } from "@x402/core/server";
import { ExactEvmScheme } from "@x402/evm/exact/server";
import { bazaarResourceServerExtension } from "@x402/extensions/bazaar";
import { describe, expect, it } from "vitest";
import { OPERATIONS } from "../../src/catalog/registry.ts";
import { loadConfig } from "../../src/config.ts";
import { paymentRequiredBody } from "../../src/http/x402-v1.ts";
import { toolTerms } from "../../src/mcp/tool-terms.ts";
import { buildRouteTerms, MAX_PAYMENT_REQUIRED_BYTES } from "../../src/payments/resource-server/terms.ts";
import {
  BATCH_SETTLEMENT,
  offersVouchers,
  type VoucherOffer,
} from "../../src/payments/vouchers/voucher-terms.ts";

/** Every registry route's terms, built as `serve` builds them, with and without the voucher offer. */
const SETTLER = "0x1111111111111111111111111111111111111111";

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
    return buildRouteTerms(OPERATIONS, settings, "https://utility402.payments.example.com", server);
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

  it("without an offer, nothing changes: exact only", async () => {
    for (const route of (await terms()).values()) {
      expect(route.paymentRequired.accepts.map((entry) => entry.scheme)).toEqual(["exact"]);
    }
  });
});
