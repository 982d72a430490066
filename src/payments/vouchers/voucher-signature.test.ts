import type { PaymentRequirements } from "@x402/core/types";
import { BATCH_SETTLEMENT_ADDRESS, BATCH_SETTLEMENT_DOMAIN, voucherTypes } from "@x402/evm";
import { computeChannelId, signVoucher } from "@x402/evm/batch-settlement/client";
import fc from "fast-check";
import { type Hex, hashTypedData, hexToBigInt, numberToHex } from "viem";
import { privateKeyToAccount } from "viem/accounts";
import { describe, expect, it } from "vitest";
import { checkVoucherPayload } from "./voucher-payload.ts";
import { voucherDigest } from "./voucher-signature.ts";

/**
 * A voucher is accepted exactly when the settlement contract would accept it in a claim
 * (contracts/x402BatchSettlement.sol, `Signatures.recover`: 65 bytes, s ≤ n/2, v 27/28 or 0/1). A voucher
 * the service answers but the contract refuses is a delivered call that can never be claimed, and it
 * fails the claim of every channel batched with it. Generated: signers, channels, amounts, and signature
 * forms (the official client's, its v as 0/1, its high-s twin, its 64-byte EIP-2098 form, another v,
 * another length, random bytes); the expected verdict follows from how each form was made.
 */
const NETWORK = "eip155:8453" as const;
const ORDER = 0xfffffffffffffffffffffffffffffffebaaedce6af48a03bbfd25e8cd0364141n;
const requirements: PaymentRequirements = {
  scheme: "batch-settlement",
  network: NETWORK,
  asset: "0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913",
  amount: "10000",
  payTo: "0x70997970C51812dc3A010C7d01b50e0d17dc79C8",
  maxTimeoutSeconds: 120,
  extra: { receiverAuthorizer: "0x3C44CdDdB6a900fa2b585dd299e03d12FA4293BC", withdrawDelay: 86_400 },
};

type Form =
  | "official"
  | "v as 0/1"
  | "high-s twin"
  | "EIP-2098 compact"
  | "other v"
  | "other length"
  | "random";
const ACCEPTED: ReadonlySet<Form> = new Set(["official", "v as 0/1"]);

/** The official client's 65-byte signature rewritten in one of the forms. */
function rewrite(signature: Hex, form: Form, noise: { v: number; bytes: Hex; extra: number }): Hex {
  const r = signature.slice(2, 66);
  const s = hexToBigInt(`0x${signature.slice(66, 130)}`);
  const v = Number.parseInt(signature.slice(130, 132), 16);
  const hex32 = (value: bigint) => numberToHex(value, { size: 32 }).slice(2);
  switch (form) {
    case "official":
      return signature;
    case "v as 0/1":
      return `0x${r}${hex32(s)}${(v - 27).toString(16).padStart(2, "0")}`;
    case "high-s twin":
      // (r, n − s) with the other recovery id: the same signer to ecrecover without the low-s rule.
      return `0x${r}${hex32(ORDER - s)}${(v === 27 ? 28 : 27).toString(16)}`;
    case "EIP-2098 compact":
      return `0x${r}${hex32(v === 28 ? s | (1n << 255n) : s)}`;
    case "other v":
      return `0x${r}${hex32(s)}${noise.v.toString(16).padStart(2, "0")}`;
    case "other length":
      return noise.extra > 0
        ? `${signature}${"00".repeat(noise.extra)}`
        : (signature.slice(0, signature.length + 2 * noise.extra) as Hex);
    case "random":
      return noise.bytes;
  }
}

describe("a voucher's signature is accepted exactly when the contract's claim would accept it", () => {
  it("generated signers, channels, amounts and signature forms", async () => {
    const forms: Form[] = [
      "official",
      "v as 0/1",
      "high-s twin",
      "EIP-2098 compact",
      "other v",
      "other length",
      "random",
    ];
    await fc.assert(
      fc.asyncProperty(
        fc.bigInt({ min: 1n, max: ORDER - 1n }),
        fc.bigInt({ min: 0n, max: (1n << 256n) - 1n }),
        fc.bigInt({ min: 1n, max: (1n << 128n) - 1n }),
        fc.constantFrom(...forms),
        fc.record({
          v: fc.integer({ min: 0, max: 255 }).filter((v) => ![0, 1, 27, 28].includes(v)),
          bytes: fc
            .uint8Array({ minLength: 65, maxLength: 65 })
            .map((b) => `0x${Buffer.from(b).toString("hex")}` as Hex),
          extra: fc.integer({ min: -3, max: 3 }).filter((n) => n !== 0),
        }),
        async (key, salt, amount, form, noise) => {
          const payer = privateKeyToAccount(numberToHex(key, { size: 32 }));
          const config = {
            payer: payer.address,
            payerAuthorizer: payer.address,
            receiver: requirements.payTo as Hex,
            receiverAuthorizer: (requirements.extra as { receiverAuthorizer: Hex }).receiverAuthorizer,
            token: requirements.asset as Hex,
            withdrawDelay: 86_400,
            salt: numberToHex(salt, { size: 32 }),
          };
          const channelId = computeChannelId(config, NETWORK);
          const voucher = await signVoucher(payer, channelId, String(amount), NETWORK);
          const signature = rewrite(voucher.signature as Hex, form, noise);
          const checked = await checkVoucherPayload(
            { type: "voucher", channelConfig: config, voucher: { ...voucher, signature } },
            requirements,
          );
          const verdict = "reason" in checked ? checked.reason : "ok";
          expect(verdict, `${form}: ${signature}`).toBe(
            ACCEPTED.has(form) ? "ok" : "invalid_batch_settlement_evm_voucher_signature",
          );
        },
      ),
      { numRuns: 300 },
    );
  });
});

describe("the voucher digest", () => {
  it("is viem's EIP-712 hashTypedData of the official voucherTypes, for generated chains, channels and amounts", () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 1, max: 2 ** 32 }),
        fc.bigInt({ min: 0n, max: (1n << 256n) - 1n }),
        fc.bigInt({ min: 0n, max: (1n << 128n) - 1n }),
        (chainId, channel, amount) => {
          const channelId = numberToHex(channel, { size: 32 });
          expect(voucherDigest(chainId, channelId, amount)).toBe(
            hashTypedData({
              domain: { ...BATCH_SETTLEMENT_DOMAIN, chainId, verifyingContract: BATCH_SETTLEMENT_ADDRESS },
              types: voucherTypes,
              primaryType: "Voucher",
              message: { channelId, maxClaimableAmount: amount },
            }),
          );
        },
      ),
      { numRuns: 500 },
    );
  });
});
