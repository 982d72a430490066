import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { freePort, startTestService, type TestService } from "./helpers/service.ts";

// No chain is needed to refuse bad input: a facilitator that is not running is enough, and
// proves that nothing here ever reaches payment.
describe("bad input never reaches payment and always gets problem+json", () => {
  let service: TestService;
  beforeAll(async () => {
    service = await startTestService({
      PAYMENT_MODE: "facilitator",
      X402_FACILITATOR_URL: `http://127.0.0.1:${await freePort()}`,
      X402_PAY_TO: "0x70997970C51812dc3A010C7d01b50e0d17dc79C8",
    });
  });
  afterAll(async () => {
    await service?.stop();
  });

  const call = (path: string, init: RequestInit = {}) => fetch(service.url + path, init);
  const expectProblem = async (response: Response, status: number) => {
    expect(response.status).toBe(status);
    expect(response.headers.get("content-type")).toBe("application/problem+json");
    if (status !== 402) expect(response.headers.get("PAYMENT-REQUIRED")).toBeNull();
    const body = await response.json();
    expect(body).toMatchObject({ status, type: expect.stringMatching(/^urn:utility402:problem:/) });
    expect(body.title).toBeTruthy();
    expect(body.detail).toBeTruthy();
    return body;
  };

  it("JSON that does not parse is a 400 pointing at the body", async () => {
    const body = await expectProblem(
      await call("/v1/csv-cleanup", { method: "POST", body: "{rows: [" }),
      400,
    );
    expect(body.errors).toEqual([{ pointer: "", message: expect.stringContaining("not valid JSON") }]);
  });

  it("an unpaid call without a body gets the terms (an indexer's probe); a blank body is a 400", async () => {
    // No body at all: the 402 and its price, whether or not the body is required (a paid call without
    // its required body is a 400: test/discovery/indexers.e2e.test.ts).
    await expectProblem(await call("/v1/csv-cleanup", { method: "POST" }), 402);
    await expectProblem(await call("/v1/tender-shortlist", { method: "POST" }), 402);
    // A body that is present but blank is read and refused before any 402.
    const body = await expectProblem(await call("/v1/json-diff", { method: "POST", body: " " }), 400);
    expect(body.errors[0]).toEqual({ pointer: "", message: "a JSON request body is required" });
  });

  it("a body over the limit is a 413", async () => {
    const rows = Array.from({ length: 500 }, (_, i) => ({ id: i, text: "x".repeat(2100) }));
    await expectProblem(
      await call("/v1/csv-cleanup", { method: "POST", body: JSON.stringify({ rows }) }),
      413,
    );
  });

  it("a non-object body, wrong types and out-of-range values point at each field", async () => {
    let body = await expectProblem(await call("/v1/csv-cleanup", { method: "POST", body: "[1,2]" }), 400);
    expect(body.errors[0].pointer).toBe("");
    body = await expectProblem(
      await call("/v1/csv-cleanup", {
        method: "POST",
        body: JSON.stringify({ rows: [{ a: 1 }], keyColumns: [], trimStrings: "yes" }),
      }),
      400,
    );
    expect(body.errors.map((e: { pointer: string }) => e.pointer).sort()).toEqual([
      "/keyColumns",
      "/trimStrings",
    ]);
    body = await expectProblem(
      await call("/v1/research-brief", {
        method: "POST",
        body: JSON.stringify({ question: "short", maxWords: 5000 }),
      }),
      400,
    );
    expect(body.errors.map((e: { pointer: string }) => e.pointer).sort()).toEqual(["/maxWords", "/question"]);
  });

  it("query parameters are validated like a body, arrays repeated or comma-separated", async () => {
    let body = await expectProblem(
      await call("/v1/tender-shortlist?maxResults=31&countries=DEU,fr&bogus=1"),
      400,
    );
    expect(body.errors.map((e: { pointer: string }) => e.pointer).sort()).toEqual([
      "/bogus",
      "/countries/1",
      "/maxResults",
    ]);
    body = await expectProblem(await call("/v1/tender-shortlist?query=a&query=b"), 400);
    expect(body.errors).toEqual([
      { pointer: "/query", message: "given more than once; this parameter takes one value" },
    ]);
    await expectProblem(await call("/v1/tender-shortlist?countries=DEU&countries=FRA&maxResults=5"), 402);
  });

  it("a number JSON cannot carry (1e999) is a 400 pointing at it", async () => {
    const body = await expectProblem(
      await call("/v1/csv-cleanup", { method: "POST", body: '{"rows":[{"a":1},{"b/c":1e999}]}' }),
      400,
    );
    expect(body.errors).toEqual([
      { pointer: "/rows/1/b~1c", message: "number out of range (not a finite double)" },
    ]);
  });

  it("a lone UTF-16 surrogate in a string or a member name is a 400 pointing at it", async () => {
    let body = await expectProblem(
      await call("/v1/csv-cleanup", { method: "POST", body: '{"rows":[{"id":"\\ud800"}]}' }),
      400,
    );
    expect(body.errors).toEqual([
      { pointer: "/rows/0/id", message: "string contains a lone UTF-16 surrogate (not Unicode text)" },
    ]);
    body = await expectProblem(
      await call("/v1/csv-cleanup", { method: "POST", body: '{"rows":[{"a\\udc00":"x"}]}' }),
      400,
    );
    expect(body.errors[0].pointer).toBe("/rows/0/a\udc00");
  });

  it("query parameter names that are Object.prototype members are plain unknown parameters", async () => {
    for (const name of ["constructor", "__proto__", "toString", "hasOwnProperty", "valueOf"]) {
      const body = await expectProblem(await call(`/v1/tender-shortlist?${name}=1`), 400);
      expect(body.errors).toEqual([{ pointer: `/${name}`, message: "unknown property (not allowed)" }]);
    }
  });

  it("a malformed payment payload is a 402 naming the field, never a 503 or 500", async () => {
    const unpaid = await call("/v1/csv-cleanup", {
      method: "POST",
      body: JSON.stringify({ rows: [{ a: 1 }] }),
    });
    const accepted = JSON.parse(
      Buffer.from(unpaid.headers.get("PAYMENT-REQUIRED") as string, "base64").toString(),
    ).accepts[0];
    const authorization = {
      from: "0x3C44CdDdB6a900fa2b585dd299e03d12FA4293BC",
      to: "0x70997970C51812dc3A010C7d01b50e0d17dc79C8",
      value: "2000000",
      validAfter: "0",
      validBefore: "9999999999",
      nonce: `0x${"22".repeat(32)}`,
    };
    let deep: unknown = 1;
    for (let i = 0; i < 3000; i++) deep = [deep];
    const cases: [string, Record<string, unknown>][] = [
      ["authorization.value", { signature: "0x11", authorization: { ...authorization, value: "abc" } }],
      [
        "authorization.validBefore",
        { signature: "0x11", authorization: { ...authorization, validBefore: "x" } },
      ],
      [
        "authorization.validAfter",
        { signature: "0x11", authorization: { ...authorization, validAfter: {} } },
      ],
      ["authorization.nonce", { signature: "0x11", authorization: { ...authorization, nonce: "0x12" } }],
      ["signature", { signature: 42, authorization }],
      ["signature", { authorization }],
      ["payload", { signature: "0x11", authorization, extra: deep }],
    ];
    for (const [field, payload] of cases) {
      const header = Buffer.from(JSON.stringify({ x402Version: 2, accepted, payload })).toString("base64");
      const response = await call("/v1/csv-cleanup", {
        method: "POST",
        body: JSON.stringify({ rows: [{ a: 1 }] }),
        headers: { "PAYMENT-SIGNATURE": header },
      });
      const body = await expectProblem(response, 402);
      expect(body.reason, field).toBe("invalid_payload");
      // A payload nested beyond the bound is refused before it is read (src/payments/resource-server/payload-bounds.ts).
      expect(body.detail).toContain(field === "payload" ? "nested more than 32 levels deep" : field);
    }
  });

  it("jobs: a non-UUID id is a 400, an unknown job a 404", async () => {
    const body = await expectProblem(await call("/v1/jobs/not-a-uuid"), 400);
    expect(body.errors).toEqual([{ pointer: "/id", message: "must be a UUID" }]);
    await expectProblem(await call("/v1/jobs/0f8fad5b-d9cb-469f-a165-70867728950e"), 404);
  });

  it("an unknown path is a 404 and a wrong method a 405 with Allow", async () => {
    await expectProblem(await call("/v1/nothing-here"), 404);
    const response = await call("/v1/csv-cleanup");
    await expectProblem(response, 405);
    expect(response.headers.get("allow")).toBe("POST");
    for (const path of ["/healthz", "/openapi.json", "/v1/jobs/0f8fad5b-d9cb-469f-a165-70867728950e"]) {
      const wrong = await call(path, { method: "DELETE" });
      await expectProblem(wrong, 405);
      expect(wrong.headers.get("allow")).toBe("GET");
    }
  });

  it("a valid paid call while the facilitator is down is a 503 with Retry-After, never a 500", async () => {
    const unpaid = await call("/v1/csv-cleanup", {
      method: "POST",
      body: JSON.stringify({ rows: [{ a: 1 }] }),
    });
    expect(unpaid.status).toBe(402);
    const payment = Buffer.from(
      JSON.stringify({
        x402Version: 2,
        accepted: JSON.parse(
          Buffer.from(unpaid.headers.get("PAYMENT-REQUIRED") as string, "base64").toString(),
        ).accepts[0],
        payload: {
          signature: `0x${"11".repeat(65)}`,
          authorization: {
            from: "0x3C44CdDdB6a900fa2b585dd299e03d12FA4293BC",
            to: "0x70997970C51812dc3A010C7d01b50e0d17dc79C8",
            value: "2000000",
            validAfter: "0",
            validBefore: "9999999999",
            nonce: `0x${"22".repeat(32)}`,
          },
        },
      }),
    ).toString("base64");
    const response = await call("/v1/csv-cleanup", {
      method: "POST",
      body: JSON.stringify({ rows: [{ a: 1 }] }),
      headers: { "PAYMENT-SIGNATURE": payment },
    });
    await expectProblem(response, 503);
    expect(response.headers.get("retry-after")).toBe("5");
  });
});
