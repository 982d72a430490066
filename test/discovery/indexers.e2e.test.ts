import { execFile } from "node:child_process";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import { validatePaymentRequiredDetailed } from "@agentcash/discovery";
import { decodePaymentRequiredHeader } from "@x402/core/http";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { z } from "zod";
import { isImplemented, OPERATIONS } from "../../src/catalog/registry.ts";
import { devPrivateKey } from "../../src/chain/dev-accounts.ts";
import { createPayer } from "../../src/client/paying-fetch.ts";
import type { AnyOperation } from "../../src/contract/operation.ts";
import { openStore } from "../../src/store/open-store.ts";
import { type TestService, usdcBalances } from "../helpers/service.ts";
import { startDiscoveryService } from "./service.ts";

/** The engine x402scan runs (`npx @agentcash/discovery <origin>`), as its own command-line program. */
const DISCOVERY_CLI = fileURLToPath(
  new URL("../../node_modules/@agentcash/discovery/bin/discovery.js", import.meta.url),
);

/**
 * x402scan's parser of /.well-known/x402 (not an npm package): the `discoveryDocumentSchema` of
 * Merit-Systems/x402scan, packages/external/mcp/src/server/tools/lib/fetch-well-known.ts, with the
 * `resources: z.array(z.url())` of its discover-resources tool (the stricter of its two readers).
 * A zod object: members it does not name are tolerated (and dropped).
 */
const X402SCAN_DISCOVERY_DOCUMENT = z.object({
  version: z.number().refine((v) => v === 1, { message: "version must be 1" }),
  resources: z.array(z.url()),
  ownershipProofs: z.array(z.string()).optional(),
  instructions: z.string().optional(),
});

interface DiscoverOutput {
  ok: boolean;
  resources: { method: string; path: string; authHint?: string; priceHint?: string }[];
  warnings: { code: string; severity: string; message: string; path?: string }[];
}

const hasBody = (operation: AnyOperation) => operation.inputFrom === "body";

