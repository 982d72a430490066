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
