import { MCP_PATH } from "../mcp/endpoint.ts";
import { MCP_SKILL_NAME } from "../mcp/listing.ts";
import { type PublishedSigner, signedOffersNote } from "../payments/resource-server/offer-receipt.ts";
import { AGENT_SKILLS_PREFIX, skillPath } from "./agent-skills.ts";
import type { AnyFreeRoute, AnyOperation } from "./operation.ts";
import { JOB_STATUS_PATH } from "./registry.ts";
import { SERVICE } from "./service.ts";
import { SIGN_IN_GUIDANCE, signInRoutes } from "./sign-in-routes.ts";

/** Where agents find the service's guidance (https://llmstxt.org): served at the root, free. */
export const LLMS_TXT_PATH = "/llms.txt";

/** The discovery documents, each with what an agent finds in it (paths as served). */
export const DISCOVERY_DOCUMENTS = [
  {
    path: "/openapi.json",
    title: "OpenAPI 3.1 description",
    about: "every operation with its input and output schemas and its price (`x-payment-info`)",
  },
  {
    path: "/catalog.json",
    title: "Service catalog",
    about: "operations and products with USD and atomic prices, payment terms, schemas and availability",
  },
  {
    path: "/.well-known/x402",
    title: "x402 payment manifest",
    about: "every paid URL (`resources`) and, in `items`, each one's exact 402 terms and Bazaar extension",
  },
  {
    path: `${AGENT_SKILLS_PREFIX}/index.json`,
    title: "Agent skills index",
    about: "one SKILL.md per operation, with a copy-paste paying call",
  },
] as const;

/**
 * How an agent pays, in a few lines: `info.x-guidance` of /openapi.json (which indexers inline in an
 * agent's context) and the head of /llms.txt.
 */
export function agentGuidance(baseUrl: string, signer?: PublishedSigner): string {
  return [
    "Every operation is paid per call with x402 v2 (scheme exact, USDC on Base, eip155:8453); no account, no API key.",
    "1. Call the operation without payment: it answers 402 with the terms in the PAYMENT-REQUIRED header (base64 JSON)" +
      " and in the body. A call without a body is enough to read the price.",
    "2. Sign the EIP-3009 authorization the terms describe with any x402 client (@x402/fetch, x402-fetch, Python x402)" +
      " and repeat the call, with its body, carrying PAYMENT-SIGNATURE.",
    "3. A success carries PAYMENT-RESPONSE (the settlement transaction). Nothing is charged for a call that does not" +
      " succeed: invalid input is a 400 problem+json with a JSON Pointer per field, before any 402.",
    `Schemas and examples: ${baseUrl}/openapi.json; one SKILL.md per operation: ${baseUrl}${AGENT_SKILLS_PREFIX}/index.json.`,
    `MCP clients: ${baseUrl}${MCP_PATH} (Streamable HTTP) has every operation as a tool paid the same way (x402 MCP transport: the payment in params._meta["x402/payment"]); see ${baseUrl}${AGENT_SKILLS_PREFIX}/${MCP_SKILL_NAME}/SKILL.md.`,
    ...(signer ? [signedOffersNote(signer)] : []),
  ].join("\n");
}

/** /llms.txt: what the service sells, how to pay, and where the discovery documents are. */
export function buildLlmsTxt(
  operations: readonly AnyOperation[],
  freeRoutes: readonly AnyFreeRoute[],
  baseUrl: string,
  signer?: PublishedSigner,
): string {
  const line = (operation: AnyOperation) =>
    `- [${operation.summary}](${baseUrl}${skillPath(operation)}): \`${operation.method} ${baseUrl}${operation.path}\`, USD ${operation.priceUsd} per ${operation.kind === "product" ? "download" : "call"}`;
  return [
    `# ${SERVICE.name}`,
    "",
    `> ${SERVICE.description}`,
    "",
    agentGuidance(baseUrl, signer),
    "",
    "## Discovery documents",
    "",
    ...DISCOVERY_DOCUMENTS.map(
      (document) => `- [${document.title}](${baseUrl}${document.path}): ${document.about}`,
    ),
    "",
    "## Operations",
    "",
    ...operations.filter((operation) => operation.kind !== "product").map(line),
    "",
    "## Products (ZIP downloads)",
    "",
    ...operations.filter((operation) => operation.kind === "product").map(line),
    "",
    "## Free",
    "",
    ...freeRoutes.map((route) => `- \`GET ${baseUrl}${route.path}\`: ${route.summary}`),
    `- \`GET ${baseUrl}${JOB_STATUS_PATH}\`: a job's state or result (poll after a 202)`,
    "",
    "## Sign in with the wallet that paid (x402 sign-in-with-x)",
    "",
    SIGN_IN_GUIDANCE,
    "",
    ...signInRoutes(operations).map(
      (route) => `- \`${route.method} ${baseUrl}${route.path}\`: ${route.grants}`,
    ),
    "",
  ].join("\n");
}
