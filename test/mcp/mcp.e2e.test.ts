import type { Client } from "@modelcontextprotocol/sdk/client/index.js";
import {
  decodePaymentRequiredHeader,
  decodePaymentSignatureHeader,
  encodePaymentSignatureHeader,
} from "@x402/core/http";
import type { PaymentPayload } from "@x402/core/types";
import { validateDiscoveryExtension } from "@x402/extensions/bazaar";
import { generatePaymentId } from "@x402/extensions/payment-identifier";
import { createPublicClient, http, parseAbiItem } from "viem";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { devPrivateKey } from "../../src/chain/dev-accounts.ts";
import { createPayer } from "../../src/client/paying-fetch.ts";
import { BASE_USDC_ADDRESS } from "../../src/config.ts";
import { defineOperation } from "../../src/contract/operation.ts";
import { csvCleanup } from "../../src/operations/csv-cleanup/index.ts";
import { humanoidFmeaQuery } from "../../src/operations/humanoid-fmea-query/index.ts";
import { jsonDiff } from "../../src/operations/json-diff/index.ts";
import { unitConvert } from "../../src/operations/unit-convert/index.ts";
import { Problem } from "../../src/problem.ts";
import { openStore } from "../../src/store/open-store.ts";
import type { Store } from "../../src/store/store.ts";
import { moneyOfCalls, payOnce } from "../helpers/paid-call-money.ts";
import { jsonPost, startTestService, type TestService, usdcBalances } from "../helpers/service.ts";
import {
  callTool,
  connectMcp,
  payTool,
  receiptOf,
  type ToolPayer,
  termsOf,
  toolPayer,
} from "./paying-mcp-client.ts";

// An operation that fails after its payment was verified (its upstream is down): never charged.
const upstreamDown = defineOperation({
  ...unitConvert,
  id: "test-upstream-down",
  path: "/v1/test-upstream-down",
  priceUsd: "0.02",
  handler: async () => {
    throw Problem.of("upstream-unavailable", "the upstream did not answer");
  },
});

// An operation whose body reader has a bug: the tool answers a problem, never a JSON-RPC internal error.
const readerBug = defineOperation({
  ...unitConvert,
  id: "test-reader-bug",
  path: "/v1/test-reader-bug",
  readBody: async () => {
    throw new Error("a bug in the body reader");
  },
});

