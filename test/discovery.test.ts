import { createHash } from "node:crypto";
import http from "node:http";
import { createConfig, lintFromString } from "@redocly/openapi-core";
import { Document, type RulesetDefinition, Spectral } from "@stoplight/spectral-core";
import SpectralParsers from "@stoplight/spectral-parsers";
import { oas } from "@stoplight/spectral-rulesets";
import { decodePaymentRequiredHeader } from "@x402/core/http";
import { validateDiscoveryExtension } from "@x402/extensions/bazaar";
import { Ajv2020 } from "ajv/dist/2020.js";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { isImplemented, OPERATIONS } from "../src/catalog/registry.ts";
import { BASE_NETWORK, BASE_USDC_ADDRESS } from "../src/config.ts";
import { inputJsonSchema } from "../src/contract/json-schema.ts";
import { atomicPrice } from "../src/contract/price.ts";
import { startDiscoveryService } from "./discovery/service.ts";
import type { TestService } from "./helpers/service.ts";

const SPEC_PRICES: Record<string, [string, string]> = {
  "POST /v1/tender-shortlist": ["0.15", "150000"],
  "GET /v1/tender-shortlist": ["0.15", "150000"],
  "POST /v1/csv-cleanup": ["2.00", "2000000"],
  "POST /v1/research-brief": ["5.00", "5000000"],
  "POST /v1/json-diff": ["0.01", "10000"],
  "POST /v1/openapi-audit": ["0.05", "50000"],
  "POST /v1/unit-convert": ["0.01", "10000"],
  "POST /v1/humanoid-fmea-query": ["0.05", "50000"],
  "POST /v1/clinical-trials-query": ["0.05", "50000"],
  "POST /v1/chain-arbitrage-snapshot": ["0.03", "30000"],
  "GET /v1/products/csv-json-quality-toolkit": ["9.00", "9000000"],
  "GET /v1/products/agent-safe-paid-work-kit": ["15.00", "15000000"],
  "GET /v1/products/automation-data-toolkit-bundle": ["24.00", "24000000"],
  "GET /v1/products/engineering-unit-conversion-api": ["19.00", "19000000"],
  "GET /v1/products/clinical-trials-outcomes-post-2020": ["99.00", "99000000"],
};

const routeKey = (operation: { method: string; path: string }) => `${operation.method} ${operation.path}`;

