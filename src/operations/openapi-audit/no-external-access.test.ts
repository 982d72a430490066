import { execFileSync } from "node:child_process";
import fs from "node:fs";
import http from "node:http";
import type { AddressInfo } from "node:net";
import os from "node:os";
import path from "node:path";
import { BaseResolver, createConfig, lintDocument, Source } from "@redocly/openapi-core";
import { Document, type RulesetDefinition, Spectral } from "@stoplight/spectral-core";
import SpectralParsers from "@stoplight/spectral-parsers";
import { oas } from "@stoplight/spectral-rulesets";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { withTestDeadlines } from "../../../test/helpers/pool-deadlines.ts";
import { auditDocument } from "./audit.ts";
import type { ContractDocument } from "./contract.ts";
import { AuditPool } from "./pool.ts";
import { spectralFindings } from "./spectral.ts";

/**
 * openapi-audit never opens a connection and never reads a file for a $ref. Every remote
 * reference points at a listener on 127.0.0.1 that counts connections; every file reference
 * points at a FIFO. Opening a FIFO for reading blocks until a writer comes, so a reader that
 * tried would still be waiting when the audit ends, and a non-blocking open for writing would
 * then succeed; it fails with ENXIO only when no reader has it open. (Timestamps would not
 * do: atime is often not updated.)
 */
let server: http.Server;
let connections = 0;
let base: string;
let dir: string;
let fifo: string;

beforeAll(async () => {
  server = http.createServer((_, response) => response.writeHead(404).end());
  server.on("connection", () => connections++);
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  base = `127.0.0.1:${(server.address() as AddressInfo).port}`;
  dir = fs.mkdtempSync(path.join(os.tmpdir(), "openapi-audit-refs-"));
  fifo = path.join(dir, "components.yaml");
  execFileSync("mkfifo", [fifo]);
});
afterAll(async () => {
  server.closeAllConnections();
  await new Promise((resolve) => server.close(resolve));
  fs.rmSync(dir, { recursive: true, force: true });
});

/** Whether some reader has the FIFO open right now (a blocked read-open counts). */
function fifoHasReader(): boolean {
  try {
    fs.closeSync(fs.openSync(fifo, fs.constants.O_WRONLY | fs.constants.O_NONBLOCK));
    return true;
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === "ENXIO") return false;
    throw error;
  }
}

/** Every place OpenAPI 3.x lets a reference (or an external value) point elsewhere. */
function contractFullOfRefs(): { contract: ContractDocument; external: number } {
  const http = (file: string) => `http://${base}/${file}`;
  const relativeToRoot = path.relative("/", fifo); // the contract "lives" at /contract.json
  const refs = {
    pathItem: http("paths.yaml#/pets"),
    parameter: `https://${base}/parameters.yaml#/Limit`,
    requestBody: `file://${fifo}#/requestBodies/Pet`,
    response: `${fifo}#/responses/Pet`,
    header: `${relativeToRoot}#/headers/Rate`,
    schema: `../../..${fifo}#/schemas/Pet`,
    localhost: `http://localhost:${base.split(":")[1]}/schemas.json`,
    callback: http("callbacks.yaml#/onEvent"),
    link: http("links.yaml#/self"),
    securityScheme: http("security.yaml#/key"),
    example: `file://${fifo}#/examples/pet`,
    nested: http("nested.json#/deep"),
    mapping: http("cat.json"),
  };
  const contract: ContractDocument = {
    openapi: "3.1.0",
    info: { title: "Refs everywhere", version: "1" },
    servers: [{ url: `http://${base}` }],
    paths: {
      "/remote": { $ref: refs.pathItem },
      "/pets": {
        post: {
          operationId: "createPet",
          summary: "Create a pet",
          parameters: [{ $ref: refs.parameter }],
          requestBody: { $ref: refs.requestBody },
          responses: {
            "201": { $ref: refs.response },
            "400": {
              description: "Bad",
              headers: { "X-Rate": { $ref: refs.header } },
              content: {
                "application/json": {
                  schema: { $ref: refs.schema },
                  examples: {
                    remote: { externalValue: http("example.json") },
                    file: { externalValue: `file://${fifo}` },
                    referenced: { $ref: refs.example },
                  },
                },
              },
            },
          },
          callbacks: { onEvent: { $ref: refs.callback } },
        },
      },
    },
    components: {
      schemas: {
        Local: {
          type: "object",
          properties: { remote: { $ref: refs.localhost }, nested: { items: { $ref: refs.nested } } },
        },
        Pet: {
          oneOf: [{ $ref: "#/components/schemas/Local" }],
          discriminator: { propertyName: "kind", mapping: { cat: refs.mapping } },
        },
      },
      links: { self: { $ref: refs.link } },
      securitySchemes: { key: { $ref: refs.securityScheme } },
    },
  };
  return { contract, external: Object.keys(refs).length };
}

