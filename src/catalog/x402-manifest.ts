import type { PaymentTerms } from "../payments/terms.ts";
import type { AnyOperation } from "./operation.ts";
import { SERVICE } from "./service.ts";

/**
 * /.well-known/x402: every paid resource with exactly the terms its 402 answers with, and its full
 * Bazaar extension (complete input and output schemas; the 402 carries a compact one that fits a header).
 */
export function buildX402Manifest(
  operations: readonly AnyOperation[],
  termsById: ReadonlyMap<string, PaymentTerms>,
  baseUrl: string,
) {
  return {
    version: 1,
    x402Version: 2,
    service: { name: SERVICE.name, description: SERVICE.description, url: baseUrl },
    resources: operations.map((operation) => {
      const { paymentRequired, discovery } = termsById.get(operation.id) as PaymentTerms;
      return {
        resource: paymentRequired.resource.url,
        method: operation.method,
        description: paymentRequired.resource.description,
        mimeType: paymentRequired.resource.mimeType,
        accepts: paymentRequired.accepts,
        extensions: discovery,
      };
    }),
  };
}