describe("discovery documents agree with the registry", () => {
  let service: TestService;
  let openapi: Record<string, any>;
  let catalog: Record<string, any>;
  let manifest: Record<string, any>;
  let skills: Record<string, any>;

  beforeAll(async () => {
    service = await startDiscoveryService();
    const get = async (path: string) => {
      const response = await fetch(service.url + path);
      expect(response.status).toBe(200);
      return response.json();
    };
    [openapi, catalog, manifest, skills] = await Promise.all(
      ["/openapi.json", "/catalog.json", "/.well-known/x402", "/.well-known/agent-skills/index.json"].map(
        get,
      ),
    );
  });
  afterAll(async () => {
    await service?.stop();
  });

  /** What the issue asks accepts[0] to be, for any operation of the registry. */
  const expectedTerms = (operation: (typeof OPERATIONS)[number]) => ({
    scheme: "exact",
    network: BASE_NETWORK,
    asset: BASE_USDC_ADDRESS,
    amount: atomicPrice(operation),
    payTo: service.payTo,
    // A job's payment is held until its result is ready: its authorization must outlive the job. Routes at
    // the same price are 2 s apart, in path order, so that a payment names the one it was quoted for.
    maxTimeoutSeconds:
      (operation.kind === "async" ? 1800 : 120) +
      2 *
        [...new Set(OPERATIONS.filter((other) => other.priceUsd === operation.priceUsd).map((o) => o.path))]
          .sort()
          .indexOf(operation.path),
    extra: { name: "USD Coin", version: "2" },
  });

  it("the registry holds the 15 paid operations of SPEC.md at their exact prices", () => {
    expect(
      Object.fromEntries(OPERATIONS.map((op) => [routeKey(op), [op.priceUsd, atomicPrice(op)]])),
    ).toEqual(SPEC_PRICES);
  });

  it("every implemented operation's 402 carries the registry's terms, identical to the manifest's", async () => {
    for (const operation of OPERATIONS.filter(isImplemented)) {
      const example = operation.example.input as Record<string, string> | undefined;
      const url =
        operation.inputFrom === "query"
          ? `${service.url}${operation.path}?${new URLSearchParams(example)}`
          : service.url + operation.path;
      const response = await fetch(url, {
        method: operation.method,
        ...(operation.inputFrom === "body"
          ? { headers: { "content-type": "application/json" }, body: JSON.stringify(example ?? {}) }
          : {}),
      });
      const listed = [...catalog.operations, ...catalog.products].find((e: any) => e.id === operation.id);
      if (listed?.available === false) {
        // Unavailable now (the clinical snapshot without a full ingest): 503 before any 402.
        expect(response.status, operation.id).toBe(503);
        expect(response.headers.get("retry-after"), operation.id).toBeTruthy();
        continue;
      }
      expect(response.status, operation.id).toBe(402);
      const header = response.headers.get("PAYMENT-REQUIRED") as string;
      const terms = decodePaymentRequiredHeader(header);
      expect(terms.x402Version).toBe(2);
      expect(terms.resource.url).toBe(service.url + operation.path);
      expect(terms.accepts).toEqual([expectedTerms(operation)]);
      // The body is the x402 v1 form of the same terms (a v1 client pays from it), with v2's amount and resource.
      const body = await response.json();
      const [accepted] = terms.accepts;
      expect(body).toMatchObject({ status: 402, x402Version: 1, resource: terms.resource });
      expect(body.accepts).toEqual([
        {
          ...accepted,
          network: "base",
          maxAmountRequired: accepted?.amount,
          resource: terms.resource.url,
          description: terms.resource.description,
          mimeType: terms.resource.mimeType,
        },
      ]);
      const entry = manifest.items.find(
        (r: any) => r.resource === terms.resource.url && r.method === operation.method,
      );
      expect(entry.accepts).toEqual(terms.accepts);
      // The 402 carries a compact Bazaar extension (it must fit a header); the manifest the full one.
      // Both are valid and describe the same call.
      const compact = terms.extensions?.bazaar as Parameters<typeof validateDiscoveryExtension>[0];
      expect(validateDiscoveryExtension(compact), operation.id).toEqual({ valid: true });
      // The same input, but for the example: the header may carry the operation's brief one.
      const fullInput = entry.extensions.bazaar.info.input as Record<string, unknown>;
      expect(compact.info.input).toEqual(
        operation.example.briefInput ? { ...fullInput, body: operation.example.briefInput } : fullInput,
      );
      expect(entry.extensions.bazaar.info.output).toEqual(
        operation.example.output === undefined
          ? undefined
          : { type: "json", example: operation.example.output },
      );
    }
  });

  it("an operation that has not landed answers 501 and never asks for payment", async () => {
    for (const operation of OPERATIONS.filter((op) => !isImplemented(op))) {
      const response = await fetch(
        service.url + operation.path,
        operation.method === "POST"
          ? {
              method: "POST",
              headers: { "content-type": "application/json" },
              body: JSON.stringify(operation.example.input ?? {}),
            }
          : {},
      );
      expect(response.status, operation.id).toBe(501);
      expect(response.headers.get("PAYMENT-REQUIRED")).toBeNull();
      expect(response.headers.get("content-type")).toBe("application/problem+json");
    }
  });

  it("/.well-known/x402 lists every paid resource with its accepts and the Bazaar extension", () => {
    expect(manifest).toMatchObject({ version: 1, x402Version: 2 });
    expect(manifest.items).toHaveLength(OPERATIONS.length);
    for (const operation of OPERATIONS) {
      const entry = manifest.items.find(
        (r: any) => r.resource === service.url + operation.path && r.method === operation.method,
      );
      expect(entry, operation.id).toBeDefined();
      expect(entry.accepts).toEqual([expectedTerms(operation)]);
      expect(entry.extensions.bazaar.info.input.method).toBe(operation.method);
      const validation = validateDiscoveryExtension(entry.extensions.bazaar);
      expect(validation.errors ?? [], operation.id).toEqual([]);
      expect(validation.valid, operation.id).toBe(true);
    }
  });

  it("/openapi.json declares every operation with its price, schemas, 400/402 and how to pay", () => {
    expect(openapi.openapi).toBe("3.1.0");
    expect(openapi.info.version).toBe("1.0.0");
    // x402 is a payment, not an authentication: no security scheme, `security: []` on every operation.
    expect(openapi.components.securitySchemes).toBeUndefined();
    for (const operation of OPERATIONS) {
      const entry = openapi.paths[operation.path][operation.method.toLowerCase()];
      expect(entry, operation.id).toBeDefined();
      expect(entry.operationId).toBe(operation.id);
      const { extra: _domain, ...terms } = expectedTerms(operation);
      expect(entry["x-payment-info"]).toEqual({
        price: { mode: "fixed", currency: "USD", amount: operation.priceUsd },
        protocols: [{ x402: { x402Version: 2, ...terms } }],
      });
      expect(entry.security).toEqual([]);
      expect(entry.description).toContain("PAYMENT-SIGNATURE");
      expect(Object.keys(entry.responses)).toEqual(expect.arrayContaining(["400", "402"]));
      if (operation.inputFrom === "body")
        expect(entry.requestBody.content["application/json"].schema).toBeDefined();
      if (operation.inputFrom === "query") expect(entry.parameters.length).toBeGreaterThan(0);
    }
    expect(openapi.paths["/v1/jobs/{id}"].get.security).toEqual([]);
  });

  it("/openapi.json lints clean (no errors, no warnings) under Redocly's recommended rules", async () => {
    const config = await createConfig({ extends: ["recommended"] });
    const problems = await lintFromString({
      source: JSON.stringify(openapi),
      absoluteRef: `${service.url}/openapi.json`,
      config,
    });
    // Zero errors is the bar; the document is also kept free of warnings.
    expect(
      problems.map((e) => `${e.severity} ${e.ruleId}: ${e.message} at ${e.location[0]?.pointer}`),
    ).toEqual([]);
  });

  it("/openapi.json has no error under Spectral's OpenAPI ruleset", async () => {
    // The package is CommonJS: its parsers are properties of the default export under ESM.
    const { Json } = SpectralParsers as unknown as typeof import("@stoplight/spectral-parsers");
    const spectral = new Spectral();
    spectral.setRuleset(oas as RulesetDefinition);
    const results = await spectral.run(new Document(JSON.stringify(openapi), Json, "openapi.json"));
    // Severity 0 is an error (1 a warning, 2 information, 3 a hint).
    const describe = (r: (typeof results)[number]) =>
      `${r.severity} ${r.code}: ${r.message} at /${r.path.join("/")}`;
    expect(results.filter((result) => result.severity === 0).map(describe)).toEqual([]);
  });

  it("chain-arbitrage-snapshot's venues schema says what the server enforces: two different venues", async () => {
    const venues = openapi.components.schemas.ChainArbitrageSnapshotRequest.properties.venues;
    const accepts = new Ajv2020({ strict: false }).compile(venues);
    const cases: [string[], boolean][] = [
      [["uniswap-v3:500", "aerodrome:volatile"], true],
      [["uniswap-v3:500", "aerodrome:volatile", "uniswap-v3:3000"], false],
      [["uniswap-v3:500", "uniswap-v3:500"], false],
      [["uniswap-v3:500"], false],
    ];
    for (const [value, valid] of cases) {
      expect(accepts(value), value.join()).toBe(valid);
      if (valid) continue;
      // A new connection per call: the Redocly and Spectral tests before this one hold the event loop for
      // seconds, so a kept-alive connection reaches the server's keep-alive timeout as undici reuses it
      // (ECONNRESET under load, a race of the test's own process, not of the service).
      const status = await postStatusOnFreshConnection(`${service.url}/v1/chain-arbitrage-snapshot`, {
        venues: value,
      });
      expect(status, value.join()).toBe(400);
    }
  });

  it("/catalog.json lists every operation and product with USD and atomic prices and schemas", () => {
    expect(catalog.payment).toMatchObject({
      protocol: "x402",
      x402Version: 2,
      network: BASE_NETWORK,
      asset: BASE_USDC_ADDRESS,
    });
    const entries = [...catalog.operations, ...catalog.products];
    expect(entries).toHaveLength(OPERATIONS.length);
    expect(catalog.products).toHaveLength(5);
    for (const operation of OPERATIONS) {
      const entry = entries.find((e: any) => e.id === operation.id);
      expect(entry, operation.id).toMatchObject({
        method: operation.method,
        path: operation.path,
        price: { usd: operation.priceUsd, atomic: atomicPrice(operation) },
        // A product is available once its release is built: the four repository products are (above),
        // the clinical snapshot (no full ingest here) is not.
        available:
          operation.id === "product-clinical-trials-outcomes-post-2020" ? false : isImplemented(operation),
      });
      if (operation.id === "product-clinical-trials-outcomes-post-2020") expect(entry.release).toBeNull();
      else if (operation.kind === "product") expect(entry.release.file).toMatch(/\.zip$/);
      if (operation.inputFrom !== "none") expect(entry.input.schema).toEqual(inputJsonSchema(operation));
      expect(entry.accepts).toEqual([expectedTerms(operation)]);
    }
  });

  it("the skills index has one SKILL.md per operation, each digest over the exact bytes served", async () => {
    expect(skills.$schema).toMatch(/^https:\/\/schemas\.agentskills\.io\/discovery\//);
    // One per operation, and one on using the service from an MCP client.
    expect(skills.skills.map((s: any) => s.name).sort()).toEqual(
      [...OPERATIONS.map((op) => op.id), "mcp"].sort(),
    );
    for (const skill of skills.skills) {
      expect(skill.type).toBe("skill-md");
      const response = await fetch(skill.url);
      expect(response.status).toBe(200);
      const bytes = Buffer.from(await response.arrayBuffer());
      expect(skill.digest).toBe(`sha256:${createHash("sha256").update(bytes).digest("hex")}`);
      const text = bytes.toString("utf8");
      expect(text.startsWith(`---\nname: ${skill.name}\n`)).toBe(true);
      const operation = OPERATIONS.find((op) => op.id === skill.name);
      if (operation) expect(text).toContain(`USD ${operation.priceUsd}`);
    }
  });
});

function postStatusOnFreshConnection(url: string, body: unknown): Promise<number> {
  return new Promise((resolve, reject) => {
    const request = http.request(
      url,
      { method: "POST", agent: false, headers: { "content-type": "application/json" } },
      (response) => {
        response.resume();
        response.on("end", () => resolve(response.statusCode ?? 0));
      },
    );
    request.on("error", reject);
    request.end(JSON.stringify(body));
  });
}
