import os from "node:os";
import { decodePaymentRequiredHeader } from "@x402/core/http";
import { x402ResourceServer } from "@x402/core/server";
import { ExactEvmScheme } from "@x402/evm/exact/server";
import { bazaarResourceServerExtension } from "@x402/extensions/bazaar";
import { describe, expect, it } from "vitest";
import { OPERATIONS } from "../../catalog/registry.ts";
import { loadConfig } from "../../config.ts";
import { paymentRequiredBody } from "../../http/x402-v1.ts";
import { toolTerms } from "../../mcp/tool-terms.ts";
import {
  BATCH_SETTLEMENT,
  buildRouteTerms,
  MAX_PAYMENT_REQUIRED_BYTES,
  offersVouchers,
  type VoucherOffer,
} from "../resource-server/terms.ts";
import { resolveVoucherOffer } from "./voucher-offer.ts";

const SETTLER = "0x1111111111111111111111111111111111111111";
const DECLARED = "0x2222222222222222222222222222222222222222";
const CONFIGURED = "0x3333333333333333333333333333333333333333";
const NETWORK = "eip155:8453" as const;
const on = { enabled: true, withdrawDelaySeconds: 86_400, minDeposit: "1000000" };

const facilitatorListing = (
  ...kinds: { scheme: string; network?: `${string}:${string}`; extra?: Record<string, unknown> }[]
) => ({
  getSupported: async () => ({
    kinds: kinds.map((kind) => ({ x402Version: 2, network: NETWORK, ...kind })),
    extensions: [],
    signers: {},
  }),
});

describe("the voucher offer follows the facilitator's /supported", () => {
  const resolve = (options: Partial<Parameters<typeof resolveVoucherOffer>[0]>) =>
    resolveVoucherOffer({
      vouchers: on,
      network: NETWORK,
      facilitator: facilitatorListing({ scheme: "exact" }),
      timeoutMs: 1000,
      ...options,
    });

  it("is not offered when switched off, even by a facilitator that supports it", async () => {
    const { offer } = await resolve({
      vouchers: { ...on, enabled: false },
      facilitator: facilitatorListing({ scheme: BATCH_SETTLEMENT }),
      settlerAddress: SETTLER,
    });
    expect(offer).toBeUndefined();
  });

  it("is not offered by a facilitator that does not list batch-settlement on the network, or cannot be asked", async () => {
    expect((await resolve({ settlerAddress: SETTLER })).offer).toBeUndefined();
    const elsewhere = facilitatorListing({ scheme: BATCH_SETTLEMENT, network: "eip155:84532" });
    expect((await resolve({ facilitator: elsewhere, settlerAddress: SETTLER })).offer).toBeUndefined();
    const down = { getSupported: () => Promise.reject(new Error("connection refused")) };
    const result = await resolve({ facilitator: down, settlerAddress: SETTLER });
    expect(result.offer).toBeUndefined();
    expect(result.why).toContain("connection refused");
    const silent = { getSupported: () => new Promise<never>(() => {}) };
    expect(
      (await resolve({ facilitator: silent, settlerAddress: SETTLER, timeoutMs: 50 })).offer,
    ).toBeUndefined();
  });

  it("names the configured authorizer, else the settler (local, self), else the facilitator's declared one", async () => {
    const listing = facilitatorListing({ scheme: BATCH_SETTLEMENT, extra: { receiverAuthorizer: DECLARED } });
    const authorizer = async (options: Partial<Parameters<typeof resolveVoucherOffer>[0]>) =>
      (await resolve({ facilitator: listing, ...options })).offer?.receiverAuthorizer;
    expect(
      await authorizer({ vouchers: { ...on, receiverAuthorizer: CONFIGURED }, settlerAddress: SETTLER }),
    ).toBe(CONFIGURED);
    expect(await authorizer({ settlerAddress: SETTLER })).toBe(SETTLER);
    expect(await authorizer({})).toBe(DECLARED);
    const none = facilitatorListing({
      scheme: BATCH_SETTLEMENT,
      extra: { receiverAuthorizer: "not an address" },
    });
    expect((await resolve({ facilitator: none })).offer).toBeUndefined();
  });
});

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
