import { createHash } from "node:crypto";
import { MCP_SKILL_NAME, mcpSkillMarkdown } from "../mcp/listing.ts";
import { type PublishedSigner, signedOffersNote } from "../payments/resource-server/offer-receipt.ts";
import type { PaymentTerms } from "../payments/resource-server/terms.ts";
import { inputJsonSchema } from "./json-schema.ts";
import type { AnyOperation } from "./operation.ts";
import { isImplemented } from "./registry.ts";
import { JOBS_LIST_PATH, SIGN_IN_GUIDANCE } from "./sign-in-routes.ts";

export const AGENT_SKILLS_PREFIX = "/.well-known/agent-skills";
const DISCOVERY_SCHEMA = "https://schemas.agentskills.io/discovery/0.2.0/schema.json";

export interface AgentSkills {
  index: {
    $schema: string;
    skills: { name: string; type: "skill-md"; description: string; url: string; digest: string }[];
  };
  /** SKILL.md bytes by request path. */
  files: Map<string, Buffer>;
}

export const skillPath = (operation: AnyOperation) => `${AGENT_SKILLS_PREFIX}/${operation.id}/SKILL.md`;

function skillMarkdown(
  operation: AnyOperation,
  terms: PaymentTerms,
  baseUrl: string,
  signer?: PublishedSigner,
): string {
  const url = baseUrl + operation.path;
  const description = `${operation.summary}. Paid per call: USD ${operation.priceUsd} in USDC on Base via x402 v2.`;
  const call =
    operation.inputFrom === "body"
      ? `const response = await payingFetch("${url}", {\n  method: "POST",\n  headers: { "content-type": "application/json" },\n  body: JSON.stringify(${JSON.stringify(operation.example.input ?? {})}),\n});`
      : operation.inputFrom === "query"
        ? `const response = await payingFetch("${url}?" + new URLSearchParams(${JSON.stringify(operation.example.input ?? {})}));`
        : `const response = await payingFetch("${url}");`;
  const lines = [
    "---",
    `name: ${operation.id}`,
    `description: ${JSON.stringify(description)}`,
    "---",
    "",
    `# ${operation.summary}`,
    "",
    operation.description,
    "",
    isImplemented(operation)
      ? ""
      : "> Not available yet: the endpoint answers 501 and never asks for payment.\n",
    "## Call",
    "",
    `\`${operation.method} ${url}\` — price USD ${operation.priceUsd} (${terms.requirements.amount} atomic units of USDC ${terms.requirements.asset} on ${terms.requirements.network}, paid to ${terms.requirements.payTo}).`,
    "",
    "1. Call without payment: the answer is `402` with a `PAYMENT-REQUIRED` header (base64 JSON, x402 v2, scheme `exact`).",
    "2. Sign the EIP-3009 authorization it describes with an x402 client and repeat the call with `PAYMENT-SIGNATURE`.",
    "3. A success carries `PAYMENT-RESPONSE` (the settlement transaction). Invalid input is a `400` with a JSON Pointer per field and is never charged; a failed call is never charged.",
    ...(operation.kind === "async"
      ? [
          "4. The success is `202` with `{ jobId, status, statusUrl, pollAfterSeconds }` (and `Location`): poll `statusUrl` (GET, free, no payment) until `status` is `succeeded` (the answer is in `result`) or `failed` (`error` says why). `503` means no worker can take the job now; nothing is charged.",
        ]
      : []),
    ...(signer ? ["", signedOffersNote(signer)] : []),
    "",
    "```ts",
    'import { wrapFetchWithPayment, x402Client } from "@x402/fetch";',
    'import { registerExactEvmScheme } from "@x402/evm/exact/client";',
    'import { privateKeyToAccount } from "viem/accounts";',
    "",
    "// The client refuses payments above its spend cap ($1 by default): allow this price.",
    `const client = x402Client.fromConfig({ schemes: [], spendControls: { maxAmountPerPayment: "$${operation.priceUsd}" } });`,
    "registerExactEvmScheme(client, { signer: privateKeyToAccount(process.env.PRIVATE_KEY) });",
    "const payingFetch = wrapFetchWithPayment(fetch, client);",
    call,
    "```",
    "",
  ];
  if (operation.kind === "product" || operation.kind === "async")
    lines.push(...signInSection(operation, url, baseUrl));
  if (operation.inputFrom !== "none") {
    lines.push(
      `## Input (${operation.inputFrom === "body" ? "JSON body" : "query parameters"})`,
      "",
      "```json",
      JSON.stringify(inputJsonSchema(operation), null, 2),
      "```",
      "",
    );
  }
  if (operation.example.output !== undefined) {
    lines.push(
      "## Example response",
      "",
      "```json",
      JSON.stringify(operation.example.output, null, 2),
      "```",
      "",
    );
  }
  lines.push(
    "## Errors",
    "",
    "All errors are RFC 9457 `application/problem+json`.",
    "",
    ...[
      { status: 400, description: "Invalid request (`errors[].pointer` names the field). Never charged." },
      { status: 402, description: "Payment required or rejected (`error` says why)." },
      { status: 409, description: "This payment was already used for a different request." },
      {
        status: 503,
        description: "Payments temporarily unavailable; retry after `Retry-After`. Never charged.",
      },
      ...operation.errorResponses,
    ].map((error) => `- \`${error.status}\`: ${error.description}`),
    "",
  );
  return lines.join("\n");
}

