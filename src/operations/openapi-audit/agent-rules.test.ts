import { describe, expect, it } from "vitest";
import { type AgentFinding, type AgentRuleId, agentFindings, resolveLocal } from "./agent-rules.ts";
import type { ContractDocument } from "./contract.ts";

/** A complete, agent-friendly operation: every rule passes on it. */
const goodOperation = () => ({
  operationId: "getPet",
  summary: "Get a pet",
  responses: {
    "200": {
      description: "OK",
      content: { "application/json": { schema: { type: "object" }, example: { id: 1 } } },
    },
    "404": { description: "Not found" },
  },
});

const contract = (paths: Record<string, unknown>, extra: Record<string, unknown> = {}): ContractDocument => ({
  openapi: "3.1.0",
  info: { title: "T", version: "1" },
  paths,
  ...extra,
});

const only = (findings: AgentFinding[], ruleId: AgentRuleId) => findings.filter((f) => f.ruleId === ruleId);

describe("agent rules: a clean contract", () => {
  it("reports nothing for operations that have an operationId, a 4xx response and examples", () => {
    expect(
      agentFindings(contract({ "/pets/{id}": { get: goodOperation(), delete: goodOperation() } })),
    ).toEqual([]);
  });

  it("ignores documents without paths, non-object path items and webhooks", () => {
    expect(agentFindings(contract({}))).toEqual([]);
    expect(agentFindings({ openapi: "3.1.0", paths: [] })).toEqual([]);
    expect(agentFindings(contract({ "/a": null, "/b": "text", "/c": { get: "not an operation" } }))).toEqual(
      [],
    );
    expect(
      agentFindings(contract({}, { webhooks: { ping: { post: { responses: { "200": {} } } } } })),
    ).toEqual([]);
  });
});

describe("agent-operation-id", () => {
  it("reports an operation without operationId, or with an empty one, at the operation", () => {
    const { operationId: _, ...withoutId } = goodOperation();
    const findings = agentFindings(
      contract({ "/pets": { get: withoutId, post: { ...goodOperation(), operationId: "  " } } }),
    );
    expect(findings).toEqual([
      {
        ruleId: "agent-operation-id",
        pointer: "/paths/~1pets/get",
        message: "GET /pets has no operationId: agents and client generators name the call after it",
      },
      {
        ruleId: "agent-operation-id",
        pointer: "/paths/~1pets/post",
        message: "POST /pets has no operationId: agents and client generators name the call after it",
      },
    ]);
  });

  it("checks every HTTP method and reports where a referenced path item really is", () => {
    const { operationId: _, ...withoutId } = goodOperation();
    const methods = ["get", "put", "post", "delete", "options", "head", "patch", "trace"];
    const item = Object.fromEntries(methods.map((method) => [method, withoutId]));
    const findings = agentFindings(
      contract(
        { "/a": { $ref: "#/components/pathItems/A" } },
        { components: { pathItems: { A: { ...item, parameters: [], summary: "not an operation" } } } },
      ),
    );
    expect(findings.map((f) => f.pointer)).toEqual(methods.map((m) => `/components/pathItems/A/${m}`));
  });
});

describe("agent-4xx-response", () => {
  const withResponses = (responses: unknown) =>
    contract({ "/a": { get: { ...goodOperation(), responses } } });
  const ok = { description: "OK", content: { "text/plain": { example: "ok" } } };

  it("reports an operation whose responses have no 4xx code, at its responses", () => {
    for (const responses of [{ "200": ok }, { "200": ok, "500": {} }, { "200": ok, default: {} }]) {
      expect(only(agentFindings(withResponses(responses)), "agent-4xx-response")).toEqual([
        {
          ruleId: "agent-4xx-response",
          pointer: "/paths/~1a/get/responses",
          message:
            "GET /a documents no 4xx response: an agent cannot tell a request it must fix (bad input, " +
            "authentication, payment) from a failure of the server",
        },
      ]);
    }
  });

  it("accepts any 4xx code or the 4XX range (402 included)", () => {
    for (const code of ["400", "404", "422", "4XX", "4xx", "402"]) {
      const responses = {
        "200": ok,
        [code]: { description: "x", headers: { "PAYMENT-REQUIRED": { description: "how" } } },
      };
      expect(only(agentFindings(withResponses(responses)), "agent-4xx-response"), code).toEqual([]);
    }
  });

  it("reports at the operation when it has no responses object at all", () => {
    expect(only(agentFindings(withResponses(undefined)), "agent-4xx-response")[0]?.pointer).toBe(
      "/paths/~1a/get",
    );
  });
});

