import type { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { unitConvert } from "../../src/operations/unit-convert/index.ts";
import { startTestService, type TestService } from "../helpers/service.ts";
import { connectMcp } from "./paying-mcp-client.ts";

describe("MCP sessions are bounded: MCP_MAX_SESSIONS at once, closed after MCP_SESSION_IDLE_SECONDS idle", () => {
  let service: TestService;
  let offsetMs = 0;
  const clients: Client[] = [];
  const connect = async () => {
    const client = await connectMcp(service.url);
    clients.push(client);
    return client;
  };

  beforeAll(async () => {
    service = await startTestService(
      { MCP_MAX_SESSIONS: "2", MCP_SESSION_IDLE_SECONDS: "60" },
      { operations: [unitConvert], clock: () => Date.now() + offsetMs },
    );
  });
  afterAll(async () => {
    await Promise.all(clients.map((client) => client.close().catch(() => undefined)));
    await service?.stop();
  });

  it("refuses a session beyond the bound with 503, closes idle ones, and an old session's client is told 404", async () => {
    const first = await connect();
    const second = await connect();
    await expect(connectMcp(service.url)).rejects.toThrow(/every MCP session is taken \(2\)/);
    const initialize = await fetch(`${service.url}/mcp`, {
      method: "POST",
      headers: { "content-type": "application/json", accept: "application/json, text/event-stream" },
      body: JSON.stringify({
        jsonrpc: "2.0",
        id: 1,
        method: "initialize",
        params: {
          protocolVersion: "2025-06-18",
          capabilities: {},
          clientInfo: { name: "raw", version: "1" },
        },
      }),
    });
    expect(initialize.status).toBe(503);
    expect(initialize.headers.get("retry-after")).toBe("30");
    // Both still serve.
    expect((await first.listTools()).tools.length).toBe(2);
    expect((await second.listTools()).tools.length).toBe(2);

    // Once both have been idle past the setting, a new session is opened in place of the idle ones.
    offsetMs += 61_000;
    const third = await connect();
    expect((await third.listTools()).tools.map((tool) => tool.name)).toEqual(["unit-convert", "get_job"]);
    await expect(first.listTools()).rejects.toThrow(/404|Session not found/);

    // A GET offers no event stream (the server sends nothing unasked); the endpoint takes POST and DELETE.
    const get = await fetch(`${service.url}/mcp`, { headers: { accept: "text/event-stream" } });
    expect(get.status).toBe(405);
  });
});
