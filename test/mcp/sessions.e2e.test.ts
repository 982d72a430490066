import type { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { devPrivateKey } from "../../src/chain/dev-accounts.ts";
import { atomicPrice } from "../../src/contract/price.ts";
import { unitConvert } from "../../src/operations/unit-convert/index.ts";
import { startTestService, type TestService, usdcBalances } from "../helpers/service.ts";
import { connectMcp, payTool, receiptOf, toolPayer } from "./paying-mcp-client.ts";

/*
 * Issue 33, item 2: 1,050 unpaid `initialize` requests from one client took every MCP session (the table
 * held 1,000) and every other agent was refused 503 for the idle timeout. The endpoint keeps no sessions
 * now (the SDK transport's stateless mode): an initialization costs one request's work and nothing after it.
 */

const ATTACKER = "203.0.113.7";
const FLOOD = 1_100;
/** Initializations the attacker has in flight at once: below MAX_REQUESTS_PER_CLIENT (64), so none is refused 429. */
const WAVE = 50;

const initialize = (url: string, id: number, headers: Record<string, string> = {}) =>
  fetch(`${url}/mcp`, {
    method: "POST",
    headers: {
      "content-type": "application/json",
      accept: "application/json, text/event-stream",
      "x-forwarded-for": ATTACKER,
      ...headers,
    },
    body: JSON.stringify({
      jsonrpc: "2.0",
      id,
      method: "initialize",
      params: {
        protocolVersion: "2025-06-18",
        capabilities: {},
        clientInfo: { name: "flood", version: "1" },
      },
    }),
  });

describe("a flood of MCP initializations from one client locks out no other", () => {
  let service: TestService;
  const clients: Client[] = [];

  beforeAll(async () => {
    // The attacker is told apart by its forwarded address (the proxy in front is this machine).
    service = await startTestService({ TRUSTED_PROXIES: "127.0.0.1" }, { operations: [unitConvert] });
  }, 120_000);
  afterAll(async () => {
    await Promise.all(clients.map((client) => client.close().catch(() => undefined)));
    await service?.stop();
  });

  it("one client initializes 1,100 times (and goes on); another connects with the SDK client, lists the tools and pays a call", async () => {
    const statuses = new Map<number, number>();
    const sessionIds = new Set<string>();
    let sent = 0;
    const wave = async () => {
      const answers = await Promise.all(Array.from({ length: WAVE }, () => initialize(service.url, ++sent)));
      for (const answer of answers) {
        statuses.set(answer.status, (statuses.get(answer.status) ?? 0) + 1);
        const session = answer.headers.get("mcp-session-id");
        if (session !== null) sessionIds.add(session);
        await answer.arrayBuffer();
      }
    };
    while (sent < FLOOD) await wave();
    const flooded = Object.fromEntries(statuses);

    // The flood goes on while another agent connects, lists the tools and pays.
    let flooding = true;
    const flood = (async () => {
      while (flooding) await wave();
    })();
    try {
      const client = await connectMcp(service.url);
      clients.push(client);
      const { tools } = await client.listTools();
      expect(tools.map((tool) => tool.name)).toEqual(["unit-convert", "get_job"]);
      const payer = toolPayer(devPrivateKey(8));
      const balanceOf = usdcBalances(service.localChain?.rpcUrl as string);
      const before = await balanceOf(payer.address);
      const { result } = await payTool(client, payer, "unit-convert", { value: 1, from: "km", to: "m" });
      expect(result.isError).toBeFalsy();
      expect(result.structuredContent).toMatchObject({ value: 1, from: "km", to: "m" });
      expect(receiptOf(result)).toMatchObject({ success: true });
      expect(await balanceOf(payer.address)).toBe(before - BigInt(atomicPrice(unitConvert)));
    } finally {
      flooding = false;
      await flood;
    }
    // Every initialization was answered, and nothing was kept for any: no session was issued.
    expect(flooded).toEqual({ 200: FLOOD });
    expect([...statuses.keys()]).toEqual([200]);
    expect(sessionIds.size).toBe(0);
  });

  it("the endpoint offers no event stream and no session to end (405), and a session id a client still sends is ignored", async () => {
    const get = await fetch(`${service.url}/mcp`, { headers: { accept: "text/event-stream" } });
    expect(get.status).toBe(405);
    const end = await fetch(`${service.url}/mcp`, {
      method: "DELETE",
      headers: { "mcp-session-id": "00000000-0000-4000-8000-000000000000" },
    });
    expect(end.status).toBe(405);
    const stale = await fetch(`${service.url}/mcp`, {
      method: "POST",
      headers: {
        "content-type": "application/json",
        accept: "application/json, text/event-stream",
        "mcp-session-id": "00000000-0000-4000-8000-000000000000",
        "mcp-protocol-version": "2025-06-18",
      },
      body: '{"jsonrpc":"2.0","id":1,"method":"tools/list"}',
    });
    expect(stale.status).toBe(200);
    const listed = (await stale.json()) as { result: { tools: { name: string }[] } };
    expect(listed.result.tools.map((tool) => tool.name)).toEqual(["unit-convert", "get_job"]);
  });
});