describe("agent-examples", () => {
  const components = {
    schemas: {
      WithExample: { type: "object", example: { id: 1 } },
      WithExamples: { type: "object", examples: [{ id: 1 }] },
      Bare: { type: "object" },
    },
    requestBodies: { Bare: { content: { "application/json": { schema: { type: "object" } } } } },
    responses: {
      Bare: { description: "OK", content: { "application/json": { schema: { type: "object" } } } },
    },
  };
  const run = (operation: Record<string, unknown>) =>
    only(
      agentFindings(contract({ "/a": { post: { ...goodOperation(), ...operation } } }, { components })),
      "agent-examples",
    );
  const media = (mediaType: unknown) => ({ content: { "application/json": mediaType } });

  it("reports a request body without any example, at the operation's requestBody", () => {
    expect(run({ requestBody: media({ schema: { type: "object" } }) })).toEqual([
      {
        ruleId: "agent-examples",
        pointer: "/paths/~1a/post/requestBody",
        message:
          "POST /a: the request body has no example (example or examples on a media type, or an example on its schema)",
      },
    ]);
    expect(run({ requestBody: { $ref: "#/components/requestBodies/Bare" } })).toHaveLength(1);
    expect(run({ requestBody: media({ schema: { $ref: "#/components/schemas/Bare" } }) })).toHaveLength(1);
    // An empty examples map is no example.
    expect(run({ requestBody: media({ schema: { type: "object" }, examples: {} }) })).toHaveLength(1);
  });

  it("accepts a media-type example or examples, or a (referenced) schema example, in any media type", () => {
    for (const mediaType of [
      { example: { id: 1 } },
      { example: null },
      { examples: { one: { value: { id: 1 } } } },
      { schema: { type: "object", example: { id: 1 } } },
      { schema: { $ref: "#/components/schemas/WithExample" } },
      { schema: { $ref: "#/components/schemas/WithExamples" } },
    ]) {
      expect(run({ requestBody: media(mediaType) }), JSON.stringify(mediaType)).toEqual([]);
    }
    const twoTypes = {
      content: { "text/csv": { schema: { type: "string" } }, "application/json": { example: { id: 1 } } },
    };
    expect(run({ requestBody: twoTypes })).toEqual([]);
  });

  it("accepts a request body without content", () => {
    expect(run({ requestBody: { description: "nothing typed" } })).toEqual([]);
    expect(run({ requestBody: { content: {} } })).toEqual([]);
  });

  it("reports each 2xx response with content and no example, at that response", () => {
    const responses = {
      "200": { description: "OK", content: { "application/json": { schema: { type: "object" } } } },
      "201": { $ref: "#/components/responses/Bare" },
      "2XX": { description: "OK", content: { "application/json": { schema: { type: "object" } } } },
      "204": { description: "No content" },
      "202": { description: "OK", content: { "application/json": { example: {} } } },
      "400": {
        description: "No example needed",
        content: { "application/json": { schema: { type: "object" } } },
      },
    };
    expect(run({ responses }).map((f) => [f.pointer, f.message])).toEqual([
      [
        "/paths/~1a/post/responses/200",
        "POST /a: response 200 has no example (example or examples on a media type, or an example on its schema)",
      ],
      [
        "/paths/~1a/post/responses/201",
        "POST /a: response 201 has no example (example or examples on a media type, or an example on its schema)",
      ],
      [
        "/paths/~1a/post/responses/2XX",
        "POST /a: response 2XX has no example (example or examples on a media type, or an example on its schema)",
      ],
    ]);
  });
});

