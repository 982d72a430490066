import { registerExactEvmScheme } from "@x402/evm/exact/client";
import { decodePaymentResponseHeader, wrapFetchWithPayment, x402Client, x402HTTPClient } from "@x402/fetch";
import { privateKeyToAccount } from "viem/accounts";

export interface Payer {
  address: `0x${string}`;
  /** fetch that answers 402s by paying (the official @x402/fetch wrapper). */
  fetch: typeof fetch;
  /** Signs a payment for a 402 response without sending it: the PAYMENT-SIGNATURE header(s). */
  signPayment(paymentRequired: Response): Promise<Record<string, string>>;
}

/**
 * An x402 payer built from the official client packages and one private key. The client's own
 * spend cap stays on, raised from its $1 default to cover the dearest product.
 */
export function createPayer(privateKey: `0x${string}`, maxUsdPerPayment = "$100"): Payer {
  const account = privateKeyToAccount(privateKey);
  const client = x402Client.fromConfig({
    schemes: [],
    spendControls: { maxAmountPerPayment: maxUsdPerPayment },
  });
  registerExactEvmScheme(client, { signer: account });
  const httpClient = new x402HTTPClient(client);
  return {
    address: account.address,
    fetch: wrapFetchWithPayment(fetch, client) as typeof fetch,
    async signPayment(response) {
      const body = await response
        .clone()
        .json()
        .catch(() => undefined);
      const paymentRequired = httpClient.getPaymentRequiredResponse(
        (name) => response.headers.get(name),
        body,
      );
      return httpClient.encodePaymentSignatureHeader(await httpClient.createPaymentPayload(paymentRequired));
    },
  };
}

/** The settlement receipt of a paid response, if it carries one. */
export function paymentReceipt(response: Response) {
  const header = response.headers.get("PAYMENT-RESPONSE");
  return header ? decodePaymentResponseHeader(header) : undefined;
}
