import { encodePaymentRequiredHeader } from "@x402/core/http";
import type { PaymentRequired } from "@x402/core/types";
import { declareDiscoveryExtension } from "@x402/extensions/bazaar";
import { inputJsonSchema, outputJsonSchema } from "../catalog/json-schema.ts";
import type { AnyOperation } from "../catalog/operation.ts";
import { mcpToolResource, type PaymentTerms } from "../payments/resource-server/terms.ts";
import { MCP_TRANSPORT } from "./endpoint.ts";

/**
 * The Bazaar discovery extension of an operation's tool, in its MCP form (the tool's name, transport and
 * complete input schema): a tool's terms travel in a JSON-RPC result, not a header, so nothing is cut.
 */
export function toolDiscovery(operation: AnyOperation): Record<string, unknown> {
  return declareDiscoveryExtension({
    toolName: operation.id,
    description: operation.summary,
    transport: MCP_TRANSPORT,
    inputSchema: inputJsonSchema(operation),
    example: operation.example.input as Record<string, unknown> | undefined,
    output: { example: operation.example.output, schema: outputJsonSchema(operation) },
  });
}

/**
 * An operation's terms as its MCP tool: the route's requirements and extensions (the same price, payee
 * and asset, the same gate), the resource named `mcp://tool/<id>` and the Bazaar extension in its MCP
 * form. A payment signed for either name pays for both (`alsoNamed`), so it replays through either door.
 */
export function toolTerms(operation: AnyOperation, route: PaymentTerms): PaymentTerms {
  const discovery = toolDiscovery(operation);
  const paymentRequired: PaymentRequired = {
    ...route.paymentRequired,
    resource: { ...route.paymentRequired.resource, url: mcpToolResource(operation) },
    extensions: { ...route.paymentRequired.extensions, ...discovery },
  };
  return {
    requirements: route.requirements,
    paymentRequired,
    header: encodePaymentRequiredHeader(paymentRequired),
    discovery,
    alsoNamed: [route.paymentRequired.resource.url],
  };
}
