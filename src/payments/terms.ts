import { encodePaymentRequiredHeader } from "@x402/core/http";
import type { x402ResourceServer } from "@x402/core/server";
import type { PaymentRequired, PaymentRequirements } from "@x402/core/types";
import { declareDiscoveryExtension } from "@x402/extensions/bazaar";
import { inputJsonSchema, outputJsonSchema } from "../catalog/json-schema.ts";
import type { AnyOperation } from "../catalog/operation.ts";
import { atomicPrice } from "../catalog/registry.ts";

export interface PaymentSettings {
  network: `${string}:${string}`;
  asset: `0x${string}`;
  assetName: string;
  assetVersion: string;
  payTo: `0x${string}`;
  maxTimeoutSeconds: number;
  /** An async operation's payment is held while its job runs: its authorization must last that long. */
  jobMaxTimeoutSeconds: number;
}

/** The static payment terms of one route: built once at start, since they never change per request. */
export interface PaymentTerms {
  requirements: PaymentRequirements;
  paymentRequired: PaymentRequired;
  /** base64 PAYMENT-REQUIRED header value, encoded once. */
  header: string;
}

export function paymentRequirements(operation: AnyOperation, settings: PaymentSettings): PaymentRequirements {
  return {
    scheme: "exact",
    network: settings.network,
    asset: settings.asset,
    amount: atomicPrice(operation),
    payTo: settings.payTo,
    maxTimeoutSeconds:
      operation.kind === "async" ? settings.jobMaxTimeoutSeconds : settings.maxTimeoutSeconds,
    // The EIP-712 domain of the token: USDC on Base mainnet is "USD Coin", version "2".
    extra: { name: settings.assetName, version: settings.assetVersion },
  };
}

/** The x402 Bazaar discovery extension of a route, generated from its schemas and examples. */
export function bazaarDeclaration(operation: AnyOperation): Record<string, unknown> {
  const output = { example: operation.example.output, schema: outputJsonSchema(operation) };
  if (operation.inputFrom === "body") {
    return declareDiscoveryExtension({
      bodyType: "json",
      input: operation.example.input as Record<string, unknown> | undefined,
      inputSchema: inputJsonSchema(operation),
      output,
    });
  }
  return declareDiscoveryExtension({
    input: operation.example.input as Record<string, unknown> | undefined,
    inputSchema: inputJsonSchema(operation),
    output,
  });
}

export async function buildPaymentTerms(
  operation: AnyOperation,
  settings: PaymentSettings,
  baseUrl: string,
  resourceServer: x402ResourceServer,
): Promise<PaymentTerms> {
  const requirements = paymentRequirements(operation, settings);
  const url = baseUrl + operation.path;
  // A fixed request context lets the Bazaar extension record the route's method once.
  const context = {
    method: operation.method,
    path: operation.path,
    adapter: {
      getHeader: () => undefined,
      getMethod: () => operation.method,
      getPath: () => operation.path,
      getUrl: () => url,
      getAcceptHeader: () => "application/json",
      getUserAgent: () => "",
    },
  };
  const paymentRequired = await resourceServer.createPaymentRequiredResponse(
    [requirements],
    { url, description: operation.summary, mimeType: operation.outputContentType },
    undefined,
    resourceServer.enrichExtensions(bazaarDeclaration(operation), context),
    context,
  );
  return { requirements, paymentRequired, header: encodePaymentRequiredHeader(paymentRequired) };
}
