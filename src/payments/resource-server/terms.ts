import { encodePaymentRequiredHeader } from "@x402/core/http";
import type { x402ResourceServer } from "@x402/core/server";
import type { PaymentRequired, PaymentRequirements } from "@x402/core/types";
import type { AnyOperation } from "../../contract/operation.ts";
import { atomicPrice } from "../../contract/price.ts";
import { offersVouchers, type VoucherOffer, voucherRequirements } from "../vouchers/voucher-terms.ts";
import { bazaarDeclaration, compactBazaarDeclaration } from "./bazaar-declaration.ts";
import { paymentIdentifierDeclaration } from "./payment-identifier-extension.ts";

/**
 * The largest PAYMENT-REQUIRED header a route may have. nginx (and most proxies) read all of a
 * response's headers into one 4 KB buffer by default; the rest of a 402's headers (CORS, request id,
 * content type) take under 1 KB, a rejection's reason (at most 266 characters) about 360 bytes more.
 * 2800 before signed offers; each route's EIP-712 offer takes about 700 more (offer-receipt.ts), and
 * clinical-trials-query with its dataset loaded came to 3052 with a 22-character BASE_URL.
 */
export const MAX_PAYMENT_REQUIRED_BYTES = 3100;

export interface PaymentSettings {
  network: `${string}:${string}`;
  asset: `0x${string}`;
  assetName: string;
  assetVersion: string;
  payTo: `0x${string}`;
  maxTimeoutSeconds: number;
  /** An async operation's payment is held while its job runs: its authorization must last that long. */
  jobMaxTimeoutSeconds: number;
  /** The batch-settlement offer (vouchers), resolved at start; absent: `exact` only. */
  voucherOffer?: VoucherOffer;
}

/**
 * The payment terms of one route: built once at start, since they never change per request. With signed
 * offers (signed-offers.ts) `paymentRequired` and `header` are replaced, together, as the offers are renewed.
 */
export interface PaymentTerms {
  /** The `exact` quote: what x402 v1 clients and the async operations are offered. */
  requirements: PaymentRequirements;
  /** The `batch-settlement` quote offered beside it (x402 v2 over HTTP and MCP), when vouchers are on. */
  voucher?: PaymentRequirements;
  paymentRequired: PaymentRequired;
  /** base64 PAYMENT-REQUIRED header value, encoded once. */
  header: string;
  /**
   * The route's full Bazaar extension (complete input and output JSON Schemas, the output example), as
   * /.well-known/x402 lists it. The 402 carries the compact one (`paymentRequired.extensions`).
   */
  discovery: Record<string, unknown>;
  /**
   * The same operation's resource at its other doors (the HTTP route's URL, the MCP tool's): a payment
   * signed for any of them pays for this one too, so that it replays through either door.
   */
  alsoNamed?: readonly string[];
  /** The other routes sold at the same price: their quotes differ from this one in maxTimeoutSeconds only. */
  siblings?: readonly SiblingQuote[];
}

/** A route sold at the same price as another, and the maxTimeoutSeconds that tells its quote apart. */
export interface SiblingQuote {
  path: string;
  maxTimeoutSeconds: number;
}

/**
 * What an official x402 v1 client signs beyond maxTimeoutSeconds: validAfter = now − 600 and validBefore =
 * now + maxTimeoutSeconds, so that validBefore − validAfter is the quote's maxTimeoutSeconds + 600.
 */
export const V1_CLIENT_VALID_AFTER_LEAD_SECONDS = 600;

/**
 * How far apart the maxTimeoutSeconds of routes at the same price are: the x402 v1 client reads the clock
 * twice (validAfter, then validBefore), so its span is the quote's maxTimeoutSeconds + 600, or + 601 when
 * a second ticked between the two reads.
 */
const QUOTE_STEP_SECONDS = 2;

/**
 * Each operation's maxTimeoutSeconds and its siblings (the other routes at the same price). Routes at the
 * same price would otherwise have identical quotes, and nothing in a payment would say which one it was
 * quoted for: each gets its own maxTimeoutSeconds (the setting, + 2 s per route before it in path order),
 * which the payment carries in `accepted` (x402 v2, unsigned) and which an official v1 client signs (the
 * span of the authorization's validity). See docs/payments.md, "What a payment is bound to".
 */