describe("openapi-audit reads nothing but the contract", () => {
  it("the detectors work: a connection is counted, and a waiting reader of the FIFO is seen", async () => {
    const before = connections;
    await fetch(`http://${base}/probe`);
    expect(connections).toBe(before + 1);
    expect(fifoHasReader()).toBe(false);
    const reader = fs.openSync(fifo, fs.constants.O_RDONLY | fs.constants.O_NONBLOCK);
    expect(fifoHasReader()).toBe(true);
    fs.closeSync(reader);
    expect(fifoHasReader()).toBe(false);
  });

  it("the contract is a fair test: Redocly left to itself connects to the listener", async () => {
    const { contract } = contractFullOfRefs();
    // Only the remote references: Redocly's own resolver would block forever reading the FIFO.
    const remoteOnly = {
      ...contract,
      paths: { "/remote": (contract.paths as any)["/remote"] },
      components: {},
    };
    const before = connections;
    await lintDocument({
      document: { source: new Source("/contract.json", ""), parsed: remoteOnly },
      config: await createConfig({ extends: ["recommended"] }),
      externalRefResolver: new BaseResolver(),
    });
    expect(connections).toBeGreaterThan(before);
  });

  it("the contract is a fair test for Spectral too: with its default resolver it connects to the listener", async () => {
    const { contract } = contractFullOfRefs();
    const remoteOnly = {
      ...contract,
      paths: { "/remote": (contract.paths as any)["/remote"] },
      components: {},
    };
    const spectral = new Spectral(); // default: createHttpAndFileResolver()
    spectral.setRuleset(oas as RulesetDefinition);
    const Parsers = SpectralParsers as unknown as typeof import("@stoplight/spectral-parsers");
    const before = connections;
    await spectral.run(new Document(JSON.stringify(remoteOnly), Parsers.Json, "/contract.json"));
    expect(connections).toBeGreaterThan(before);
  });

  it("Spectral under the audit's resolver: zero connections, the FIFO never opened, every $ref refused", async () => {
    const { contract, external } = contractFullOfRefs();
    const before = connections;
    const findings = await spectralFindings(contract, "/contract-spectral.json");
    expect(connections).toBe(before);
    expect(fifoHasReader()).toBe(false);
    const refused = findings.filter((f) => f.ruleId === "no-external-refs");
    // Spectral reports one failure per document it was refused (the five references into the FIFO are one
    // document) and does not follow a discriminator mapping; Redocly reports every reference (above).
    expect(refused.map((f) => f.pointer).sort()).toEqual([
      "/components/links/self",
      "/components/schemas/Local/properties/nested/items",
      "/components/schemas/Local/properties/remote",
      "/components/securitySchemes/key",
      "/paths/~1pets/post/callbacks/onEvent",
      "/paths/~1pets/post/parameters/0",
      "/paths/~1pets/post/requestBody",
      "/paths/~1remote",
    ]);
    expect(external).toBe(13);
    for (const finding of refused) expect(finding.engine).toBe("spectral:invalid-ref");
  });

  it("in-process: zero connections, the FIFO never opened, every external $ref a finding", async () => {
    const { contract, external } = contractFullOfRefs();
    const before = connections;
    const result = await auditDocument({
      document: contract,
      openapi: "3.1.0",
      ruleset: "strict",
      maxFindings: 500,
    });
    expect(connections).toBe(before);
    expect(fifoHasReader()).toBe(false);
    const refused = result.findings.filter((f) => f.ruleId === "no-external-refs");
    expect(refused).toHaveLength(external);
    for (const finding of refused) {
      expect(finding.message).toMatch(/^external \$ref ".+" was not fetched/);
      expect(finding.engines).toContain("redocly:no-unresolved-refs");
    }
    // Both engines ran and refused (one finding per reference, naming both where both saw it).
    expect(refused.filter((f) => f.engines.includes("spectral:invalid-ref")).length).toBeGreaterThan(0);
    expect(refused.map((f) => f.pointer)).toEqual([
      "/components/links/self",
      "/components/schemas/Local/properties/nested/items",
      "/components/schemas/Local/properties/remote",
      "/components/schemas/Pet/discriminator/mapping/cat",
      "/components/securitySchemes/key",
      "/paths/~1pets/post/callbacks/onEvent",
      "/paths/~1pets/post/parameters/0",
      "/paths/~1pets/post/requestBody",
      "/paths/~1pets/post/responses/201",
      "/paths/~1pets/post/responses/400/content/application~1json/examples/referenced",
      "/paths/~1pets/post/responses/400/content/application~1json/schema",
      "/paths/~1pets/post/responses/400/headers/X-Rate",
      "/paths/~1remote",
    ]);
  });

  it("in the worker pool: zero connections and the FIFO never opened", async () => {
    const pool = withTestDeadlines(() => new AuditPool({ size: 1 }));
    try {
      const { contract, external } = contractFullOfRefs();
      const before = connections;
      const [recommended, strict] = await Promise.all([
        pool.run({ document: contract, openapi: "3.1.0", ruleset: "recommended", maxFindings: 500 }),
        pool.run({ document: contract, openapi: "3.1.0", ruleset: "strict", maxFindings: 500 }),
      ]);
      expect(connections).toBe(before);
      expect(fifoHasReader()).toBe(false);
      for (const result of [recommended, strict]) {
        expect(result.findings.filter((f) => f.ruleId === "no-external-refs")).toHaveLength(external);
      }
    } finally {
      await pool.close();
    }
  });
});
