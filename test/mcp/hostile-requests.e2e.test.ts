import net from "node:net";
import type { PaymentRequired } from "@x402/core/types";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { devPrivateKey } from "../../src/chain/dev-accounts.ts";
import { atomicPrice } from "../../src/contract/price.ts";
import { MAX_JSON_DEPTH } from "../../src/input/parse-input.ts";
import { humanoidFmeaQuery } from "../../src/operations/humanoid-fmea-query/index.ts";
import { jsonDiff } from "../../src/operations/json-diff/index.ts";
import { unitConvert } from "../../src/operations/unit-convert/index.ts";
import { jsonPost, startTestService, type TestService, usdcBalances } from "../helpers/service.ts";
import { toolPayer } from "./paying-mcp-client.ts";

/*
 * A hostile client of /mcp speaking raw JSON-RPC over HTTP (bodies no SDK client would build): every bad
 * request is a clear error, never a JSON-RPC internal error nor a problem 500, and nothing is charged.
 */

const ACCEPT = { "content-type": "application/json", accept: "application/json, text/event-stream" };

describe("a hostile client of the MCP endpoint", () => {
  let service: TestService;

  /** POSTs a raw JSON-RPC message (text), as a client does after initializing (the endpoint keeps no session). */
  const post = (text: string, headers: Record<string, string> = { "mcp-protocol-version": "2025-06-18" }) =>
    fetch(`${service.url}/mcp`, { method: "POST", headers: { ...ACCEPT, ...headers }, body: text });
  const toolCall = (name: string, argumentsText: string, metaText?: string, id = 1) =>
    `{"jsonrpc":"2.0","id":${id},"method":"tools/call","params":{"name":"${name}","arguments":${argumentsText}${
      metaText === undefined ? "" : `,"_meta":${metaText}`
    }}}`;
  const resultOf = async (response: Response) => {
    expect(response.status).toBe(200);
    const message = (await response.json()) as {
      result?: { isError?: boolean; structuredContent?: Record<string, unknown> };
      error?: unknown;
    };
    expect(message.error).toBeUndefined();
    return message.result as { isError?: boolean; structuredContent: Record<string, unknown> };
  };

  beforeAll(async () => {
    service = await startTestService({}, { operations: [jsonDiff, unitConvert, humanoidFmeaQuery] });
    const initialize = await post(
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
      {},
    );
    expect(initialize.status).toBe(200);
    expect(initialize.headers.get("mcp-session-id")).toBeNull();
    expect((await post('{"jsonrpc":"2.0","method":"notifications/initialized"}')).status).toBe(202);
  });
  afterAll(async () => {
    await service?.stop();
  });

  it("arguments nested 100,000 deep: the route's 400 with its JSON Pointer, not a problem 500", async () => {
    // Below the size at which the readers parse in a worker (docs: the HTTP door fails there too, reported).
    const nested = "[".repeat(100_000) + "]".repeat(100_000);
    const deep = `{"a":${nested},"b":{}}`;
    const http = (await (
      await fetch(`${service.url}/v1/json-diff`, { ...jsonPost({}), body: deep })
    ).json()) as Record<string, unknown>;
    expect(http.status).toBe(400);
    const result = await resultOf(await post(toolCall("json-diff", deep)));
    expect(result.isError).toBe(true);
    expect(result.structuredContent).toMatchObject({ status: 400, errors: http.errors });
    // An operation without a depth limit of its own: every JSON body's MAX_JSON_DEPTH, as over HTTP.
    const unlimitedHttp = (await (
      await fetch(`${service.url}/v1/humanoid-fmea-query`, { ...jsonPost({}), body: `{"value":${nested}}` })
    ).json()) as Record<string, unknown>;
    expect(unlimitedHttp.status).toBe(400);
    const unlimited = await resultOf(await post(toolCall("humanoid-fmea-query", `{"value":${nested}}`)));
    expect(unlimited.structuredContent).toMatchObject({ status: 400, errors: unlimitedHttp.errors });
    expect(JSON.stringify(unlimited.structuredContent.errors)).toContain(
      `"/value${"/0".repeat(MAX_JSON_DEPTH - 1)}"`,
    );
  });

  it("a payment in _meta that is not an object, or a v1 payload, is refused with the terms, nothing charged", async () => {
    const args = JSON.stringify({ value: 1, from: "m", to: "km" });
    for (const meta of [
      '{"x402/payment":"not a payment"}',
      '{"x402/payment":[1,2]}',
      '{"x402/payment":{"x402Version":1,"scheme":"exact","network":"base","payload":{}}}',
      '{"x402/payment":{"x402Version":2}}',
    ]) {
      const result = await resultOf(await post(toolCall("unit-convert", args, meta)));
      expect(result.isError, meta).toBe(true);
      expect(result.structuredContent, meta).toMatchObject({ x402Version: 2 });
      expect(String(result.structuredContent.error), meta).not.toBe("payment required");
    }
  });

  it("a signed payment bent in every member is refused with the terms or served once, never a 500", async () => {
    const payer = toolPayer(devPrivateKey(7));
    const balanceOf = usdcBalances(service.localChain?.rpcUrl as string);
    const before = await balanceOf(payer.address);
    const args = { value: 1, from: "m", to: "km" };
    const terms = (await resultOf(await post(toolCall("unit-convert", JSON.stringify(args)))))
      .structuredContent as unknown as PaymentRequired;
    const signed = await payer.sign(terms);
    const { authorization } = signed.payload as { authorization: Record<string, unknown> };
    // Refused with the terms, nothing charged.
    const refused: Record<string, unknown>[] = [
      { ...signed, x402Version: "2" },
      { ...signed, accepted: null },
      { ...signed, accepted: [] },
      { ...signed, accepted: { ...signed.accepted, amount: Number(signed.accepted.amount) } },
      { ...signed, accepted: { ...signed.accepted, extra: null } },
      { ...signed, payload: null },
      {
        ...signed,
        payload: { ...signed.payload, authorization: { ...authorization, value: "1".repeat(100) } },
      },
      { ...signed, payload: { ...signed.payload, authorization: { ...authorization, validBefore: "0" } } },
      { ...signed, payload: { ...signed.payload, signature: `0x${"00".repeat(65)}` } },
      { ...signed, resource: { url: 5 } },
      { ...signed, resource: { url: "mcp://tool/json-diff" } },
      { ...signed, extensions: { "payment-identifier": null } },
      { ...signed, extensions: { "payment-identifier": { info: "x" } } },
      { ...signed, extensions: { "payment-identifier": { info: { required: false, id: 5 } } } },
    ];
    // What the signature does not cover and may be absent (resource, extensions) is the payment without it:
    // served, charged once in all with the payment as signed.
    const served: Record<string, unknown>[] = [
      { ...signed, resource: null },
      { ...signed, extensions: null },
      { ...signed, extensions: "x" },
      signed,
    ];
    for (const [payment, outcome] of [
      ...refused.map((payment) => [payment, "refused"] as const),
      ...served.map((payment) => [payment, "served"] as const),
    ]) {
      const meta = JSON.stringify({ "x402/payment": payment });
      const result = await resultOf(await post(toolCall("unit-convert", JSON.stringify(args), meta)));
      if (outcome === "served") expect(result.isError, meta).toBeFalsy();
      else
        expect(result.structuredContent, meta).toMatchObject({ x402Version: 2, error: expect.any(String) });
    }
    expect(await balanceOf(payer.address)).toBe(before - BigInt(atomicPrice(unitConvert)));
  });

  it("get_job with an id that is a URL dot segment is the route's 400 naming /id, not another path's answer", async () => {
    for (const id of ["..", "."]) {
      const result = await resultOf(await post(toolCall("get_job", JSON.stringify({ id }))));
      expect(result.structuredContent, id).toMatchObject({ status: 400, errors: [{ pointer: "/id" }] });
    }
  });

  it("a forged session id opens nothing and reaches nothing: the call is answered as without it", async () => {
    const forged = {
      "mcp-session-id": "00000000-0000-4000-8000-000000000000",
      "mcp-protocol-version": "2025-06-18",
    };
    const args = JSON.stringify({ value: 1, from: "m", to: "km" });
    const result = await resultOf(await post(toolCall("unit-convert", args), forged));
    expect(result.isError).toBe(true);
    expect(result.structuredContent).toMatchObject({ x402Version: 2, error: "payment required" });
  });

  it("a JSON-RPC batch of 1,000 tool calls is refused whole (the SDK takes 100 at most), nothing runs", async () => {
    const batch = `[${Array.from({ length: 1000 }, (_, i) => toolCall("unit-convert", '{"value":1,"from":"m","to":"km"}', undefined, i + 1)).join(",")}]`;
    const response = await post(batch);
    expect(response.status).toBe(400);
    expect(await response.json()).toMatchObject({ error: { code: -32600 } });
  });

  it("a message over 320 KiB (arguments larger than the routes parse on the main thread) is a 413", async () => {
    const at = (bytes: number) => toolCall("json-diff", `{"a":"${"x".repeat(bytes)}","b":1}`);
    expect((await post(at(250 * 1024))).status).toBe(200);
    const response = await post(at(330 * 1024));
    expect(response.status).toBe(413);
    expect(await response.json()).toMatchObject({ error: { code: -32000 } });
  });

  it("50 MB without a declared length (chunked) is cut at the bound: 413", async () => {
    const chunk = new TextEncoder().encode(
      `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"json-diff","arguments":{"a":"${"x".repeat(1024 * 1024)}`,
    );
    const body = new ReadableStream({
      start(controller) {
        for (let i = 0; i < 50; i++) controller.enqueue(chunk);
        controller.close();
      },
    });
    const response = await fetch(`${service.url}/mcp`, {
      method: "POST",
      headers: { ...ACCEPT, "mcp-protocol-version": "2025-06-18" },
      body,
      duplex: "half",
    } as RequestInit);
    expect(response.status).toBe(413);
    expect(await response.json()).toMatchObject({ error: { code: -32000 } });
  });
});

