import http from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { devPrivateKey } from "../../src/chain/dev-accounts.ts";
import { createPayer, paymentReceipt } from "../../src/client/paying-fetch.ts";
import { MAIN_THREAD_TEXT_BYTES, MAX_OBJECT_VALUES } from "../../src/operations/openapi-audit/contract.ts";
import { openapiAudit } from "../../src/operations/openapi-audit/index.ts";
import { closeSharedAuditPool } from "../../src/operations/openapi-audit/pool.ts";
import { openStore } from "../../src/store/open-store.ts";
import { jsonPost, startTestService, type TestService, usdcBalances } from "../helpers/service.ts";

const AUDIT_PRICE = 50_000n; // USD 0.05 in USDC atomic units

describe("openapi-audit through the local chain", () => {
  let service: TestService;
  let balanceOf: ReturnType<typeof usdcBalances>;
  let listener: http.Server;
  let connections = 0;
  let remote: string;
  const payer = createPayer(devPrivateKey(3));

  beforeAll(async () => {
    listener = http.createServer((_, response) => response.writeHead(404).end());
    listener.on("connection", () => connections++);
    await new Promise<void>((resolve) => listener.listen(0, "127.0.0.1", resolve));
    remote = `http://127.0.0.1:${(listener.address() as AddressInfo).port}`;
    service = await startTestService({}, { operations: [openapiAudit] });
    balanceOf = usdcBalances(service.localChain?.rpcUrl as string);
  });
  afterAll(async () => {
    await service?.stop();
    await closeSharedAuditPool();
    listener?.closeAllConnections();
    await new Promise((resolve) => listener?.close(resolve));
  });

  it("charges exactly USD 0.05 for an audit of a YAML contract and returns the findings with the receipt", async () => {
    const contract = [
      "openapi: 3.0.3",
      "info: {title: Weather, version: 1.0.0, license: {name: MIT, url: https://opensource.org/license/mit}}",
      "servers: [{url: 'https://api.weather.test'}]",
      "security: []",
      "paths:",
      "  /forecast:",
      "    get:",
      "      summary: Forecast for a city",
      "      parameters:",
      `        - $ref: '${remote}/parameters.yaml#/City'`,
      "      responses:",
      "        '200':",
      "          description: The forecast",
      "          content: {application/json: {schema: {type: object}, example: {tempC: 21}}}",
      "        '402': {description: Payment required}",
    ].join("\n");
    const [payerBefore, payToBefore] = [await balanceOf(payer.address), await balanceOf(service.payTo)];

    const response = await payer.fetch(`${service.url}/v1/openapi-audit`, jsonPost({ contract }));

    expect(response.status).toBe(200);
    const body = await response.json();
    expect(body).toMatchObject({ openapiVersion: "3.0.3", auditedAs: "3.0", valid: false, truncated: false });
    // One error, found by both engines (Redocly and Spectral each refused to fetch the reference).
    expect(body.findings.filter((f: { severity: string }) => f.severity === "error")).toEqual([
      {
        ruleId: "no-external-refs",
        severity: "error",
        message:
          `external $ref "${remote}/parameters.yaml" was not fetched: this audit reads only the contract it is ` +
          "sent (never a URL or a file); bundle the contract into one document (e.g. redocly bundle) to audit " +
          "what it references",
        pointer: "/paths/~1forecast/get/parameters/0",
        engines: ["redocly:no-unresolved-refs", "spectral:invalid-ref"],
      },
    ]);
    expect(body.summary.errors).toBe(1);
    // The API declares no x402: its 402 is a note, not an error.
    expect(body.findings).toContainEqual(
      expect.objectContaining({
        ruleId: "agent-payment-instructions",
        severity: "info",
        pointer: "/paths/~1forecast/get/responses/402",
      }),
    );
    expect(body.findings).toContainEqual(
      expect.objectContaining({
        ruleId: "agent-operation-id",
        severity: "warning",
        engines: ["openapi-audit:agent-operation-id", "spectral:operation-operationId"],
      }),
    );
    expect(connections).toBe(0);

    const receipt = paymentReceipt(response);
    expect(receipt).toMatchObject({ success: true, network: "eip155:8453" });
    expect(receipt?.payer?.toLowerCase()).toBe(payer.address.toLowerCase());
    expect(receipt?.transaction).toMatch(/^0x[0-9a-f]{64}$/);
    expect(await balanceOf(payer.address)).toBe(payerBefore - AUDIT_PRICE);
    expect(await balanceOf(service.payTo)).toBe(payToBefore + AUDIT_PRICE);

    const store = await openStore(service.config.database);
    const rows = (await store.paymentCounts()).filter((row) => row.operationId === "openapi-audit");
    expect(rows).toEqual([{ operationId: "openapi-audit", state: "settled", count: 1 }]);
    await store.close();
  });

  it("audits the service's own /openapi.json: every paid operation says how to pay", async () => {
    const document = await (await fetch(`${service.url}/openapi.json`)).json();
    const response = await payer.fetch(`${service.url}/v1/openapi-audit`, jsonPost({ contract: document }));
    expect(response.status).toBe(200);
    const result = await response.json();
    expect(result.openapiVersion).toBe("3.1.0");
    expect(result.findings.filter((f: { ruleId: string }) => f.ruleId.startsWith("agent-payment"))).toEqual(
      [],
    );
    expect(result.summary.errors).toBe(0);
  });

  // The money rules of a 400 (before the 402, a payment sent with it not taken): test/contract/paid-operations.
  it("answers a Swagger 2.0 contract, and a contract text that is not YAML, with a 400 at its pointer", async () => {
    const response = await fetch(
      `${service.url}/v1/openapi-audit`,
      jsonPost({ contract: { swagger: "2.0", info: { title: "Old", version: "1" }, paths: {} } }),
    );
    expect(response.status).toBe(400);
    expect((await response.json()).errors).toEqual([
      {
        pointer: "/contract/swagger",
        message:
          'Swagger "2.0" (OpenAPI 2.0) is not supported: send an OpenAPI 3.0, 3.1 or 3.2 contract ' +
          "(convert it first, e.g. with swagger2openapi)",
      },
    ]);

    const broken = await fetch(
      `${service.url}/v1/openapi-audit`,
      jsonPost({ contract: "openapi: 3.1.0\ninfo: [" }),
    );
    expect(broken.status).toBe(400);
    expect((await broken.json()).errors).toEqual([
      { pointer: "/contract", message: expect.stringMatching(/^the contract text is not valid YAML: /) },
    ]);
  });

  it("parses a large YAML contract in the audit worker: audited when valid, a 400 (nothing charged) when not", async () => {
    // Over the main-thread parse size: only size and version are checked before payment.
    const large = [
      "openapi: 3.1.0",
      "info: {title: Big, version: 1.0.0, license: {name: MIT, identifier: MIT}}",
      "paths: {}",
      "x-data:",
      ...Array.from({ length: 6000 }, (_, i) => `  k${i}: ${i}`),
    ].join("\n");
    expect(large.length).toBeGreaterThan(MAIN_THREAD_TEXT_BYTES);
    const ok = await payer.fetch(`${service.url}/v1/openapi-audit`, jsonPost({ contract: large }));
    expect(ok.status).toBe(200);
    expect(await ok.json()).toMatchObject({ openapiVersion: "3.1.0", auditedAs: "3.1" });

    const before = await balanceOf(payer.address);
    const duplicate = `${large}\n  k17: again\n`;
    const refused = await payer.fetch(`${service.url}/v1/openapi-audit`, jsonPost({ contract: duplicate }));
    expect(refused.status).toBe(400);
    expect(refused.headers.get("PAYMENT-RESPONSE")).toBeNull();
    expect((await refused.json()).errors).toEqual([
      {
        pointer: "/contract",
        message:
          "in the contract text: the contract text is not valid YAML: Map keys must be unique at line 6005, column 3",
      },
    ]);
    expect(await balanceOf(payer.address)).toBe(before);
  });

  it("refuses an object contract of more values than it parses on the main thread: a 400 naming the limit, before payment", async () => {
    const values = Object.fromEntries(
      Array.from({ length: MAX_OBJECT_VALUES + 100 }, (_, i) => [`k${i}`, i]),
    );
    const response = await fetch(
      `${service.url}/v1/openapi-audit`,
      jsonPost({
        contract: { openapi: "3.1.0", info: { title: "t", version: "1" }, paths: {}, "x-data": values },
      }),
    );
    expect(response.status).toBe(400);
    expect(response.headers.get("PAYMENT-REQUIRED")).toBeNull();
    expect((await response.json()).errors).toEqual([
      {
        pointer: "",
        message: `the body holds more than ${MAX_OBJECT_VALUES + 16} JSON values (objects, arrays, members)`,
      },
    ]);
  });
});