describe("agent-payment-instructions and agent-payment-402", () => {
  const x402Scheme = { type: "apiKey", in: "header", name: "PAYMENT-SIGNATURE" };
  const schemes = (scheme: unknown) => ({ components: { securitySchemes: { pay: scheme } } });
  const paid = (operation: Record<string, unknown>, extra: Record<string, unknown> = {}) =>
    agentFindings(contract({ "/paid": { post: { ...goodOperation(), ...operation } } }, extra)).filter((f) =>
      f.ruleId.startsWith("agent-payment"),
    );
  const with402 = (response: unknown = { description: "Payment required" }) => ({
    responses: { ...goodOperation().responses, "402": response },
  });

  it("a 402 that does not say how to pay is a note where the API does not declare x402 (a business refusal)", () => {
    expect(paid(with402())).toEqual([
      {
        ruleId: "agent-payment-instructions",
        pointer: "/paths/~1paid/post/responses/402",
        severity: "info",
        message: expect.stringMatching(
          /^note: POST \/paid answers 402 but the API does not declare x402 anywhere, so this 402 is read as the API's own refusal/,
        ),
      },
    ]);
  });

  it("reports a 402 response that does not say how to pay, at the 402 response, where the API declares x402", () => {
    expect(paid(with402(), schemes(x402Scheme))).toEqual([
      {
        ruleId: "agent-payment-instructions",
        pointer: "/paths/~1paid/post/responses/402",
        message:
          "POST /paid answers 402 Payment Required but does not say how to pay: add an x-payment-info object " +
          "(price, network, asset, payTo), a payment security scheme (apiKey in header PAYMENT-SIGNATURE or " +
          "X-PAYMENT), or a described PAYMENT-REQUIRED header on the 402 response",
      },
    ]);
  });

  it("accepts x-payment-info on the operation", () => {
    expect(paid({ ...with402(), "x-payment-info": { priceUsd: "0.05", network: "eip155:8453" } })).toEqual(
      [],
    );
    // Not an object: not payment information.
    expect(paid({ ...with402(), "x-payment-info": "ask us" })).toHaveLength(1);
  });

  it("accepts a payment security scheme that applies (operation or document security, any letter case)", () => {
    expect(paid({ ...with402(), security: [{ pay: [] }] }, schemes(x402Scheme))).toEqual([]);
    expect(paid(with402(), { security: [{ pay: [] }], ...schemes(x402Scheme) })).toEqual([]);
    expect(
      paid({ ...with402(), security: [{ pay: [] }] }, schemes({ ...x402Scheme, name: "x-payment" })),
    ).toEqual([]);
    // Through a reference to the scheme.
    expect(
      paid(
        { ...with402(), security: [{ pay: [] }] },
        {
          components: {
            securitySchemes: { pay: { $ref: "#/components/securitySchemes/real" }, real: x402Scheme },
          },
        },
      ),
    ).toEqual([]);
  });

  it("does not count a scheme that is not a payment header, or that does not apply", () => {
    const cases: [Record<string, unknown>, Record<string, unknown>][] = [
      [
        { security: [{ pay: [] }] },
        { components: { securitySchemes: { pay: { ...x402Scheme, in: "query" } } } },
      ],
      [
        { security: [{ pay: [] }] },
        { components: { securitySchemes: { pay: { ...x402Scheme, name: "X-API-Key" } } } },
      ],
      [
        { security: [{ pay: [] }] },
        { components: { securitySchemes: { pay: { type: "http", scheme: "bearer" } } } },
      ],
      [{ security: [{ undefinedScheme: [] }] }, { components: { securitySchemes: { pay: x402Scheme } } }],
      // The operation's empty security overrides the document's.
      [{ security: [] }, { security: [{ pay: [] }], components: { securitySchemes: { pay: x402Scheme } } }],
    ];
    for (const [operation, extra] of cases) {
      expect(paid({ ...with402(), ...operation }, extra), JSON.stringify([operation, extra])).toHaveLength(1);
    }
  });

  it("accepts a described PAYMENT-REQUIRED header on the 402 response (any letter case, referenced or not)", () => {
    const described = { description: "base64 JSON x402 PaymentRequired", schema: { type: "string" } };
    expect(paid(with402({ description: "Pay", headers: { "PAYMENT-REQUIRED": described } }))).toEqual([]);
    expect(paid(with402({ description: "Pay", headers: { "payment-required": described } }))).toEqual([]);
    expect(
      paid(
        with402({ description: "Pay", headers: { "Payment-Required": { $ref: "#/components/headers/P" } } }),
        {
          components: { headers: { P: described } },
        },
      ),
    ).toEqual([]);
    expect(
      paid(with402({ $ref: "#/components/responses/Pay" }), {
        components: {
          responses: { Pay: { description: "Pay", headers: { "PAYMENT-REQUIRED": described } } },
        },
      }),
    ).toEqual([]);
  });

  it("does not count a PAYMENT-REQUIRED header without a description, or another header", () => {
    for (const headers of [
      { "PAYMENT-REQUIRED": { schema: { type: "string" } } },
      { "PAYMENT-REQUIRED": { description: "   " } },
      { "X-Price": { description: "what it costs" } },
    ]) {
      expect(paid(with402({ description: "Pay", headers })), JSON.stringify(headers)).toHaveLength(1);
    }
  });

  it("reports an operation that says it is paid but documents no 402 response", () => {
    expect(paid({ "x-payment-info": { priceUsd: "0.05" } })).toEqual([
      {
        ruleId: "agent-payment-402",
        pointer: "/paths/~1paid/post/responses",
        message:
          "POST /paid says it is paid (x-payment-info) but documents no 402 response: an agent needs the " +
          "shape of the payment challenge",
      },
    ]);
    expect(
      paid({ security: [{ pay: [] }] }, { components: { securitySchemes: { pay: x402Scheme } } })[0]?.message,
    ).toContain("says it is paid (a payment security scheme)");
  });

  it("reports nothing for a free operation", () => {
    expect(paid({})).toEqual([]);
  });
});

