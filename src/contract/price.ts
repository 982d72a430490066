import type { AnyOperation } from "./operation.ts";

const USD_DECIMALS = 6;

/** "2.00" → 2000000n, exactly (no floating point). */
export function usdToAtomic(priceUsd: string): bigint {
  const match = /^(\d+)(?:\.(\d{1,6}))?$/.exec(priceUsd);
  if (!match) throw new Error(`invalid USD price "${priceUsd}"`);
  const [, whole, fraction = ""] = match;
  return BigInt(whole as string) * 10n ** BigInt(USD_DECIMALS) + BigInt(fraction.padEnd(USD_DECIMALS, "0"));
}

/** An operation's price in USDC's smallest unit, as the x402 terms write it. */
export const atomicPrice = (operation: AnyOperation) => usdToAtomic(operation.priceUsd).toString();

/** 2500000n → "2.50": an atomic USDC amount in dollars, exactly (at least two decimals). */
export function atomicToUsd(atomic: bigint): string {
  const unit = 10n ** BigInt(USD_DECIMALS);
  const sign = atomic < 0n ? "-" : "";
  const abs = atomic < 0n ? -atomic : atomic;
  const fraction = (abs % unit).toString().padStart(USD_DECIMALS, "0").replace(/0+$/, "").padEnd(2, "0");
  return `${sign}${abs / unit}.${fraction}`;
}
