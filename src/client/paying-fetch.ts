import { registerExactEvmScheme } from "@x402/evm/exact/client";
import { decodePaymentResponseHeader, wrapFetchWithPayment, x402Client } from "@x402/fetch";
import { privateKeyToAccount } from "viem/accounts";

/**
 * A fetch that answers 402s by paying with the official x402 client (@x402/fetch) and this key.
 * The client's own spend cap stays on, raised from its $1 default to cover the dearest product.
 */
export function createPayingFetch(privateKey: `0x${string}`, maxUsdPerPayment = "$100"): typeof fetch {
  const client = x402Client.fromConfig({
    schemes: [],
    spendControls: { maxAmountPerPayment: maxUsdPerPayment },
  });
  registerExactEvmScheme(client, { signer: privateKeyToAccount(privateKey) });
  return wrapFetchWithPayment(fetch, client) as typeof fetch;
}

/** The settlement receipt of a paid response, if it carries one. */
export function paymentReceipt(response: Response) {
  const header = response.headers.get("PAYMENT-RESPONSE");
  return header ? decodePaymentResponseHeader(header) : undefined;
}
