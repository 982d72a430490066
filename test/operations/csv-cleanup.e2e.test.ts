import { parse as parseLossless } from "lossless-json";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { devPrivateKey } from "../../src/chain/dev-accounts.ts";
import { createPayer, paymentReceipt } from "../../src/client/paying-fetch.ts";
import { csvCleanup } from "../../src/operations/csv-cleanup/index.ts";
import { startTestService, type TestService, usdcBalances } from "../helpers/service.ts";

const PRICE = 2_000_000n; // USD 2.00 in USDC atomic units
const post = (body: string, contentType = "application/json"): RequestInit => ({
  method: "POST",
  headers: { "content-type": contentType },
  body,
});

describe("csv-cleanup on the local chain: values are never changed", () => {
  let service: TestService;
  let balanceOf: ReturnType<typeof usdcBalances>;
  const payer = createPayer(devPrivateKey(5));

  beforeAll(async () => {
    service = await startTestService({}, { operations: [csvCleanup] });
    balanceOf = usdcBalances(service.localChain?.rpcUrl as string);
  });
  afterAll(async () => {
    await service?.stop();
  });

  const url = () => `${service.url}/v1/csv-cleanup`;

  it("integers beyond 2^53 keep every digit and are not merged (the issue's rows)", async () => {
    const [payerBefore, payToBefore] = [await balanceOf(payer.address), await balanceOf(service.payTo)];
    const response = await payer.fetch(
      url(),
      post('{"rows":[{"v":9007199254740993},{"v":9007199254740992}],"keyColumns":["v"]}'),
    );
    expect(response.status).toBe(200);
    const text = await response.text();
    // The numbers come back as written: as JSON numbers, digit for digit.
    expect(text).toContain('"rows":[{"v":9007199254740993},{"v":9007199254740992}]');
    const body = parseLossless(text) as { stats: { duplicatesDropped: unknown }; duplicates: unknown[] };
    expect(Number(body.stats.duplicatesDropped)).toBe(0);
    expect(body.duplicates).toEqual([]);
    expect(paymentReceipt(response)).toMatchObject({ success: true });
    expect(await balanceOf(payer.address)).toBe(payerBefore - PRICE);
    expect(await balanceOf(service.payTo)).toBe(payToBefore + PRICE);
  });

  it("19-digit ids and other spellings (1.50, 1e3, -0) are returned exactly as written", async () => {
    const response = await payer.fetch(
      url(),
      post(
        '{"rows":[{"id":1234567890123456789,"x":1.50},{"id":1234567890123456788,"x":1e3},' +
          '{"id":1234567890123456789,"x":-0}],"keyColumns":["id"]}',
      ),
    );
    expect(response.status).toBe(200);
    const text = await response.text();
    expect(text).toContain('"rows":[{"id":1234567890123456789,"x":1.50},{"id":1234567890123456788,"x":1e3}]');
    // The third row repeats the first id exactly; it is the only duplicate.
    expect(JSON.parse(text).duplicates).toEqual([
      { index: 2, duplicateOf: 0, match: "exact", differences: [] },
    ]);
  });

  it("ids that differ only in case are kept apart unless the caller names them as a key column", async () => {
    const rows = '[{"id":"dQw4w9WgXcQ","t":"a"},{"id":"DQW4W9WGXCQ","t":"a"}]';
    const whole = await payer.fetch(url(), post(`{"rows":${rows}}`));
    expect(whole.status).toBe(200);
    const wholeBody = await whole.json();
    expect(wholeBody.rows).toEqual([
      { id: "dQw4w9WgXcQ", t: "a" },
      { id: "DQW4W9WGXCQ", t: "a" },
    ]);
    expect(wholeBody.duplicates).toEqual([]);

    // Named as a key column, case folding applies (SPEC default caseInsensitiveKeys: true) and is reported.
    const keyed = await payer.fetch(url(), post(`{"rows":${rows},"keyColumns":["id"]}`));
    expect(keyed.status).toBe(200);
    const keyedBody = await keyed.json();
    expect(keyedBody.rows).toEqual([{ id: "dQw4w9WgXcQ", t: "a" }]);
    expect(keyedBody.duplicates).toEqual([
      { index: 1, duplicateOf: 0, match: "case-folded", differences: [{ column: "id", kind: "case" }] },
    ]);
  });

  it("takes an RFC 4180 CSV body with options in the query string", async () => {
    const csv =
      ' Email Address ,Name,Id\r\n"ADA@example.org"," Ada, Countess",9007199254740993\r\n' +
      'ada@example.org,Ada,9007199254740993\r\n"grace@example.org","Grace ""Amazing"" Hopper",2\r\n,,\r\n';
    const unpaid = await fetch(
      `${url()}?keyColumns=email_address&normalizeHeaders=snake`,
      post(csv, "text/csv; charset=utf-8"),
    );
    expect(unpaid.status).toBe(402); // valid: it gets as far as the payment terms

    const response = await payer.fetch(
      `${url()}?keyColumns=email_address&normalizeHeaders=snake`,
      post(csv, "text/csv"),
    );
    expect(response.status).toBe(200);
    const body = await response.json();
    expect(body.columns).toEqual(["email_address", "name", "id"]);
    // CSV cells are text: kept as strings, exactly (trimmed only by trimStrings).
    expect(body.rows).toEqual([
      { email_address: "ADA@example.org", name: "Ada, Countess", id: "9007199254740993" },
      { email_address: "grace@example.org", name: 'Grace "Amazing" Hopper', id: "2" },
    ]);
    expect(body.duplicates).toEqual([
      {
        index: 1,
        duplicateOf: 0,
        match: "case-folded",
        differences: [{ column: "email_address", kind: "case" }],
      },
    ]);
    expect(body.stats).toMatchObject({
      inputRows: 4,
      outputRows: 2,
      blankRowsDropped: 1,
      duplicatesDropped: 1,
    });
  });

  // The money rules of a 400 (before the 402, a payment sent with it not taken): test/contract/paid-operations.
  it("bad CSV, bad options and lossy input are 400 problem+json with a JSON Pointer", async () => {
    const cases: [string, RequestInit, { pointer: string; message: RegExp }][] = [
      [
        url(),
        post('id,name\r\n1,"Ada\r\n2,Grace\r\n', "text/csv"),
        { pointer: "/rows/0", message: /quote/i },
      ],
      [url(), post("id,name\r\n1,Ada,extra\r\n", "text/csv"), { pointer: "/rows/0", message: /3 fields/ }],
      [url(), post("id,id\r\n1,2\r\n", "text/csv"), { pointer: "/rows/0/id", message: /more than once/ }],
      [
        `${url()}?keyColumns=nope`,
        post("id,name\r\n1,Ada\r\n", "text/csv"),
        { pointer: "/keyColumns/0", message: /not a column/ },
      ],
      [
        `${url()}?trimStrings=maybe`,
        post("id\r\n1\r\n", "text/csv"),
        { pointer: "/trimStrings", message: /boolean/ },
      ],
      [`${url()}?keyColumns=id`, post('{"rows":[{"id":1}]}'), { pointer: "/keyColumns", message: /query/ }],
      [url(), post("id\r\n1\r\n", "application/xml"), { pointer: "", message: /text\/csv/ }],
    ];
    for (const [target, init, expected] of cases) {
      const response = await fetch(target, init);
      expect(response.status, String(init.body)).toBe(400);
      expect(response.headers.get("content-type")).toBe("application/problem+json");
      const problem = await response.json();
      expect(problem.errors[0].pointer, String(init.body)).toBe(expected.pointer);
      expect(problem.errors[0].message, String(init.body)).toMatch(expected.message);
    }
  });

  it("a body over 64 KiB is read and cleaned in a worker thread, with the same exactness and pointers", async () => {
    const rows = Array.from(
      { length: 500 },
      (_, i) =>
        `{"id":12345678901234560${String(i % 400).padStart(3, "0")},"note":"${"x".repeat(150)}","n":${i}.50}`,
    );
    const body = `{"rows":[${rows.join(",")}],"keyColumns":["id"]}`;
    expect(body.length).toBeGreaterThan(64 * 1024);
    const response = await payer.fetch(url(), post(body));
    expect(response.status).toBe(200);
    const text = await response.text();
    expect(text).toContain(`{"id":12345678901234560000,"note":"${"x".repeat(150)}","n":0.50}`);
    const parsed = JSON.parse(text);
    expect(parsed.stats).toMatchObject({ inputRows: 500, outputRows: 400, duplicatesDropped: 100 });
    expect(parsed.duplicates[0]).toEqual({ index: 400, duplicateOf: 0, match: "exact", differences: [] });

    const csv = `id,name\r\n${Array.from({ length: 600 }, (_, i) => `${i},${"n".repeat(120)}`).join("\r\n")}\r\n`;
    const tooMany = await fetch(url(), post(csv, "text/csv"));
    expect(tooMany.status).toBe(400);
    expect((await tooMany.json()).errors).toEqual([
      { pointer: "/rows", message: expect.stringContaining("500") },
    ]);
  });

  it("the OpenAPI document describes the CSV body and its query options", async () => {
    const document = await (await fetch(`${service.url}/openapi.json`)).json();
    const operation = document.paths["/v1/csv-cleanup"].post;
    expect(Object.keys(operation.requestBody.content)).toEqual(["application/json", "text/csv"]);
    expect(operation.parameters.map((p: { name: string; in: string }) => `${p.in}:${p.name}`)).toEqual(
      expect.arrayContaining(["query:keyColumns", "query:normalizeHeaders", "query:delimiter"]),
    );
  });
});
