import { isImplemented, JOB_STATUS_PATH } from "../catalog/registry.ts";
import { SERVICE } from "../catalog/service.ts";
import { inputJsonSchema, outputJsonSchema } from "../contract/json-schema.ts";
import type { AnyFreeRoute, AnyOperation, StartedOperation } from "../contract/operation.ts";
import { mcpEndpoint } from "../mcp/endpoint.ts";
import { MCP_SKILL_NAME } from "../mcp/listing.ts";
import type { PaymentTerms } from "../payments/resource-server/terms.ts";
import { AGENT_SKILLS_PREFIX } from "./agent-skills.ts";
import { FAVICON_PATH } from "./favicon.ts";
import { LLMS_TXT_PATH } from "./llms-txt.ts";

/** /catalog.json: the service, its payment terms, and every operation and product with prices and schemas. */
export function buildCatalogDocument(
  operations: readonly AnyOperation[],
  freeRoutes: readonly AnyFreeRoute[],
  termsById: ReadonlyMap<string, PaymentTerms>,
  baseUrl: string,
  payment: { network: string; asset: string; payTo: string; mode: string },
  started: ReadonlyMap<string, StartedOperation<unknown, unknown>> = new Map(),
) {
  const entry = (operation: AnyOperation) => {
    const terms = termsById.get(operation.id) as PaymentTerms;
    return {
      id: operation.id,
      kind: operation.kind,
      method: operation.method,
      path: operation.path,
      url: baseUrl + operation.path,
      summary: operation.summary,
      description: operation.description,
      available: isImplemented(operation) && started.get(operation.id)?.available !== false,
      ...started.get(operation.id)?.catalogDetails,
      price: { usd: operation.priceUsd, atomic: terms.requirements.amount, asset: terms.requirements.asset },
      accepts: terms.voucher ? [terms.requirements, terms.voucher] : [terms.requirements],
      input:
        operation.inputFrom === "none"
          ? null
          : { in: operation.inputFrom, schema: inputJsonSchema(operation) },
      output: {
        contentType: operation.outputContentType,
        schema: operation.outputContentType === "application/json" ? outputJsonSchema(operation) : null,
      },
      example: operation.example,
    };
  };
  return {
    service: {
      name: SERVICE.name,
      description: SERVICE.description,
      url: baseUrl,
      openapi: `${baseUrl}/openapi.json`,
      x402Manifest: `${baseUrl}/.well-known/x402`,
      agentSkills: `${baseUrl}/.well-known/agent-skills/index.json`,
      llmsTxt: baseUrl + LLMS_TXT_PATH,
      icon: baseUrl + FAVICON_PATH,
    },
    payment: {
      protocol: "x402",
      x402Version: 2,
      scheme: "exact",
      network: payment.network,
      asset: payment.asset,
      assetSymbol: "USDC",
      decimals: 6,
      payTo: payment.payTo,
      testChain: payment.mode === "local",
      headers: { request: "PAYMENT-SIGNATURE", challenge: "PAYMENT-REQUIRED", receipt: "PAYMENT-RESPONSE" },
      chargedOnlyOnSuccess: true,
    },
    // The same operations as MCP tools (Streamable HTTP), paid through the same gate.
    mcp: {
      ...mcpEndpoint(operations, baseUrl),
      skill: `${baseUrl}${AGENT_SKILLS_PREFIX}/${MCP_SKILL_NAME}/SKILL.md`,
    },
    operations: operations.filter((operation) => operation.kind !== "product").map(entry),
    products: operations.filter((operation) => operation.kind === "product").map(entry),
    free: [
      ...freeRoutes.map((route) => ({
        method: "GET",
        path: route.path,
        url: baseUrl + route.path,
        summary: route.summary,
      })),
      { method: "GET", path: JOB_STATUS_PATH, summary: "Read a job's state or result" },
    ],
  };
}
