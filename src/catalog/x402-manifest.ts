import type { DiscoveryResource } from "@x402/extensions/bazaar";
import { SIGN_IN_WITH_X } from "@x402/extensions/sign-in-with-x";
import { mcpManifest } from "../mcp/listing.ts";
import { type PublishedSigner, signedOffersNote } from "../payments/resource-server/offer-receipt.ts";
import type { PaymentTerms } from "../payments/resource-server/terms.ts";
import { SIGN_IN_HEADER } from "../payments/sign-in/sign-in-with-x.ts";
import { FAVICON_PATH } from "./favicon.ts";
import { agentGuidance } from "./llms-txt.ts";
import type { AnyOperation } from "./operation.ts";
import { SERVICE } from "./service.ts";
import { SIGN_IN_GUIDANCE, signInRoutes } from "./sign-in-routes.ts";

/** One paid resource of the manifest: a Bazaar discovery resource (the facilitators' listing), with its method. */
export type ManifestItem = Omit<DiscoveryResource, "lastUpdated"> & { method: "GET" | "POST" };

/**
 * /.well-known/x402, readable by two kinds of readers at once:
 * - x402scan's fan-out reader takes `{ version: 1, resources: [URL, …], instructions? }` (its
 *   DISCOVERY.md; members it does not name are ignored) and probes each URL for its 402;
 * - the payment manifest (SPEC.md: manifest version 1, payment protocol version 2) lists, in `items`,
 *   every paid resource with exactly the terms its 402 answers with and its full Bazaar extension
 *   (complete input and output schemas; the 402 carries a compact one that fits a header), each item
 *   in the shape of a facilitator's discovery listing (`GET /discovery/resources`), which the x402
 *   foundation's `/.well-known/x402.json` proposal reuses.
 */
export function buildX402Manifest(
  operations: readonly AnyOperation[],
  termsById: ReadonlyMap<string, PaymentTerms>,
  baseUrl: string,
  signer?: PublishedSigner,
) {
  const items = operations.map((operation): ManifestItem => {
    const { paymentRequired, discovery } = termsById.get(operation.id) as PaymentTerms;
    return {
      resource: paymentRequired.resource.url,
      type: "http",
      x402Version: 2,
      method: operation.method,
      description: paymentRequired.resource.description,
      mimeType: paymentRequired.resource.mimeType,
      serviceName: SERVICE.name,
      tags: [...operation.tags],
      iconUrl: baseUrl + FAVICON_PATH,
      accepts: paymentRequired.accepts,
      extensions: discovery,
    };
  });
  return {
    version: 1,
    x402Version: 2,
    // One URL per paid path: x402scan probes each with the method that answers 402.
    resources: [...new Set(items.map((item) => item.resource))],
    instructions: agentGuidance(baseUrl, signer),
    service: { name: SERVICE.name, description: SERVICE.description, url: baseUrl },
    items,
    // The same operations as MCP tools: each tool's terms (resource mcp://tool/<id>) and MCP Bazaar extension.
    mcp: mcpManifest(operations, termsById, baseUrl),
    // Every resource above, HTTP and MCP: its 402s carry signed offers, its paid answers signed receipts.
    ...(signer ? { offerReceipt: { ...signer, note: signedOffersNote(signer) } } : {}),
    // Where a wallet that paid signs in instead of paying again: each route's 402 carries a fresh challenge.
    signIn: {
      extension: SIGN_IN_WITH_X,
      header: SIGN_IN_HEADER,
      chains: [...new Set(items.flatMap((item) => item.accepts.map((accepted) => accepted.network)))],
      guidance: SIGN_IN_GUIDANCE,
      routes: signInRoutes(operations).map((route) => ({ ...route, resource: baseUrl + route.path })),
    },
  };
}
