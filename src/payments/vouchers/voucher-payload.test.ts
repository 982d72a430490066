import { computeChannelId, signVoucher } from "@x402/evm/batch-settlement/client";
import fc from "fast-check";
import { privateKeyToAccount } from "viem/accounts";
import { describe, expect, it } from "vitest";
import { checkVoucherPayload } from "./voucher-payload.ts";
import { TEST_NETWORK, testChannelConfig, testVoucherQuote } from "./voucher-test-quote.ts";

/** Vouchers signed by the official `@x402/evm` client functions, checked by ours. */
const NETWORK = TEST_NETWORK;
const payer = privateKeyToAccount(`0x${"11".repeat(32)}`);
const stranger = privateKeyToAccount(`0x${"22".repeat(32)}`);
const requirements = testVoucherQuote;
const goodConfig = testChannelConfig(payer);

async function voucherPayload(
  config = goodConfig,
  options: { max?: string; signer?: typeof payer; signedMax?: string } = {},
) {
  const channelId = computeChannelId(config, NETWORK);
  const max = options.max ?? "10000";
  const voucher = await signVoucher(options.signer ?? payer, channelId, options.signedMax ?? max, NETWORK);
  return { type: "voucher", channelConfig: config, voucher: { ...voucher, maxClaimableAmount: max } };
}

const reasonOf = async (payload: unknown) => {
  const checked = await checkVoucherPayload(payload, requirements);
  return "reason" in checked ? checked.reason : "ok";
};

describe("a batch-settlement payload checked against the quote (the spec's rules that need no chain)", () => {
  it("accepts a voucher the official client signed, with the signer recovered here", async () => {
    const checked = await checkVoucherPayload(await voucherPayload(), requirements);
    expect(checked).toMatchObject({
      type: "voucher",
      channelId: computeChannelId(goodConfig, NETWORK).toLowerCase(),
      voucher: { maxClaimableAmount: "10000" },
      signatureChecked: true,
    });
  });

  it("answers each wrong field with the spec's error code", async () => {
    const tamperedId = await voucherPayload();
    tamperedId.channelConfig = { ...goodConfig, salt: `0x${"01".repeat(32)}` };
    expect(await reasonOf(tamperedId)).toBe("invalid_batch_settlement_evm_channel_id_mismatch");
    const other = "0x90F79bf6EB2c4f870365E785982E1f101E93b906" as const;
    expect(await reasonOf(await voucherPayload({ ...goodConfig, receiver: other }))).toBe(
      "invalid_batch_settlement_evm_receiver_mismatch",
    );
    expect(await reasonOf(await voucherPayload({ ...goodConfig, token: other }))).toBe(
      "invalid_batch_settlement_evm_token_mismatch",
    );
    expect(await reasonOf(await voucherPayload({ ...goodConfig, receiverAuthorizer: other }))).toBe(
      "invalid_batch_settlement_evm_receiver_authorizer_mismatch",
    );
    expect(await reasonOf(await voucherPayload({ ...goodConfig, withdrawDelay: 900 }))).toBe(
      "invalid_batch_settlement_evm_withdraw_delay_mismatch",
    );
    expect(await reasonOf(await voucherPayload(goodConfig, { signer: stranger }))).toBe(
      "invalid_batch_settlement_evm_voucher_signature",
    );
    // A signature for 10000 presented as a voucher for 20000.
    expect(await reasonOf(await voucherPayload(goodConfig, { max: "20000", signedMax: "10000" }))).toBe(
      "invalid_batch_settlement_evm_voucher_signature",
    );
    expect(await reasonOf(await voucherPayload(goodConfig, { max: "1e4", signedMax: "10000" }))).toBe(
      "invalid_batch_settlement_evm_voucher_payload",
    );
    expect(await reasonOf({ type: "claim", claims: [] })).toBe("invalid_batch_settlement_evm_payload_type");
    expect(await reasonOf({ type: "deposit", channelConfig: goodConfig })).toBe(
      "invalid_batch_settlement_evm_deposit_payload",
    );
  });

  it("leaves a voucher of a payer without an EOA authorizer (EIP-1271 wallets) to the facilitator", async () => {
    const config = { ...goodConfig, payerAuthorizer: "0x0000000000000000000000000000000000000000" as const };
    const checked = await checkVoucherPayload(
      await voucherPayload(config, { signer: stranger }),
      requirements,
    );
    expect(checked).toMatchObject({ signatureChecked: false });
  });

  it("never throws on generated hostile payloads: a refusal with a batch-settlement code", async () => {
    const good = await voucherPayload();
    const anything = fc.anything({ withBigInt: true, withNullPrototype: true });
    const mutated = fc.oneof(
      anything,
      fc.record({
        type: fc.constantFrom("voucher", "deposit", "refund"),
        channelConfig: anything,
        voucher: anything,
      }),
      fc.record({
        type: fc.constant("voucher"),
        channelConfig: fc.dictionary(fc.constantFrom(...Object.keys(goodConfig)), anything),
        voucher: fc.constant(good.voucher),
      }),
      fc.record({
        type: fc.constant("voucher"),
        channelConfig: fc.constant(goodConfig),
        voucher: fc.record({ channelId: anything, maxClaimableAmount: anything, signature: anything }),
      }),
    );
    await fc.assert(
      fc.asyncProperty(mutated, async (payload) => {
        const checked = await checkVoucherPayload(payload, requirements);
        expect("reason" in checked ? checked.reason : "ok").toMatch(/^invalid_batch_settlement_evm_/);
      }),
      { numRuns: 300 },
    );
  });
});
