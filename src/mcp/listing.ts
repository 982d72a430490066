import type { AnyOperation } from "../contract/operation.ts";
import type { PaymentTerms } from "../payments/resource-server/terms.ts";
import { GET_JOB_TOOL, isTool, MCP_PATH, MCP_TRANSPORT, mcpEndpoint } from "./endpoint.ts";
import { toolTerms } from "./tool-terms.ts";

/*
 * The MCP endpoint in the discovery documents, built from the registry like the rest of them:
 * /.well-known/x402 lists each tool's terms, the agent skills carry a SKILL.md on adding the server to an
 * MCP client.
 */

/** The agent skill that explains the MCP endpoint (its SKILL.md sits beside the operations'). */
export const MCP_SKILL_NAME = "mcp";

/**
 * The `mcp` member of /.well-known/x402: the endpoint, and each tool's terms as a call answers them
 * (resource mcp://tool/<id>) with its Bazaar extension in the MCP form. The manifest's `resources` stay
 * the HTTP URLs a prober can fetch.
 */
export function mcpManifest(
  operations: readonly AnyOperation[],
  termsById: ReadonlyMap<string, PaymentTerms>,
  baseUrl: string,
) {
  const { tools: _names, ...endpoint } = mcpEndpoint(operations, baseUrl);
  return {
    ...endpoint,
    items: operations.filter(isTool).map((operation) => {
      const { paymentRequired, discovery } = toolTerms(
        operation,
        termsById.get(operation.id) as PaymentTerms,
      );
      return {
        resource: paymentRequired.resource.url,
        type: "mcp",
        toolName: operation.id,
        x402Version: 2,
        description: paymentRequired.resource.description,
        mimeType: paymentRequired.resource.mimeType,
        accepts: paymentRequired.accepts,
        extensions: discovery,
      };
    }),
  };
}

/** The SKILL.md that tells an agent (or its operator) how to add the server to an MCP client and pay its tools. */
export function mcpSkillMarkdown(
  operations: readonly AnyOperation[],
  termsById: ReadonlyMap<string, PaymentTerms>,
  baseUrl: string,
): string {
  const url = baseUrl + MCP_PATH;
  const tools = operations.filter(isTool);
  const example = tools.find((operation) => operation.kind === "sync") ?? tools[0];
  const network = example ? termsById.get(example.id)?.requirements.network : undefined;
  return [
    "---",
    `name: ${MCP_SKILL_NAME}`,
    `description: ${JSON.stringify(`Add this service to an MCP client (${url}, Streamable HTTP): every operation is a tool paid per call with x402 v2 in USDC.`)}`,
    "---",
    "",
    "# Use it from an MCP client",
    "",
    `The MCP endpoint is \`${url}\` (transport ${MCP_TRANSPORT}). Each operation is a tool named by its id, with its`,
    'input and output JSON Schemas and its price in its description and in `_meta["utility402/price"]`; the free',
    `\`${GET_JOB_TOOL}\` tool reads a queued job. The ZIP products are sold over HTTP only (their downloads resume with`,
    "Range, which a tool result cannot).",
    "",
    "## Add the server",
    "",
    "Claude Code:",
    "",
    "```sh",
    `claude mcp add --transport http utility402 ${url}`,
    "```",
    "",
    "A client configured by a JSON file (Claude Desktop, Cursor, VS Code and others take this shape):",
    "",
    "```json",
    JSON.stringify({ mcpServers: { utility402: { type: "http", url } } }, null, 2),
    "```",
    "",
    "## Pay a tool call (x402 MCP transport, version 2)",
    "",
    "1. Call the tool without payment: the result has `isError: true`, the x402 `PaymentRequired` in `structuredContent`",
    '   (and, for clients that read text only, `{"x402/error": {"code": 402, "data": PaymentRequired}}` in `content[0].text`).',
    '2. Sign it with an x402 client and call the tool again with the `PaymentPayload` in `params._meta["x402/payment"]`.',
    '3. The result carries the settlement receipt in `_meta["x402/payment-response"]`. Invalid arguments are a tool error',
    "   naming each field by a JSON Pointer and are never charged; a failed call is never charged; a payment made through",
    "   HTTP or MCP replays through the other for two minutes without a second charge.",
    "",
    "```ts",
    'import { Client } from "@modelcontextprotocol/sdk/client/index.js";',
    'import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";',
    'import { x402Client } from "@x402/core/client";',
    'import { registerExactEvmScheme } from "@x402/evm/exact/client";',
    'import { privateKeyToAccount } from "viem/accounts";',
    "",
    `const mcp = new Client({ name: "my-agent", version: "1.0.0" });`,
    `await mcp.connect(new StreamableHTTPClientTransport(new URL("${url}")));`,
    'const payer = x402Client.fromConfig({ schemes: [], spendControls: { maxAmountPerPayment: "$5" } });',
    "registerExactEvmScheme(payer, { signer: privateKeyToAccount(process.env.PRIVATE_KEY) });",
    "",
    `const call = { name: "${example?.id ?? "json-diff"}", arguments: ${JSON.stringify(example?.example.input ?? {})} };`,
    "const terms = await mcp.callTool(call); // isError: structuredContent is the PaymentRequired",
    "const payment = await payer.createPaymentPayload(terms.structuredContent);",
    'const result = await mcp.callTool({ ...call, _meta: { "x402/payment": payment } });',
    'console.log(result.structuredContent, result._meta["x402/payment-response"]);',
    "```",
    "",
    "## Tools",
    "",
    `Prices in USD, paid in USDC${network ? ` on ${network}` : ""}; the atomic amount is the price × 1,000,000.`,
    "",
    "| Tool | Price (USD) | What |",
    "|---|---|---|",
    ...tools.map((operation) => `| \`${operation.id}\` | ${operation.priceUsd} | ${operation.summary} |`),
    `| \`${GET_JOB_TOOL}\` | free | Read a queued job's state or result (as GET /v1/jobs/{id}) |`,
    "",
  ].join("\n");
}
