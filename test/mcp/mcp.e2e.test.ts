import type { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { devPrivateKey } from "../../src/chain/dev-accounts.ts";
import { csvCleanup } from "../../src/operations/csv-cleanup/index.ts";
import { humanoidFmeaQuery } from "../../src/operations/humanoid-fmea-query/index.ts";
import { jsonDiff } from "../../src/operations/json-diff/index.ts";
import { unitConvert } from "../../src/operations/unit-convert/index.ts";
import { openStore } from "../../src/store/open-store.ts";
import { jsonPost, startTestService, type TestService, usdcBalances } from "../helpers/service.ts";
import { callTool, connectMcp, payTool, type ToolPayer, termsOf, toolPayer } from "./paying-mcp-client.ts";

const PRICES = {
  "json-diff": 10_000n,
  "unit-convert": 10_000n,
  "humanoid-fmea-query": 50_000n,
  "csv-cleanup": 2_000_000n,
};

describe("the MCP door: every operation a paid tool (official MCP SDK client, official x402 client)", () => {
  let service: TestService;
  let client: Client;
  let balanceOf: ReturnType<typeof usdcBalances>;
  const payer: ToolPayer = toolPayer(devPrivateKey(3));

  beforeAll(async () => {
    service = await startTestService(
      {},
      { operations: [jsonDiff, unitConvert, humanoidFmeaQuery, csvCleanup] },
    );
    balanceOf = usdcBalances(service.localChain?.rpcUrl as string);
    client = await connectMcp(service.url);
  });
  afterAll(async () => {
    await client?.close();
    await service?.stop();
  });

  const settledRows = async () => {
    const store = await openStore(service.config.database);
    try {
      const rows = await store.paymentCounts();
      return rows.filter((row) => row.state === "settled").reduce((sum, row) => sum + row.count, 0);
    } finally {
      await store.close();
    }
  };

  it("lists every sync operation as a tool named by its id, with its schemas and price, and the free get_job", async () => {
    const { tools } = await client.listTools();
    expect(tools.map((tool) => tool.name).sort()).toEqual(
      ["csv-cleanup", "get_job", "humanoid-fmea-query", "json-diff", "unit-convert"].sort(),
    );
    const diff = tools.find((tool) => tool.name === "json-diff");
    expect(diff?.inputSchema.required).toEqual(["before", "after"]);
    expect(diff?.description).toContain("Price: USD 0.01 per call");
    expect(diff?._meta?.["utility402/price"]).toMatchObject({ usd: "0.01", amount: "10000" });
    expect(diff?.outputSchema?.type).toBe("object");
  });

  it("an unpaid call answers the terms in the x402 MCP shape: isError, PaymentRequired, the x402/error wrapper", async () => {
    const result = await callTool(client, "json-diff", { before: { a: 1 }, after: { a: 2 } });
    const terms = termsOf(result);
    expect(terms.resource.url).toBe("mcp://tool/json-diff");
    expect(terms.accepts[0]).toMatchObject({ scheme: "exact", network: "eip155:8453", amount: "10000" });
    const wrapped = JSON.parse((result.content[0] as { text: string }).text);
    expect(wrapped["x402/error"]).toMatchObject({ code: 402, data: { x402Version: 2 } });
    // A call without arguments is a probe for the price, as a route's call without a body.
    expect(termsOf(await callTool(client, "csv-cleanup")).accepts[0]?.amount).toBe("2000000");
  });

  it("bad arguments are a tool error naming the field by the route's JSON Pointer, before any payment, never charged", async () => {
    const before = await balanceOf(payer.address);
    const bad = { rows: [{ id: 1 }], keyColumns: [], surprise: true };
    const result = await callTool(client, "csv-cleanup", bad);
    expect(result.isError).toBe(true);
    const http = await (await fetch(`${service.url}/v1/csv-cleanup`, jsonPost(bad))).json();
    expect(http.status).toBe(400);
    expect(result.structuredContent).toMatchObject({ status: 400, errors: http.errors });
    expect(http.errors.length).toBeGreaterThan(0);
    // With a payment too: refused before the payment is looked at.
    const terms = termsOf(await callTool(client, "csv-cleanup", { rows: [{ id: "a" }] }));
    const paid = await callTool(client, "csv-cleanup", bad, await payer.sign(terms));
    expect(paid.structuredContent).toMatchObject({ status: 400, errors: http.errors });
    expect(await balanceOf(payer.address)).toBe(before);
  });

  it("pays three tools on the local chain: each charged once, the receipt in _meta, the result structured", async () => {
    const calls = [
      { name: "json-diff", args: { before: { a: 1 }, after: { a: 2, b: [1] } } },
      { name: "unit-convert", args: unitConvert.example.input as Record<string, unknown> },
      { name: "humanoid-fmea-query", args: humanoidFmeaQuery.example.input as Record<string, unknown> },
    ] as const;
    for (const { name, args } of calls) {
      const [payerBefore, payToBefore, rowsBefore] = [
        await balanceOf(payer.address),
        await balanceOf(service.payTo),
        await settledRows(),
      ];
      const { result } = await payTool(client, payer, name, args);
      expect(result.isError, JSON.stringify(result).slice(0, 400)).toBeFalsy();
      const receipt = result._meta?.["x402/payment-response"] as { success: boolean; transaction: string };
      expect(receipt).toMatchObject({ success: true, network: "eip155:8453" });
      expect(receipt.transaction).toMatch(/^0x[0-9a-f]{64}$/);
      expect(result.structuredContent).toEqual(JSON.parse((result.content[0] as { text: string }).text));
      const price = PRICES[name];
      expect(await balanceOf(payer.address)).toBe(payerBefore - price);
      expect(await balanceOf(service.payTo)).toBe(payToBefore + price);
      await expect.poll(settledRows).toBe(rowsBefore + 1);
    }
  });
});
