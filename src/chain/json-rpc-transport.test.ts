import http from "node:http";
import type { AddressInfo } from "node:net";
import { createPublicClient, HttpRequestError, InvalidInputRpcError, TimeoutError } from "viem";
import { afterEach, describe, expect, it } from "vitest";
import { jsonRpcTransport } from "./json-rpc-transport.ts";
import { isTransportError } from "./transport-failures.ts";

interface Seen {
  body: unknown;
  authorization?: string;
}

/** A local JSON-RPC endpoint whose answer the test decides; it records every HTTP request. */
async function endpoint(
  answer: (body: unknown, response: http.ServerResponse) => void,
): Promise<{ url: string; seen: Seen[] }> {
  const seen: Seen[] = [];
  const server = http.createServer((request, response) => {
    const chunks: Buffer[] = [];
    request.on("data", (chunk: Buffer) => chunks.push(chunk));
    request.on("end", () => {
      const body = JSON.parse(Buffer.concat(chunks).toString());
      seen.push({ body, authorization: request.headers.authorization });
      answer(body, response);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  servers.push(server);
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, seen };
}

const servers: http.Server[] = [];
afterEach(async () => {
  for (const server of servers.splice(0)) {
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
  }
});

const json = (response: http.ServerResponse, status: number, value: unknown) => {
  response.writeHead(status, { "content-type": "application/json" });
  response.end(JSON.stringify(value));
};
type Call = { id: number; method: string; params: unknown[] };
/** Answers each call with its method and first parameter, a batch in reverse order (ids must match). */
const echo = (body: unknown, response: http.ServerResponse) => {
  const answer = (call: Call) => ({
    jsonrpc: "2.0",
    id: call.id,
    result: `${call.method}:${call.params[0]}`,
  });
  json(response, 200, Array.isArray(body) ? (body as Call[]).map(answer).reverse() : answer(body as Call));
};
const client = (url: string, options: Parameters<typeof jsonRpcTransport>[1] = {}) =>
  createPublicClient({ transport: jsonRpcTransport(url, { retryCount: 0, ...options }) });
const call = (c: ReturnType<typeof client>, method: string, param: string) =>
  c.request({ method: method as "eth_chainId", params: [param] as never });

describe("jsonRpcTransport", () => {
  it("sends the calls of one tick as one batch in call order, and matches answers by id", async () => {
    const rpc = await endpoint(echo);
    const c = client(rpc.url);
    const answers = await Promise.all([
      call(c, "eth_sendRawTransaction", "0xaa"),
      call(c, "eth_getTransactionReceipt", "0xbb"),
    ]);
    expect(answers).toEqual(["eth_sendRawTransaction:0xaa", "eth_getTransactionReceipt:0xbb"]);
    expect(rpc.seen).toHaveLength(1);
    expect((rpc.seen[0]?.body as Call[] | undefined)?.map((one) => one.method)).toEqual([
      "eth_sendRawTransaction",
      "eth_getTransactionReceipt",
    ]);
    // A call alone travels as a plain request, a later tick in an exchange of its own.
    expect(await call(c, "eth_getCode", "0xcc")).toBe("eth_getCode:0xcc");
    expect(rpc.seen).toHaveLength(2);
    expect(Array.isArray(rpc.seen[1]?.body)).toBe(false);
  });

  it("turns a JSON-RPC error into viem's typed error with the node's words, also under an error status", async () => {
    const rpc = await endpoint((body, response) =>
      json(response, (body as Call).method === "eth_a" ? 200 : 400, {
        jsonrpc: "2.0",
        id: (body as Call).id,
        error: { code: -32000, message: "nonce too low" },
      }),
    );
    const c = client(rpc.url, { retryCount: 2 });
    for (const method of ["eth_a", "eth_b"]) {
      const error = await call(c, method, "0x").catch((e: unknown) => e);
      expect(error).toBeInstanceOf(InvalidInputRpcError);
      expect((error as InvalidInputRpcError).details).toBe("nonce too low");
      expect(isTransportError(error)).toBe(false);
    }
    expect(rpc.seen).toHaveLength(2); // a refusal is not retried
  });

  it("reports a failed exchange as HttpRequestError with its status, retried as viem retries it", async () => {
    const rpc = await endpoint((_body, response) => {
      response.writeHead(503);
      response.end("busy");
    });
    const error = await call(client(rpc.url, { retryCount: 2 }), "eth_a", "0x").catch((e: unknown) => e);
    expect(error).toBeInstanceOf(HttpRequestError);
    expect((error as HttpRequestError).status).toBe(503);
    expect(isTransportError(error)).toBe(true);
    expect(rpc.seen).toHaveLength(3);

    const never = await call(client(rpc.url, { retryCount: 0 }), "eth_a", "0x").catch((e: unknown) => e);
    expect(never).toBeInstanceOf(HttpRequestError);
    expect(rpc.seen).toHaveLength(4); // a broadcast's transport (retryCount 0) asks once
  });

  it("reports an unreachable node, a node that does not answer in time and an oversized answer as transport failures", async () => {
    const closed = await endpoint(echo);
    const refusedUrl = closed.url;
    for (const server of servers.splice(0)) await new Promise((resolve) => server.close(resolve));
    const refused = await call(client(refusedUrl), "eth_a", "0x").catch((e: unknown) => e);
    expect(refused).toBeInstanceOf(HttpRequestError);
    expect(isTransportError(refused)).toBe(true);

    const silent = await endpoint(() => undefined);
    const late = await call(client(silent.url, { timeoutMs: 200 }), "eth_a", "0x").catch((e: unknown) => e);
    expect(late).toBeInstanceOf(TimeoutError);
    expect(isTransportError(late)).toBe(true);

    const huge = await endpoint((body, response) =>
      json(response, 200, { jsonrpc: "2.0", id: (body as Call).id, result: "x".repeat(11 * 1024 * 1024) }),
    );
    const tooLarge = await call(client(huge.url), "eth_a", "0x").catch((e: unknown) => e);
    expect(tooLarge).toBeInstanceOf(HttpRequestError);
    expect(isTransportError(tooLarge)).toBe(true);
  });

  it("fails a call the node left out of a batch answer, and answers the others", async () => {
    const rpc = await endpoint((body, response) => {
      const calls = body as Call[];
      json(response, 200, [{ jsonrpc: "2.0", id: calls[0]?.id, result: "0x1" }]);
    });
    const c = client(rpc.url);
    const [first, second] = await Promise.allSettled([call(c, "eth_a", "0x"), call(c, "eth_b", "0x")]);
    expect(first).toEqual({ status: "fulfilled", value: "0x1" });
    expect(second.status).toBe("rejected");
    expect(isTransportError((second as PromiseRejectedResult).reason)).toBe(true);
  });

  it("keeps a slow answer beyond the idle-connection limit, and reconnects after an idle close", async () => {
    const rpc = await endpoint((body, response) => setTimeout(() => echo(body, response), 300));
    const c = client(rpc.url, { idleSocketMs: 100 });
    expect(await call(c, "eth_a", "0x1")).toBe("eth_a:0x1");
    await new Promise((resolve) => setTimeout(resolve, 250));
    expect(await call(c, "eth_b", "0x2")).toBe("eth_b:0x2");
  });

  it("sends the URL's credentials as basic authorization, not in the URL", async () => {
    const rpc = await endpoint(echo);
    const withCredentials = rpc.url.replace("http://", "http://user:p%40ss@");
    expect(await call(client(withCredentials), "eth_a", "0x")).toBe("eth_a:0x");
    expect(rpc.seen[0]?.authorization).toBe(`Basic ${Buffer.from("user:p@ss").toString("base64")}`);
  });
});
