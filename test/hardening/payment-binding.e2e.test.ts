import type { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { decodePaymentSignatureHeader } from "@x402/core/http";
import pino from "pino";
import { createWalletClient, http, publicActions } from "viem";
import { privateKeyToAccount } from "viem/accounts";
import { base } from "viem/chains";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { wrapFetchWithPayment } from "x402-fetch";
import { devAccounts, devPrivateKey } from "../../src/chain/dev-accounts.ts";
import { type LocalChain, startLocalChain } from "../../src/chain/local-chain.ts";
import { createPayer } from "../../src/client/paying-fetch.ts";
import { freePort, jsonPost, startTestService, type TestService, usdcBalances } from "../helpers/service.ts";
import { callTool, connectMcp, termsOf, toolPayer } from "../mcp/paying-mcp-client.ts";

const DIFF = { before: { a: 1 }, after: { a: 2 } };
const CONVERT = { value: 100, from: "psi", to: "kPa" };
const PRICE = 10_000n;
const base64 = (value: unknown) => Buffer.from(JSON.stringify(value)).toString("base64");
const withoutResource = <T extends { resource?: unknown }>({ resource: _, ...payment }: T) => payment;

/**
 * Finding 8 of the hardening review: "an unused payment for one operation was accepted by another at the
 * same price". A payment names the resource it was signed for; it pays for that route only.
 */
describe("a payment is bound to the resource it was signed for", () => {
  let chain: LocalChain;
  let service: TestService;

  beforeAll(async () => {
    chain = await startLocalChain({ port: await freePort(), log: pino({ level: "silent" }) });
    service = await startTestService({
      PAYMENT_MODE: "self",
      X402_SETTLER_PRIVATE_KEY: devPrivateKey(0),
      RPC_URL: chain.rpcUrl,
      X402_PAY_TO: devAccounts().payTo.address,
    });
  }, 120_000);

  const clients: Client[] = [];
  afterAll(async () => {
    await Promise.all(clients.map((client) => client.close().catch(() => undefined)));
    await service?.stop();
    await chain?.stop();
  });

  it("refuses a json-diff payment at unit-convert (same price), charges nothing, and json-diff still takes it", async () => {
    const payer = createPayer(devPrivateKey(5));
    const balanceOf = usdcBalances(chain.rpcUrl);
    const before = await balanceOf(payer.address);
    const diff = { before: { a: 1 }, after: { a: 2 } };
    const payment = await payer.signPayment(await fetch(`${service.url}/v1/json-diff`, jsonPost(diff)));

    const elsewhere = await fetch(
      `${service.url}/v1/unit-convert`,
      jsonPost({ value: 100, from: "psi", to: "kPa" }, payment),
    );
    expect(elsewhere.status).toBe(402);
    const problem = await elsewhere.json();
    expect(problem.reason).toBe("resource_mismatch");
    expect(problem.detail).toContain("/v1/json-diff");
    expect(await balanceOf(payer.address)).toBe(before);

    const here = await fetch(`${service.url}/v1/json-diff`, jsonPost(diff, payment));
    expect(here.status).toBe(200);
    expect(await balanceOf(payer.address)).toBe(before - 10_000n);
  });

  it("HTTP v2: the json-diff payment with its resource removed is still refused at unit-convert (its accepted terms name json-diff)", async () => {
    const payer = createPayer(devPrivateKey(6));
    const balanceOf = usdcBalances(chain.rpcUrl);
    const before = await balanceOf(payer.address);
    const signed = await payer.signPayment(await fetch(`${service.url}/v1/json-diff`, jsonPost(DIFF)));
    const bare = {
      "PAYMENT-SIGNATURE": base64(
        withoutResource(decodePaymentSignatureHeader(signed["PAYMENT-SIGNATURE"] as string)),
      ),
    };

    const elsewhere = await fetch(`${service.url}/v1/unit-convert`, jsonPost(CONVERT, bare));
    expect(elsewhere.status).toBe(402);
    const problem = await elsewhere.json();
    expect(problem.reason).toBe("resource_mismatch");
    expect(problem.detail).toContain("/v1/json-diff");
    expect(await balanceOf(payer.address)).toBe(before);

    const here = await fetch(`${service.url}/v1/json-diff`, jsonPost(DIFF, bare));
    expect(here.status).toBe(200);
    expect(await balanceOf(payer.address)).toBe(before - PRICE);
  });

  it("MCP: a payment signed for mcp://tool/json-diff, without resource (and extensions), does not pay unit-convert", async () => {
    const client = await connectMcp(service.url);
    clients.push(client);
    const payer = toolPayer(devPrivateKey(7));
    const balanceOf = usdcBalances(chain.rpcUrl);
    const before = await balanceOf(payer.address);
    const signed = await payer.sign(termsOf(await callTool(client, "json-diff", DIFF)));
    expect(signed.resource?.url).toBe("mcp://tool/json-diff");
    const bare = withoutResource(signed);
    const { extensions: _, ...bareOfAll } = bare;

    for (const payment of [bare, bareOfAll]) {
      const refused = await callTool(client, "unit-convert", CONVERT, payment as never);
      expect(refused.isError).toBe(true);
      expect(String(refused.structuredContent?.error)).toMatch(/^resource_mismatch: .*\/v1\/json-diff/);
    }
    expect(await balanceOf(payer.address)).toBe(before);

    const paid = await callTool(client, "json-diff", DIFF, bare as never);
    expect(paid.isError).toBeFalsy();
    expect(await balanceOf(payer.address)).toBe(before - PRICE);
  });

  it("x402 v1: an unused authorization x402-fetch signed for json-diff is refused at unit-convert (its signed validity names json-diff's quote)", async () => {
    const account = privateKeyToAccount(devPrivateKey(8));
    const wallet = createWalletClient({ account, chain: base, transport: http(chain.rpcUrl) }).extend(
      publicActions,
    );
    const balanceOf = usdcBalances(chain.rpcUrl);
    const before = await balanceOf(account.address);
    // The official v1 client signs json-diff's 402; its X-PAYMENT is kept, never sent.
    let unused: string | undefined;
    const keep: typeof fetch = async (input, init) => {
      const header = (init?.headers as Record<string, string> | undefined)?.["X-PAYMENT"];
      if (header === undefined) return fetch(input, init);
      unused = header;
      return new Response("kept", { status: 499 });
    };
    await wrapFetchWithPayment(
      keep,
      wallet as never,
      1_000_000n,
    )(`${service.url}/v1/json-diff`, jsonPost(DIFF));
    expect(unused).toBeDefined();

    const elsewhere = await fetch(
      `${service.url}/v1/unit-convert`,
      jsonPost(CONVERT, { "X-PAYMENT": unused as string }),
    );
    expect(elsewhere.status).toBe(402);
    const problem = await elsewhere.json();
    expect(problem.reason).toBe("resource_mismatch");
    expect(problem.detail).toContain("/v1/json-diff");
    expect(await balanceOf(account.address)).toBe(before);

    const here = await fetch(
      `${service.url}/v1/json-diff`,
      jsonPost(DIFF, { "X-PAYMENT": unused as string }),
    );
    expect(here.status).toBe(200);
    expect(await balanceOf(account.address)).toBe(before - PRICE);
  });

  it("what an unsigned field cannot bind: a v2 payment whose accepted terms are rewritten to unit-convert's is paid there", async () => {
    // docs/payments.md, "What a payment is bound to": `resource` and `accepted` are not signed, so whoever
    // holds a v2 payment can make it name another route at the same price. This pins that documented limit.
    const payer = createPayer(devPrivateKey(9));
    const balanceOf = usdcBalances(chain.rpcUrl);
    const before = await balanceOf(payer.address);
    const signed = await payer.signPayment(await fetch(`${service.url}/v1/json-diff`, jsonPost(DIFF)));
    const unitTerms = await payer.signPayment(
      await fetch(`${service.url}/v1/unit-convert`, jsonPost(CONVERT)),
    );
    const forDiff = decodePaymentSignatureHeader(signed["PAYMENT-SIGNATURE"] as string);
    const forUnit = decodePaymentSignatureHeader(unitTerms["PAYMENT-SIGNATURE"] as string);
    const rewritten = { ...forDiff, resource: forUnit.resource, accepted: forUnit.accepted };
    const response = await fetch(
      `${service.url}/v1/unit-convert`,
      jsonPost(CONVERT, { "PAYMENT-SIGNATURE": base64(rewritten) }),
    );
    expect(response.status).toBe(200);
    expect(await balanceOf(payer.address)).toBe(before - PRICE);
  });
});