const TRANSFER = parseAbiItem("event Transfer(address indexed from, address indexed to, uint256 value)");

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
  /** The service's ledger, opened once: each open migrates under a database-wide lock (seconds with PostgreSQL under load). */
  let ledger: Store;
  const payer: ToolPayer = toolPayer(devPrivateKey(3));

  beforeAll(async () => {
    service = await startTestService(
      // The clients here share the service's event loop: on a loaded machine a client finishes reading an
      // answer seconds after the server sent it, its idle-socket timer runs that much behind the server's
      // 5 s keep-alive, and it sends the next call on a socket the server just closed (ECONNRESET, seen
      // under load; nothing was read, nothing charged). Sockets kept a minute leave that race to idle minutes.
      { HTTP_KEEP_ALIVE_TIMEOUT_MS: "60000" },
      { operations: [jsonDiff, unitConvert, humanoidFmeaQuery, csvCleanup, upstreamDown, readerBug] },
    );
    balanceOf = usdcBalances(service.localChain?.rpcUrl as string);
    client = await connectMcp(service.url);
    ledger = await openStore(service.config.database);
  });
  afterAll(async () => {
    await client?.close();
    await ledger?.close();
    await service?.stop();
  });

  const settledRows = async () => {
    const rows = await ledger.paymentCounts();
    return rows.filter((row) => row.state === "settled").reduce((sum, row) => sum + row.count, 0);
  };

  it("lists every sync operation as a tool named by its id, with its schemas and price, and the free get_job", async () => {
    const { tools } = await client.listTools();
    expect(tools.map((tool) => tool.name).sort()).toEqual(
      [
        "csv-cleanup",
        "get_job",
        "humanoid-fmea-query",
        "json-diff",
        "test-reader-bug",
        "test-upstream-down",
        "unit-convert",
      ].sort(),
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
      const receipt = receiptOf(result);
      expect(receipt).toMatchObject({ success: true, network: "eip155:8453" });
      expect(receipt?.transaction).toMatch(/^0x[0-9a-f]{64}$/);
      expect(result.structuredContent).toEqual(JSON.parse((result.content[0] as { text: string }).text));
      const price = PRICES[name];
      expect(await balanceOf(payer.address)).toBe(payerBefore - price);
      expect(await balanceOf(service.payTo)).toBe(payToBefore + price);
      await expect.poll(settledRows).toBe(rowsBefore + 1);
    }
  });

  it("a payment made through MCP replays through HTTP charged nothing, and one made through HTTP replays through MCP", async () => {
    const args = { before: { n: 1 }, after: { n: 2 } };
    const { result, payment } = await payTool(client, payer, "json-diff", args);
    expect(result.isError).toBeFalsy();
    const [payerAfterPaying, payToAfterPaying] = [
      await balanceOf(payer.address),
      await balanceOf(service.payTo),
    ];
    // The same payment, the same request, through the route: the kept answer, nothing charged.
    const viaHttp = await fetch(
      `${service.url}/v1/json-diff`,
      jsonPost(args, { "PAYMENT-SIGNATURE": encodePaymentSignatureHeader(payment) }),
    );
    expect(viaHttp.status).toBe(200);
    expect(viaHttp.headers.get("x-payment-replayed")).toBe("true");
    expect(await viaHttp.json()).toEqual(result.structuredContent);
    // The same payment for another request, through either door: 409, never a second charge.
    const other = { before: { n: 1 }, after: { n: 3 } };
    const conflict = await callTool(client, "json-diff", other, payment);
    expect(conflict.structuredContent).toMatchObject({ status: 409 });
    expect(await balanceOf(payer.address)).toBe(payerAfterPaying);
    expect(await balanceOf(service.payTo)).toBe(payToAfterPaying);

    // The other way round: paid through the route by the official @x402/fetch client, replayed as a tool.
    const httpPayer = createPayer(devPrivateKey(4));
    const url = `${service.url}/v1/json-diff`;
    const headers = await httpPayer.signPayment(await fetch(url, jsonPost(other)));
    const paid = await fetch(url, jsonPost(other, headers));
    expect(paid.status).toBe(200);
    const httpBody = await paid.json();
    const httpPayerAfter = await balanceOf(httpPayer.address);
    const replayed = await callTool(
      client,
      "json-diff",
      other,
      decodePaymentSignatureHeader(headers["PAYMENT-SIGNATURE"] as string),
    );
    expect(replayed.isError).toBeFalsy();
    expect(replayed._meta?.["utility402/replayed"]).toBe(true);
    expect(replayed._meta?.["x402/payment-response"]).toMatchObject({ success: true });
    expect(replayed.structuredContent).toEqual(httpBody);
    expect(await balanceOf(httpPayer.address)).toBe(httpPayerAfter);
  });

  it("an unexpected error is a tool error (problem 500), never a JSON-RPC error, and asks for nothing", async () => {
    const result = await callTool(client, "test-reader-bug", { value: 1, from: "m", to: "ft" });
    expect(result).toMatchObject({ isError: true, structuredContent: { status: 500 } });
    await expect(callTool(client, "no-such-tool", {})).rejects.toThrow(/Unknown tool/);
  });

  it("a payment-identifier makes a retry through the other door with a new payment one charge and one result", async () => {
    const url = `${service.url}/v1/json-diff`;
    const routeTerms = async (args: unknown) =>
      decodePaymentRequiredHeader(
        (await fetch(url, jsonPost(args))).headers.get("PAYMENT-REQUIRED") as string,
      );
    const nonceOf = (payment: { payload: Record<string, unknown> }) =>
      (payment.payload.authorization as { nonce: string }).nonce;
    for (const first of ["mcp", "http"] as const) {
      const id = generatePaymentId();
      const retrying = toolPayer(devPrivateKey(6), { paymentId: () => id });
      const args = { before: { retry: first }, after: { retry: first, again: true } };
      const before = await balanceOf(retrying.address);
      // The first attempt is paid and answered, but the agent never sees the answer.
      let answer: unknown;
      let firstPayment: { payload: Record<string, unknown> };
      if (first === "mcp") {
        const paid = await payTool(client, retrying, "json-diff", args);
        expect(paid.result.isError).toBeFalsy();
        [answer, firstPayment] = [paid.result.structuredContent, paid.payment];
      } else {
        const payment = await retrying.sign(await routeTerms(args));
        const paid = await fetch(
          url,
          jsonPost(args, { "PAYMENT-SIGNATURE": encodePaymentSignatureHeader(payment) }),
        );
        expect(paid.status).toBe(200);
        [answer, firstPayment] = [await paid.json(), payment];
      }
      // It retries through the other door with a new payment (a new nonce) under the same id.
      if (first === "mcp") {
        const second = await retrying.sign(await routeTerms(args));
        expect(nonceOf(second)).not.toBe(nonceOf(firstPayment));
        const retried = await fetch(
          url,
          jsonPost(args, { "PAYMENT-SIGNATURE": encodePaymentSignatureHeader(second) }),
        );
        expect(retried.status).toBe(200);
        expect(await retried.json()).toEqual(answer);
      } else {
        const second = await retrying.sign(termsOf(await callTool(client, "json-diff", args)));
        expect(nonceOf(second)).not.toBe(nonceOf(firstPayment));
        const retried = await callTool(client, "json-diff", args, second);
        expect(retried.isError).toBeFalsy();
        expect(retried.structuredContent).toEqual(answer);
      }
      expect(await balanceOf(retrying.address)).toBe(before - PRICES["json-diff"]);
    }
  });

  it("a tool whose work fails is a tool error and charges nothing (the payment is released)", async () => {
    const [payerBefore, payToBefore] = [await balanceOf(payer.address), await balanceOf(service.payTo)];
    const { result } = await payTool(client, payer, "test-upstream-down", { value: 1, from: "m", to: "ft" });
    expect(result.isError).toBe(true);
    expect(result.structuredContent).toMatchObject({ status: 502, detail: "the upstream did not answer" });
    expect(await balanceOf(payer.address)).toBe(payerBefore);
    expect(await balanceOf(service.payTo)).toBe(payToBefore);
    const rows = await ledger.paymentCounts();
    expect(rows.find((row) => row.operationId === "test-upstream-down")).toMatchObject({
      state: "released",
    });
  });

  it("32 concurrent paid tool calls: each one's money read from the ledger and the chain, delivered ⇔ settled once", async () => {
    const payers = Array.from({ length: 8 }, (_, i) => toolPayer(devPrivateKey(i + 2)));
    const clients = await Promise.all(Array.from({ length: 4 }, () => connectMcp(service.url)));
    const targets = clients.map((mcp) => ({
      baseUrl: service.url,
      path: "/v1/json-diff",
      mcp: { client: mcp, tool: "json-diff" },
    }));
    const targetOf = (i: number) => targets[i % targets.length] as (typeof targets)[number];
    try {
      const plans = Array.from({ length: 32 }, (_, i) => ({
        door: "mcp" as const,
        payer: payers[i % payers.length] as ToolPayer,
        args: { before: { call: i }, after: { call: i, concurrent: true } },
      }));
      const payments = await Promise.all(plans.map((plan, i) => payOnce.sign(targetOf(i), plan)));
      const chain = createPublicClient({ transport: http(service.localChain?.rpcUrl) });
      const [fromBlock, rowsBefore, payToBefore] = [
        (await chain.getBlockNumber({ cacheTime: 0 })) + 1n,
        await settledRows(),
        await balanceOf(service.payTo),
      ];
      const records = await Promise.all(
        plans.map((plan, i) => payOnce.firstAttempt(targetOf(i), plan, payments[i] as PaymentPayload)),
      );
      // A loaded machine may answer a call "retry the same payment" (its settlement not confirmed in time, its
      // answer lost): the client does as told, and the service promises the result, charged once.
      await Promise.all(records.map((record, i) => payOnce.followRetries(targetOf(i), record)));
      // Every call's money is read before anything is asserted, so a failure says what became of each one.
      const money = await moneyOfCalls(service.localChain?.rpcUrl as string, ledger, service.payTo, records);
      const retried = money.filter((call) => call.record.attempts.length > 1).map((call) => call.report);
      if (retried.length > 0) console.log(`calls answered after a retry:\n${retried.join("\n")}`);
      expect(money.filter((call) => call.verdict !== "consistent").map((call) => call.report)).toEqual([]);
      expect(money.filter((call) => !call.record.delivered()).map((call) => call.report)).toEqual([]);

      const transfers = await chain.getLogs({
        address: BASE_USDC_ADDRESS,
        event: TRANSFER,
        args: { to: service.payTo },
        fromBlock,
        toBlock: await chain.getBlockNumber({ cacheTime: 0 }),
      });
      expect(new Set(money.map((call) => call.chain.transaction))).toEqual(
        new Set(transfers.map((log) => log.transactionHash)),
      );
      expect(await settledRows()).toBe(rowsBefore + 32);
      expect(await balanceOf(service.payTo)).toBe(payToBefore + 32n * PRICES["json-diff"]);
    } finally {
      await Promise.all(clients.map((c) => c.close()));
    }
  });

  it("labels the revenue of tool calls with the mcp door in /metrics", async () => {
    const metrics = await (await fetch(`${service.url}/metrics`)).text();
    expect(metrics).toMatch(/operation="json-diff",door="mcp"\} \d+/);
  });

  it("the endpoint is listed, from the registry, in /openapi.json, /catalog.json, /.well-known/x402, llms.txt and a SKILL.md", async () => {
    const get = async (path: string) => (await fetch(service.url + path)).json();
    const { tools } = await client.listTools();
    const names = tools.map((tool) => tool.name);
    const mcpUrl = `${service.url}/mcp`;

    const openapi = await get("/openapi.json");
    expect(openapi.info.description).toContain(mcpUrl);
    expect(openapi["x-mcp"]).toMatchObject({ url: mcpUrl, transport: "streamable-http" });

    const catalog = await get("/catalog.json");
    expect(catalog.mcp).toMatchObject({ url: mcpUrl, transport: "streamable-http" });
    expect(catalog.mcp.tools.map((tool: { name: string }) => tool.name)).toEqual(names);

    const manifest = await get("/.well-known/x402");
    expect(manifest.mcp.url).toBe(mcpUrl);
    expect(manifest.mcp.items.map((item: { toolName: string }) => item.toolName)).toEqual(
      names.filter((name) => name !== "get_job"),
    );
    for (const item of manifest.mcp.items) {
      expect(item.resource).toBe(`mcp://tool/${item.toolName}`);
      // The terms a tool call answers with are the manifest's.
      const terms = termsOf(await callTool(client, item.toolName));
      expect(terms.accepts).toEqual(item.accepts);
      // The call carries the compact extension (echoed in every payment); the manifest the complete one.
      for (const bazaar of [
        terms.extensions?.bazaar as { info: { input: unknown } },
        item.extensions.bazaar,
      ]) {
        expect(validateDiscoveryExtension(bazaar as never).valid, item.toolName).toBe(true);
        expect(bazaar.info.input).toMatchObject({
          type: "mcp",
          toolName: item.toolName,
          transport: "streamable-http",
        });
      }
      expect(item.extensions.bazaar.info.output.example).toBeDefined();
    }

    const llms = await (await fetch(`${service.url}/llms.txt`)).text();
    expect(llms).toContain(mcpUrl);

    const skills = await get("/.well-known/agent-skills/index.json");
    const skill = skills.skills.find((entry: { name: string }) => entry.name === "mcp");
    expect(skill.url).toBe(catalog.mcp.skill);
    const markdown = await (await fetch(skill.url)).text();
    expect(markdown).toContain(`claude mcp add --transport http utility402 ${mcpUrl}`);
    expect(markdown).toContain('"x402/payment"');
    for (const name of names) expect(markdown).toContain(`\`${name}\``);
  });
});
