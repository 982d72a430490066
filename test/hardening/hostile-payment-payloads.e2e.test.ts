import type { PaymentPayload, PaymentRequired } from "@x402/core/types";
import fc from "fast-check";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { devPrivateKey } from "../../src/chain/dev-accounts.ts";
import { atomicPrice } from "../../src/contract/price.ts";
import { unitConvert } from "../../src/operations/unit-convert/index.ts";
import { jsonPost, startTestService, type TestService, usdcBalances } from "../helpers/service.ts";
import { toolPayer } from "../mcp/paying-mcp-client.ts";
import { type HostilePayload, hostilePayloads, runSeed } from "./hostile-payment-payloads.ts";

/*
 * Issue 33, item 5: an MCP `_meta["x402/payment"].accepted` nested 60,000 levels deep was a 500 (a
 * RangeError in the SDK's deep comparison of `accepted`). The class, generated at every door: a real signed
 * payment with a deep, wide or prototype-keyed value at any position of it is a 402 naming the payload
 * (`invalid_payload`), never a 500, and nothing is charged; the untouched payment still pays, once.
 */

const ARGS = { value: 1, from: "m", to: "km" };
const MCP_HEADERS = { "content-type": "application/json", accept: "application/json, text/event-stream" };
const base64 = (text: string) => Buffer.from(text).toString("base64");
/** Node reads at most 16 KiB of request headers: the room a payment header leaves for a hostile value. */
const HEADER_ROOM = (text: string) => Math.floor(((16 * 1024 - 1024) * 3) / 4) - text.length;
/** An MCP message is at most 320 KiB: the room for a hostile value beside the payment and the arguments. */
const MCP_ROOM = 300 * 1024;

describe("a payment payload nested too deep, too wide or with prototype keys, at every door", () => {
  let service: TestService;
  let signed: PaymentPayload;
  let mcpSession: Record<string, string> = {};
  let balanceOf: ReturnType<typeof usdcBalances>;
  const payer = toolPayer(devPrivateKey(6));

  const mcp = (message: string) =>
    fetch(`${service.url}/mcp`, {
      method: "POST",
      headers: { ...MCP_HEADERS, ...mcpSession },
      body: message,
    });
  const toolCall = (paymentText?: string) =>
    `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"unit-convert","arguments":${JSON.stringify(ARGS)}${
      paymentText === undefined ? "" : `,"_meta":{"x402/payment":${paymentText}}`
    }}}`;
  const toolResult = async (response: Response) => {
    expect(response.status).toBe(200);
    const message = (await response.json()) as { result?: Record<string, any>; error?: unknown };
    expect(message.error).toBeUndefined();
    return message.result as { isError?: boolean; structuredContent: Record<string, any> };
  };

  beforeAll(async () => {
    service = await startTestService({}, { operations: [unitConvert] });
    balanceOf = usdcBalances(service.localChain?.rpcUrl as string);
    const initialize = await mcp(
      JSON.stringify({
        jsonrpc: "2.0",
        id: 0,
        method: "initialize",
        params: {
          protocolVersion: "2025-06-18",
          capabilities: {},
          clientInfo: { name: "hostile", version: "1" },
        },
      }),
    );
    const session = initialize.headers.get("mcp-session-id");
    if (session) mcpSession = { "mcp-session-id": session, "mcp-protocol-version": "2025-06-18" };
    const terms = (await toolResult(await mcp(toolCall()))).structuredContent as unknown as PaymentRequired;
    signed = await payer.sign(terms);
  }, 120_000);
  afterAll(async () => {
    await service?.stop();
  });

  /** Runs the generated cases through one door; each must be refused as an unreadable payment. */
  const refusedAtDoor = async (
    door: string,
    cases: fc.Arbitrary<HostilePayload>,
    refusal: (text: string) => Promise<string | undefined>,
  ) => {
    const seed = runSeed();
    console.log(`${door}: seed ${seed} (FC_SEED=${seed} repeats it)`);
    await fc.assert(
      fc.asyncProperty(cases, async ({ text }) => {
        expect(await refusal(text)).toMatch(/^invalid_payload\b/);
      }),
      { seed, numRuns: 100, endOnFailure: true },
    );
  };

  it('MCP: _meta["x402/payment"] with a hostile value anywhere (60,000 deep among them) is refused with the terms', async () => {
    const before = await balanceOf(payer.address);
    const refusal = async (text: string) => {
      const refused = await toolResult(await mcp(toolCall(text)));
      expect(refused.isError).toBe(true);
      expect(refused.structuredContent.x402Version).toBe(2);
      return refused.structuredContent.error as string;
    };
    await refusedAtDoor("MCP", hostilePayloads(JSON.parse(JSON.stringify(signed)), MCP_ROOM), refusal);
    const sixtyThousand = `${"[".repeat(60_000)}${"]".repeat(60_000)}`;
    expect(await refusal(JSON.stringify({ ...signed, accepted: "@" }).replace('"@"', sixtyThousand))).toMatch(
      /^invalid_payload: /,
    );
    expect(await balanceOf(payer.address)).toBe(before);
  });

  it("HTTP: PAYMENT-SIGNATURE with a hostile value anywhere is a 402 naming the payload", async () => {
    const before = await balanceOf(payer.address);
    const url = `${service.url}/v1/unit-convert`;
    const text = JSON.stringify(signed);
    const refusal = async (hostile: string) => {
      const response = await fetch(url, jsonPost(ARGS, { "PAYMENT-SIGNATURE": base64(hostile) }));
      expect(response.status).toBe(402);
      const problem = await response.json();
      return `${problem.reason}: ${problem.detail}`;
    };
    await refusedAtDoor("HTTP v2", hostilePayloads(JSON.parse(text), HEADER_ROOM(text)), refusal);
    // The deepest `accepted` a header can carry (60,000 levels do not fit 16 KiB of headers: Node answers 431).
    const depth = Math.floor(HEADER_ROOM(text) / 2);
    const nested = `${"[".repeat(depth)}${"]".repeat(depth)}`;
    expect(await refusal(JSON.stringify({ ...signed, accepted: "@" }).replace('"@"', nested))).toMatch(
      /^invalid_payload: /,
    );
    expect(await balanceOf(payer.address)).toBe(before);
  });

  it("HTTP x402 v1: X-PAYMENT with a hostile value anywhere is a 402 naming the payload", async () => {
    const before = await balanceOf(payer.address);
    const url = `${service.url}/v1/unit-convert`;
    const v1 = {
      x402Version: 1,
      scheme: "exact",
      network: "base",
      payload: signed.payload,
      extensions: signed.extensions ?? {},
    };
    const text = JSON.stringify(v1);
    await refusedAtDoor("HTTP v1", hostilePayloads(JSON.parse(text), HEADER_ROOM(text)), async (hostile) => {
      const response = await fetch(url, jsonPost(ARGS, { "X-PAYMENT": base64(hostile) }));
      expect(response.status).toBe(402);
      const problem = await response.json();
      return `${problem.reason}: ${problem.detail}`;
    });
    expect(await balanceOf(payer.address)).toBe(before);
  });

  it("the payment itself, untouched, still pays: charged once in all", async () => {
    const before = await balanceOf(payer.address);
    const result = await toolResult(await mcp(toolCall(JSON.stringify(signed))));
    expect(result.isError).toBeFalsy();
    expect(await balanceOf(payer.address)).toBe(before - BigInt(atomicPrice(unitConvert)));
  });
});
