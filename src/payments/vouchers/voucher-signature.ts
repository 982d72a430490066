import { BATCH_SETTLEMENT_ADDRESS, BATCH_SETTLEMENT_DOMAIN } from "@x402/evm";
import { recover } from "tiny-secp256k1";
import { concatHex, domainSeparator, type Hex, hexToBytes, keccak256, numberToHex, toHex } from "viem";

const VOUCHER_TYPEHASH = keccak256(toHex("Voucher(bytes32 channelId,uint128 maxClaimableAmount)"));
const domainSeparators = new Map<number, Hex>();

/**
 * The EIP-712 digest the payer signs for a voucher (`Voucher(bytes32 channelId,uint128
 * maxClaimableAmount)` in the "x402 Batch Settlement" domain on `chainId`): what viem's hashTypedData
 * gives, with the domain separator hashed once per chain rather than validated and hashed again on every
 * call (hashing was a tenth of a voucher call's CPU). voucher-signature.test.ts compares the two.
 */
export function voucherDigest(chainId: number, channelId: Hex, maxClaimableAmount: bigint): Hex {
  let domain = domainSeparators.get(chainId);
  if (!domain) {
    domain = domainSeparator({
      domain: { ...BATCH_SETTLEMENT_DOMAIN, chainId, verifyingContract: BATCH_SETTLEMENT_ADDRESS },
    });
    domainSeparators.set(chainId, domain);
  }
  const struct = keccak256(
    concatHex([VOUCHER_TYPEHASH, channelId, numberToHex(maxClaimableAmount, { size: 32 })]),
  );
  return keccak256(concatHex(["0x1901", domain, struct]));
}

/** secp256k1's order / 2: a larger s is the malleable twin of a valid signature, refused on chain. */
const HALF_ORDER = 0x7fffffffffffffffffffffffffffffff5d576e7357a4501ddfe92f46681b20a0n;

/**
 * The EOA that signed `digest` (lower-cased), by the settlement contract's own rule (its `Signatures.recover`), or
 * undefined where the contract would recover address(0): exactly 65 bytes (r, s, v), s at most half the
 * order, v 27 or 28 (0 and 1 taken as such). A voucher this service accepts must be one the contract
 * accepts in a claim: viem's recovery also takes a high-s twin and a 64-byte (EIP-2098) signature, which
 * the claim would refuse, failing every channel of the batch.
 *
 * libsecp256k1 (the tiny-secp256k1 WebAssembly build the settler signs with) recovers the key in a small
 * fraction of noble-curves' time: recovery was most of a voucher-paid call's CPU (bench/vouchers.bench.ts).
 */
export function contractRecoverSigner(digest: Hex, signature: string): `0x${string}` | undefined {
  if (!/^0x[0-9a-fA-F]{130}$/.test(signature)) return undefined;
  const bytes = hexToBytes(signature as Hex);
  const s = BigInt(`0x${signature.slice(66, 130)}`);
  if (s > HALF_ORDER) return undefined;
  const v = (bytes[64] as number) < 27 ? (bytes[64] as number) + 27 : (bytes[64] as number);
  if (v !== 27 && v !== 28) return undefined;
  let publicKey: Uint8Array | null;
  try {
    publicKey = recover(hexToBytes(digest), bytes.subarray(0, 64), v - 27 === 0 ? 0 : 1, false);
  } catch {
    return undefined; // r or s zero or not below the order, r not on the curve: ecrecover fails too
  }
  if (!publicKey) return undefined;
  return `0x${keccak256(publicKey.subarray(1)).slice(26)}`;
}
