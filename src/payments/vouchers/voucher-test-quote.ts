import type { PaymentRequirements } from "@x402/core/types";
import type { PrivateKeyAccount } from "viem/accounts";

/** For the voucher unit tests: a route's batch-settlement quote on Base, and a payer's channel under it. */
export const TEST_NETWORK = "eip155:8453" as const;

export const testVoucherQuote: PaymentRequirements = {
  scheme: "batch-settlement",
  network: TEST_NETWORK,
  asset: "0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913",
  amount: "10000",
  payTo: "0x70997970C51812dc3A010C7d01b50e0d17dc79C8",
  maxTimeoutSeconds: 120,
  extra: {
    receiverAuthorizer: "0x3C44CdDdB6a900fa2b585dd299e03d12FA4293BC",
    withdrawDelay: 86_400,
    name: "USD Coin",
    version: "2",
    minDeposit: "1000000",
  },
};

/** The channel config the quote asks of `payer` (its own authorizer, salt zero). */
export function testChannelConfig(payer: PrivateKeyAccount, quote: PaymentRequirements = testVoucherQuote) {
  const extra = quote.extra as { receiverAuthorizer: `0x${string}`; withdrawDelay: number };
  return {
    payer: payer.address,
    payerAuthorizer: payer.address,
    receiver: quote.payTo as `0x${string}`,
    receiverAuthorizer: extra.receiverAuthorizer,
    token: quote.asset as `0x${string}`,
    withdrawDelay: extra.withdrawDelay,
    salt: `0x${"00".repeat(32)}` as `0x${string}`,
  };
}
