import { encodePaymentRequiredHeader } from "@x402/core/http";
import type { PaymentRequired } from "@x402/core/types";
import { declareDiscoveryExtension } from "@x402/extensions/bazaar";
import { inputJsonSchema, outputJsonSchema } from "../contract/json-schema.ts";
import type { AnyOperation } from "../contract/operation.ts";
import { briefExampleInput, shallowInputSchema } from "../payments/resource-server/bazaar-declaration.ts";
import { mcpToolResource, type PaymentTerms } from "../payments/resource-server/terms.ts";
import { MCP_TRANSPORT } from "./endpoint.ts";

/**
 * The Bazaar discovery extension of an operation's tool, in its MCP form (the tool's name and transport),
 * complete (input and output schemas, examples) as /.well-known/x402 lists it, or compact (the first level
 * of the input schema) as a tool call's terms carry it: the x402 client echoes the extensions in every
 * payment, so the compact one keeps each paid call's message small (as the route's 402 keeps its header).
 */
export function toolDiscovery(
  operation: AnyOperation,
  form: "complete" | "compact",
): Record<string, unknown> {
  const common = {
    toolName: operation.id,
    description: operation.summary,
    transport: MCP_TRANSPORT,
    example:
      form === "complete"
        ? (operation.example.input as Record<string, unknown> | undefined)
        : briefExampleInput(operation),
  };
  return form === "complete"
    ? declareDiscoveryExtension({
        ...common,
        inputSchema: inputJsonSchema(operation),
        output: { example: operation.example.output, schema: outputJsonSchema(operation) },
      })
    : declareDiscoveryExtension({ ...common, inputSchema: shallowInputSchema(operation) });
}

/**
 * An operation's terms as its MCP tool: the route's requirements and extensions (the same price, payee
 * and asset, the same gate), the resource named `mcp://tool/<id>` and the Bazaar extension in its MCP
 * form (compact; the complete one is `discovery`). A payment signed for either name pays for both (`alsoNamed`), so it replays through either door.
 */
export function toolTerms(operation: AnyOperation, route: PaymentTerms): PaymentTerms {
  const discovery = toolDiscovery(operation, "complete");
  const paymentRequired: PaymentRequired = {
    ...route.paymentRequired,
    resource: { ...route.paymentRequired.resource, url: mcpToolResource(operation) },
    extensions: { ...route.paymentRequired.extensions, ...toolDiscovery(operation, "compact") },
  };
  return {
    requirements: route.requirements,
    ...(route.voucher ? { voucher: route.voucher } : {}),
    paymentRequired,
    header: encodePaymentRequiredHeader(paymentRequired),
    discovery,
    alsoNamed: [route.paymentRequired.resource.url],
    siblings: route.siblings,
  };
}
