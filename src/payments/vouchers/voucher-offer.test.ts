import { describe, expect, it } from "vitest";
import { resolveVoucherOffer } from "./voucher-offer.ts";
import { BATCH_SETTLEMENT } from "./voucher-terms.ts";

const SETTLER = "0x1111111111111111111111111111111111111111";
const DECLARED = "0x2222222222222222222222222222222222222222";
const CONFIGURED = "0x3333333333333333333333333333333333333333";
const NETWORK = "eip155:8453" as const;
const on = {
  enabled: true,
  withdrawDelaySeconds: 86_400,
  minDeposit: "1000000",
  claimIntervalMs: 600_000,
  claimThreshold: "1000000",
  watchIntervalMs: 10_000,
};

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
      chainReadable: true,
      ...options,
    });

  it("is not offered without chain reads (no RPC_URL): nothing would claim the vouchers it answers", async () => {
    const { offer, why } = await resolve({
      facilitator: facilitatorListing({ scheme: BATCH_SETTLEMENT }),
      settlerAddress: SETTLER,
      chainReadable: false,
    });
    expect(offer).toBeUndefined();
    expect(why).toMatch(/RPC_URL/);
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