describe("the indexers find and read every paid route (issue 20, point 2)", () => {
  let service: TestService;
  /** Whether an operation can be bought here now (/catalog.json), else it answers 503 before any 402. */
  let available: Map<string, boolean>;

  beforeAll(async () => {
    service = await startDiscoveryService();
    const catalog = await (await fetch(`${service.url}/catalog.json`)).json();
    available = new Map(
      [...catalog.operations, ...catalog.products].map((entry: { id: string; available: boolean }) => [
        entry.id,
        entry.available,
      ]),
    );
  });
  afterAll(async () => {
    await service?.stop();
  });

  /** A probe as x402scan documents it: `curl -X POST <route>` (or GET), no body, no payment. */
  const probe = (operation: AnyOperation) =>
    fetch(service.url + operation.path, { method: operation.method });

  it("a body-less unpaid probe of every paid route gets the 402 with its terms", async () => {
    for (const operation of OPERATIONS.filter(isImplemented)) {
      const response = await probe(operation);
      if (available.get(operation.id) === false) {
        expect(response.status, operation.id).toBe(503);
        continue;
      }
      expect(response.status, operation.id).toBe(402);
      const terms = decodePaymentRequiredHeader(response.headers.get("PAYMENT-REQUIRED") as string);
      expect(terms.resource.url, operation.id).toBe(service.url + operation.path);
      expect(terms.accepts[0]?.payTo, operation.id).toBe(service.payTo);
    }
  });

  it("a present but invalid body is still a 400 before any 402", async () => {
    for (const operation of OPERATIONS.filter((op) => isImplemented(op) && hasBody(op))) {
      const response = await fetch(service.url + operation.path, {
        method: operation.method,
        headers: { "content-type": "application/json" },
        body: "[]",
      });
      expect(response.status, operation.id).toBe(400);
      expect(response.headers.get("PAYMENT-REQUIRED"), operation.id).toBeNull();
      expect((await response.json()).errors.length, operation.id).toBeGreaterThan(0);
    }
  });

  it("a paid request without its required body is a 400 naming the body, and nothing is charged", async () => {
    const payer = createPayer(devPrivateKey(3));
    const balanceOf = usdcBalances(service.localChain?.rpcUrl as string);
    const before = await balanceOf(payer.address);
    const required = OPERATIONS.filter(
      (op) => isImplemented(op) && hasBody(op) && !op.bodyOptional && available.get(op.id) !== false,
    );
    expect(required.length).toBeGreaterThan(5);
    for (const operation of required) {
      const payment = await payer.signPayment(await probe(operation));
      const response = await fetch(service.url + operation.path, {
        method: operation.method,
        headers: payment,
      });
      expect(response.status, operation.id).toBe(400);
      const problem = await response.json();
      expect(problem.errors[0], operation.id).toMatchObject({ pointer: "" });
      expect(problem.errors[0].message, operation.id).toMatch(/body/);
      expect(response.headers.get("PAYMENT-RESPONSE"), operation.id).toBeNull();
    }
    expect(await balanceOf(payer.address)).toBe(before);
    const store = await openStore(service.config.database);
    try {
      expect(await store.paymentCounts()).toEqual([]);
    } finally {
      await store.close();
    }
  });

  it("@agentcash/discovery's validatePaymentRequiredDetailed passes every 402, with input and output schemas", async () => {
    let validated = 0;
    for (const operation of OPERATIONS.filter((op) => isImplemented(op) && available.get(op.id) !== false)) {
      const response = await probe(operation);
      const paymentRequired = decodePaymentRequiredHeader(response.headers.get("PAYMENT-REQUIRED") as string);
      const result = validatePaymentRequiredDetailed(paymentRequired);
      expect(result.issues, operation.id).toEqual([]);
      expect(result.valid, operation.id).toBe(true);
      expect(result.normalized, operation.id).toMatchObject({
        version: 2,
        hasInputSchema: true,
        hasOutputSchema: true,
      });
      validated++;
    }
    expect(validated).toBeGreaterThanOrEqual(OPERATIONS.length - 1);
  });

  it("@agentcash/discovery's discover finds every paid route as `paid` with its price, and warns of nothing", async () => {
    const { stdout } = await promisify(execFile)(
      process.execPath,
      [DISCOVERY_CLI, "discover", service.url, "--json"],
      { timeout: 50_000, maxBuffer: 16 * 1024 * 1024 },
    );
    const discovered = JSON.parse(stdout) as DiscoverOutput;
    expect(discovered.ok).toBe(true);
    for (const operation of OPERATIONS) {
      const resource = discovered.resources.find(
        (entry) => entry.method === operation.method && entry.path === operation.path,
      );
      expect(resource, operation.id).toMatchObject({
        authHint: "paid",
        priceHint: `${operation.priceUsd} USD`,
      });
    }
    // Error level is the bar of the issue; warnings are kept at none as well (info notes may remain).
    expect(discovered.warnings.filter((warning) => warning.severity !== "info")).toEqual([]);
  });

  it("/.well-known/x402 parses with x402scan's reader and keeps the payment manifest", async () => {
    const manifest = await (await fetch(`${service.url}/.well-known/x402`)).json();
    const parsed = X402SCAN_DISCOVERY_DOCUMENT.safeParse(manifest);
    expect(parsed.error?.issues ?? []).toEqual([]);
    // One URL per paid path (x402scan probes each with the method that answers 402).
    expect(parsed.data?.resources).toEqual([...new Set(OPERATIONS.map((op) => service.url + op.path))]);
    expect(parsed.data?.instructions).toContain(`${service.url}/openapi.json`);
    // The payment manifest of SPEC.md: manifest version 1, payment protocol version 2, every resource's terms.
    expect(manifest).toMatchObject({ version: 1, x402Version: 2 });
    expect(manifest.items).toHaveLength(OPERATIONS.length);
    for (const operation of OPERATIONS) {
      const item = manifest.items.find(
        (entry: { resource: string; method: string }) =>
          entry.resource === service.url + operation.path && entry.method === operation.method,
      );
      expect(item, operation.id).toMatchObject({ type: "http", x402Version: 2 });
      expect(item.accepts[0].payTo, operation.id).toBe(service.payTo);
    }
  });

  it("/llms.txt points agents at every discovery document, each of which is served", async () => {
    const response = await fetch(`${service.url}/llms.txt`);
    expect(response.status).toBe(200);
    expect(response.headers.get("content-type")).toMatch(/^text\/(plain|markdown)/);
    const text = await response.text();
    expect(text.startsWith("# utility402\n")).toBe(true);
    const links = [...text.matchAll(/\]\((https?:\/\/[^)\s]+)\)/g)].map((match) => match[1] as string);
    for (const document of [
      "/openapi.json",
      "/catalog.json",
      "/.well-known/x402",
      "/.well-known/agent-skills/index.json",
    ]) {
      expect(links, document).toContain(service.url + document);
    }
    for (const link of new Set(links)) {
      expect((await fetch(link)).status, link).toBe(200);
    }
    for (const operation of OPERATIONS) {
      expect(text, operation.id).toContain(`${operation.method} ${service.url}${operation.path}`);
      expect(text, operation.id).toContain(`USD ${operation.priceUsd}`);
    }
    const openapi = await (await fetch(`${service.url}/openapi.json`)).json();
    expect(openapi["x-agentcash-guidance"]).toEqual({ llmsTxtUrl: `${service.url}/llms.txt` });
  });
});