export function routeQuotes(
  operations: readonly AnyOperation[],
  settings: PaymentSettings,
): Map<string, { maxTimeoutSeconds: number; siblings: SiblingQuote[] }> {
  const groups = new Map<string, AnyOperation[]>();
  for (const operation of operations) {
    const key = `${atomicPrice(operation)}:${baseTimeout(operation, settings)}`;
    groups.set(key, [...(groups.get(key) ?? []), operation]);
  }
  const quotes = new Map<string, { maxTimeoutSeconds: number; siblings: SiblingQuote[] }>();
  for (const group of groups.values()) {
    // The same path (an operation's GET and POST forms) is one route: the resource names it alike.
    const paths: string[] = [...new Set(group.map((operation) => operation.path))].sort();
    const timeoutOf = (path: string, operation: AnyOperation) =>
      baseTimeout(operation, settings) + QUOTE_STEP_SECONDS * paths.indexOf(path);
    for (const operation of group) {
      const siblings = group
        .filter((other) => other.path !== operation.path)
        .map((other) => ({ path: other.path, maxTimeoutSeconds: timeoutOf(other.path, other) }));
      const unique = [...new Map(siblings.map((sibling) => [sibling.path, sibling])).values()];
      quotes.set(operation.id, { maxTimeoutSeconds: timeoutOf(operation.path, operation), siblings: unique });
    }
  }
  return quotes;
}

const baseTimeout = (operation: AnyOperation, settings: PaymentSettings) =>
  operation.kind === "async" ? settings.jobMaxTimeoutSeconds : settings.maxTimeoutSeconds;

/**
 * The resource URL under which an operation is sold as an MCP tool: the x402 MCP transport names a tool
 * `mcp://tool/<name>` (coinbase/x402 specs/transports-v2/mcp.md), and the tool's name is the operation id.
 */
export const mcpToolResource = (operation: Pick<AnyOperation, "id">) => `mcp://tool/${operation.id}`;

export function paymentRequirements(
  operation: AnyOperation,
  settings: PaymentSettings,
  maxTimeoutSeconds = baseTimeout(operation, settings),
): PaymentRequirements {
  return {
    scheme: "exact",
    network: settings.network,
    asset: settings.asset,
    amount: atomicPrice(operation),
    payTo: settings.payTo,
    maxTimeoutSeconds,
    // The EIP-712 domain of the token: USDC on Base mainnet is "USD Coin", version "2".
    extra: { name: settings.assetName, version: settings.assetVersion },
  };
}

/** The encoded PAYMENT-REQUIRED header, refused (naming the route) when it outgrows MAX_PAYMENT_REQUIRED_BYTES. */
export function checkedPaymentRequiredHeader(
  name: string,
  paymentRequired: PaymentRequired,
  baseUrl: string,
): string {
  // baseUrl: what the operator can shorten (the resource URL, in every header twice with signed offers).
  const header = encodePaymentRequiredHeader(paymentRequired);
  if (header.length > MAX_PAYMENT_REQUIRED_BYTES) {
    throw new Error(
      `${name}: its PAYMENT-REQUIRED header is ${header.length} bytes (at most ${MAX_PAYMENT_REQUIRED_BYTES}, ` +
        `so that every response's headers fit a proxy's 4 KB buffer; BASE_URL is ${baseUrl.length} characters of it): ` +
        "shorten BASE_URL, or the operation's summary or example.briefInput",
    );
  }
  return header;
}

/** Every operation's terms (routeQuotes tells the quotes of routes at the same price apart), by id. */
export async function buildRouteTerms(
  operations: readonly AnyOperation[],
  settings: PaymentSettings,
  baseUrl: string,
  resourceServer: x402ResourceServer,
): Promise<Map<string, PaymentTerms>> {
  const quotes = routeQuotes(operations, settings);
  const terms = new Map<string, PaymentTerms>();
  for (const operation of operations) {
    terms.set(
      operation.id,
      await buildPaymentTerms(operation, settings, baseUrl, resourceServer, quotes.get(operation.id)),
    );
  }
  return terms;
}

/** One operation's terms; `quote` is its place among routes at the same price (buildRouteTerms). */
export async function buildPaymentTerms(
  operation: AnyOperation,
  settings: PaymentSettings,
  baseUrl: string,
  resourceServer: x402ResourceServer,
  quote?: { maxTimeoutSeconds: number; siblings: SiblingQuote[] },
): Promise<PaymentTerms> {
  const requirements = paymentRequirements(operation, settings, quote?.maxTimeoutSeconds);
  const voucher =
    settings.voucherOffer && offersVouchers(operation)
      ? voucherRequirements(requirements, settings, settings.voucherOffer)
      : undefined;
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
    voucher ? [requirements, voucher] : [requirements],
    { url, description: operation.summary, mimeType: operation.outputContentType },
    undefined,
    resourceServer.enrichExtensions(
      { ...compactBazaarDeclaration(operation), ...paymentIdentifierDeclaration() },
      context,
    ),
    context,
  );
  const header = checkedPaymentRequiredHeader(operation.id, paymentRequired, baseUrl);
  const discovery = resourceServer.enrichExtensions(bazaarDeclaration(operation), context);
  return {
    requirements,
    ...(voucher ? { voucher } : {}),
    paymentRequired,
    header,
    discovery,
    alsoNamed: [mcpToolResource(operation)],
    siblings: quote?.siblings ?? [],
  };
}