describe("a slow-loris body on /mcp", () => {
  let service: TestService;
  beforeAll(async () => {
    service = await startTestService(
      { HTTP_HEADERS_TIMEOUT_MS: "1000", HTTP_REQUEST_TIMEOUT_MS: "1000" },
      { operations: [unitConvert] },
    );
  });
  afterAll(async () => {
    await service?.stop();
  });

  it("a declared body that never finishes is cut by the request timeout (408, socket closed), as on any route", async () => {
    const { port } = new URL(service.url);
    const socket = net.connect(Number(port), "127.0.0.1");
    const received: Buffer[] = [];
    socket.on("data", (chunk) => received.push(chunk));
    const closed = new Promise<void>((resolve) => socket.on("close", () => resolve()));
    socket.write(
      "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\ncontent-type: application/json\r\n" +
        "accept: application/json, text/event-stream\r\ncontent-length: 100000\r\n\r\n" +
        '{"jsonrpc":"2.0","id":1,',
    );
    // One more byte now and then, never the whole body: the server ends it, not the client.
    const drip = setInterval(() => socket.write(" "), 200);
    try {
      await closed;
    } finally {
      clearInterval(drip);
      socket.destroy();
    }
    expect(Buffer.concat(received).toString("latin1")).toMatch(/^HTTP\/1\.1 408/);
  });
});