describe("resolveLocal", () => {
  const doc: ContractDocument = {
    components: {
      schemas: {
        "a/b": { type: "string" },
        "with space": { type: "number" },
        "ti~lde": { type: "boolean" },
        alias: { $ref: "#/components/schemas/a~1b" },
        loop: { $ref: "#/components/schemas/loop" },
        through: { $ref: "#/components/schemas/holder/properties/x" },
        holder: { $ref: "#/components/schemas/real" },
        real: { properties: { x: { type: "integer" } } },
      },
    },
    list: [{ v: 1 }],
  };
  const at = (ref: string) => resolveLocal(doc, { $ref: ref }, "/from");

  it("follows JSON Pointers with ~0/~1 escapes and percent-encoding, and chains of references", () => {
    expect(at("#/components/schemas/a~1b")).toEqual({
      node: { type: "string" },
      pointer: "/components/schemas/a~1b",
    });
    expect(at("#/components/schemas/with%20space")?.pointer).toBe("/components/schemas/with space");
    expect(at("#/components/schemas/ti~0lde")?.node).toEqual({ type: "boolean" });
    expect(at("#/components/schemas/alias")?.pointer).toBe("/components/schemas/a~1b");
    expect(at("#/components/schemas/through")).toEqual({
      node: { type: "integer" },
      pointer: "/components/schemas/real/properties/x",
    });
    expect(at("#/list/0/v")?.node).toBe(1);
    expect(at("#")?.node).toBe(doc);
  });

  it("gives up on external, missing and circular references", () => {
    expect(at("https://example.test/schemas.yaml#/Pet")).toBeUndefined();
    expect(at("./pet.yaml")).toBeUndefined();
    expect(at("#/components/schemas/missing")).toBeUndefined();
    expect(at("#/list/7")).toBeUndefined();
    expect(at("#/components/schemas/loop")).toBeUndefined();
    expect(at("#anchor")).toBeUndefined();
  });

  it("returns a node that is not a reference as it is", () => {
    expect(resolveLocal(doc, { type: "x" }, "/here")).toEqual({ node: { type: "x" }, pointer: "/here" });
  });
});
