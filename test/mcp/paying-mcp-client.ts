import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import type { CallToolResult } from "@modelcontextprotocol/sdk/types.js";
import { x402Client } from "@x402/core/client";
import type { PaymentPayload, PaymentRequired } from "@x402/core/types";
import { registerExactEvmScheme } from "@x402/evm/exact/client";
import { appendPaymentIdentifierToExtensions } from "@x402/extensions/payment-identifier";
import { privateKeyToAccount } from "viem/accounts";
import { retryLostAnswers } from "../helpers/service.ts";

/**
 * An MCP client made only of official parts: the SDK's Client over its Streamable HTTP transport, and an
 * x402 payer from @x402/core and @x402/evm (as src/client/paying-fetch.ts builds the HTTP one). Its
 * initialize is asked again when its answer was lost (it pays nothing).
 */
export function connectMcp(baseUrl: string): Promise<Client> {
  return retryLostAnswers(async () => {
    const client = new Client({ name: "utility402-test", version: "1.0.0" });
    await client
      .connect(new StreamableHTTPClientTransport(new URL(`${baseUrl}/mcp`)))
      .catch(async (error) => {
        await client.close().catch(() => undefined);
        throw error;
      });
    return client;
  });
}

export interface ToolPayer {
  address: `0x${string}`;
  /** Signs the terms a tool answered with: the PaymentPayload for `_meta["x402/payment"]`. */
  sign(paymentRequired: PaymentRequired): Promise<PaymentPayload>;
}

/**
 * `paymentId`: the x402 payment-identifier (an idempotency key) to add to each payment, as the SDK's
 * client helper adds it.
 */
export function toolPayer(
  privateKey: `0x${string}`,
  options: { maxUsdPerPayment?: string; paymentId?: () => string } = {},
): ToolPayer {
  const account = privateKeyToAccount(privateKey);
  const client = x402Client.fromConfig({
    schemes: [],
    spendControls: { maxAmountPerPayment: options.maxUsdPerPayment ?? "$100" },
  });
  registerExactEvmScheme(client, { signer: account });
  const { paymentId } = options;
  if (paymentId) {
    client.onBeforePaymentCreation(async ({ paymentRequired }) => {
      paymentRequired.extensions ??= {};
      appendPaymentIdentifierToExtensions(paymentRequired.extensions, paymentId());
    });
  }
  return {
    address: account.address,
    sign: (paymentRequired) => client.createPaymentPayload(paymentRequired),
  };
}

export type ToolResult = CallToolResult & { structuredContent?: Record<string, unknown> };

/** Calls a tool with a payment (or none) in `_meta["x402/payment"]`. */
export const callTool = (
  client: Client,
  name: string,
  args?: Record<string, unknown>,
  payment?: PaymentPayload,
) =>
  client.callTool({
    name,
    ...(args === undefined ? {} : { arguments: args }),
    ...(payment === undefined ? {} : { _meta: { "x402/payment": payment } }),
  }) as Promise<ToolResult>;

/** The terms of an unpaid call: the PaymentRequired in structuredContent (the x402 MCP transport). */
export function termsOf(result: ToolResult): PaymentRequired {
  if (!result.isError || result.structuredContent?.x402Version !== 2) {
    throw new Error(`expected the tool's payment terms, got ${JSON.stringify(result).slice(0, 500)}`);
  }
  return result.structuredContent as unknown as PaymentRequired;
}

/** One paid call as an x402 MCP client makes it: unpaid for the terms, then again with the signed payment. */
export async function payTool(
  client: Client,
  payer: ToolPayer,
  name: string,
  args: Record<string, unknown>,
): Promise<{ result: ToolResult; payment: PaymentPayload }> {
  const payment = await payer.sign(termsOf(await callTool(client, name, args)));
  return { result: await callTool(client, name, args, payment), payment };
}

/** The settlement receipt a paid tool result carries in `_meta["x402/payment-response"]`, if any. */
export const receiptOf = (result: ToolResult) =>
  result._meta?.["x402/payment-response"] as
    | { success: boolean; transaction: string; network: string; payer?: string }
    | undefined;