/** How the wallet that paid gets a product again, or finds its jobs, by signing in (x402 sign-in-with-x). */
function signInSection(operation: AnyOperation, url: string, baseUrl: string): string[] {
  const product = operation.kind === "product";
  return [
    product ? "## Download again without paying" : "## Find your jobs again",
    "",
    SIGN_IN_GUIDANCE,
    "",
    "```ts",
    ...(product
      ? [
          'import { wrapFetchWithSIWx } from "@x402/extensions/sign-in-with-x";',
          "",
          "// Sign in first; pay (payingFetch above) only if this wallet has not bought the release served now.",
          "const signedIn = wrapFetchWithPayment(wrapFetchWithSIWx(fetch, privateKeyToAccount(process.env.PRIVATE_KEY)), client);",
          `const zip = await signedIn("${url}");`,
        ]
      : [
          'import { createSIWxClientExtension } from "@x402/extensions/sign-in-with-x";',
          "",
          "const signer = privateKeyToAccount(process.env.PRIVATE_KEY);",
          "const signInFetch = wrapFetchWithPayment(fetch, new x402Client().registerExtension(createSIWxClientExtension({ signers: [signer] })));",
          `const { jobs } = await (await signInFetch("${baseUrl}${JOBS_LIST_PATH}")).json(); // each job as GET /v1/jobs/{id} shows it`,
        ]),
    "```",
    "",
  ];
}

/**
 * The agent-skills discovery index: one SKILL.md per operation and one on using the service from an MCP
 * client, digests over the exact bytes served.
 */
export function buildAgentSkills(
  operations: readonly AnyOperation[],
  termsById: ReadonlyMap<string, PaymentTerms>,
  baseUrl: string,
  signer?: PublishedSigner,
): AgentSkills {
  const files = new Map<string, Buffer>();
  const skill = (name: string, description: string, markdown: string) => {
    const bytes = Buffer.from(markdown, "utf8");
    const path = `${AGENT_SKILLS_PREFIX}/${name}/SKILL.md`;
    files.set(path, bytes);
    return {
      name,
      type: "skill-md" as const,
      description,
      url: baseUrl + path,
      digest: `sha256:${createHash("sha256").update(bytes).digest("hex")}`,
    };
  };
  const skills = operations.map((operation) =>
    skill(
      operation.id,
      `${operation.summary} (USD ${operation.priceUsd} per call, x402 v2, USDC on Base).`,
      skillMarkdown(operation, termsById.get(operation.id) as PaymentTerms, baseUrl, signer),
    ),
  );
  skills.push(
    skill(
      MCP_SKILL_NAME,
      "Add the service to an MCP client: every operation a tool paid per call with x402 v2 (USDC on Base).",
      mcpSkillMarkdown(operations, termsById, baseUrl),
    ),
  );
  return { index: { $schema: DISCOVERY_SCHEMA, skills }, files };
}
