import { Hono } from "hono";
import { describe, expect, it } from "vitest";
import { z } from "zod";
import { BODY_OPERATION } from "../../test/helpers/body-operation.ts";
import {
  type AnyOperation,
  defineOperation,
  type JsonBodyLimits,
  type RequestBody,
} from "../contract/operation.ts";
import { checkJsonStructure, decodeBody } from "../input/parse-input.ts";
import { Problem } from "../problem.ts";
import { INLINE_JSON_BODY_BYTES } from "./large-json-body.ts";
import { readOperationInput } from "./read-input.ts";

const base = BODY_OPERATION;

describe("checkJsonStructure", () => {
  const check = (text: string, limits: JsonBodyLimits) => {
    JSON.parse(text); // the precondition: text JSON.parse accepted
    return checkJsonStructure(text, limits);
  };

  it("does nothing without limits", () => {
    expect(check('{"a":1,"a":2}', {})).toBeUndefined();
  });

  it("points at the first container nested deeper than maxDepth (the outermost value is level 1)", () => {
    const text = '{"a":[{"b":[]}],"c":[[[[]]]]}';
    expect(check(text, { maxDepth: 3 })).toEqual({
      pointer: "/a/0/b",
      message: "nested deeper than 3 levels of arrays and objects (the body is level 1)",
    });
    expect(check(text, { maxDepth: 4 })?.pointer).toBe("/c/0/0/0");
    expect(check(text, { maxDepth: 5 })).toBeUndefined();
    expect(check("[1, [2, [3]], {}]", { maxDepth: 2 })?.pointer).toBe("/1/1");
    expect(check('"[[[["', { maxDepth: 1 })).toBeUndefined();
  });

  it("points at the second occurrence of a duplicated key", () => {
    expect(check('{"a":1,"b":{"x":1,"y":[],"x":2}}', { rejectDuplicateKeys: true })).toEqual({
      pointer: "/b/x",
      message: 'duplicate key "x": this object names it more than once',
    });
    expect(check('{"a":{"b":1},"a":2}', { rejectDuplicateKeys: true })?.pointer).toBe("/a");
    expect(check('[{"k":1},{"k":[{"z":0},{"z":1,"z":1}]}]', { rejectDuplicateKeys: true })?.pointer).toBe(
      "/1/k/1/z",
    );
  });

  it("compares decoded keys and escapes the pointer (RFC 6901)", () => {
    expect(check('{"ab":1,"a\\u0062":2}', { rejectDuplicateKeys: true })?.pointer).toBe("/ab");
    expect(check('{"a/b~":1, "a\\/b~" :2}', { rejectDuplicateKeys: true })).toEqual({
      pointer: "/a~1b~0",
      message: 'duplicate key "a/b~": this object names it more than once',
    });
    expect(check('{"":1,"":2}', { rejectDuplicateKeys: true })?.pointer).toBe("/");
  });

  it("allows the same key in different objects, and in objects with many keys", () => {
    expect(check('[{"a":1},{"a":2}]', { rejectDuplicateKeys: true })).toBeUndefined();
    expect(check('{"a":{"a":{"a":1}},"b":[{"a":1},{"a":1}]}', { rejectDuplicateKeys: true })).toBeUndefined();
    const many = Array.from({ length: 100 }, (_, i) => `"k${i}":${i}`).join(",");
    expect(check(`{${many}}`, { rejectDuplicateKeys: true })).toBeUndefined();
    expect(check(`{${many},"k57":0}`, { rejectDuplicateKeys: true })?.pointer).toBe("/k57");
  });

  it("is not fooled by quotes, backslashes, brackets and commas inside strings", () => {
    const text = '{"a":"{[\\"\\\\","b\\\\":["]}\\\\\\"",","],"c":{"\\"":1,"\\\\":2}}';
    expect(check(text, { maxDepth: 2, rejectDuplicateKeys: true })).toBeUndefined();
    expect(check(text.replace('"c"', '"a"'), { rejectDuplicateKeys: true })?.pointer).toBe("/a");
    expect(check('["a,b", ["x"]]', { maxDepth: 1 })?.pointer).toBe("/1");
  });

  it("scans 100,000 levels of nesting without recursion", () => {
    const deep = `${"[".repeat(100_000)}${"]".repeat(100_000)}`;
    expect(check(deep, { maxDepth: 64 })?.pointer).toBe("/0".repeat(64));
    expect(check(deep, { rejectDuplicateKeys: true })).toBeUndefined();
    const deepObjects = `${'{"k":'.repeat(100_000)}1${"}".repeat(100_000)}`;
    expect(check(deepObjects, { rejectDuplicateKeys: true })).toBeUndefined();
  });

  it("scans a 2 MB body in one pass", () => {
    const record = '{"id":1,"name":"caf\\u00e9 \\"x\\"","tags":["a","b"],"n":{"x":1.5e3,"y":null}}';
    const text = `[${Array.from({ length: 2_000_000 / record.length }, () => record).join(",")}]`;
    expect(text.length).toBeGreaterThan(1_900_000);
    expect(check(text, { maxDepth: 64, rejectDuplicateKeys: true })).toBeUndefined();
  });
});

describe("readOperationInput with JSON body limits", () => {
  const limited = defineOperation({
    ...base,
    id: "limited",
    path: "/v1/limited",
    maxBodyBytes: 4 * 1024 * 1024,
    json: { maxDepth: 4, rejectDuplicateKeys: true },
  });
  const unlimited = defineOperation({ ...base, id: "unlimited", path: "/v1/unlimited" });
  const query = defineOperation({
    ...base,
    id: "query",
    method: "GET",
    path: "/v1/query",
    inputFrom: "query",
    input: z.strictObject({ n: z.number(), list: z.array(z.string()).optional() }),
  });

  const app = new Hono();
  for (const operation of [limited, unlimited, query] as AnyOperation[]) {
    app.on(operation.method, operation.path, async (c) =>
      c.json({ input: await readOperationInput(c, operation) }),
    );
  }
  app.onError((error) => {
    if (!(error instanceof Problem)) throw error;
    const { status, headers, body } = error.toResponse();
    return new Response(body, { status, headers });
  });
  const post = (path: string, body: string) => app.request(path, { method: "POST", body });

  it("answers 400 with the pointer of a duplicated key", async () => {
    const response = await post("/v1/limited", '{"doc":{"a":1,"a":2}}');
    expect(response.status).toBe(400);
    expect(response.headers.get("content-type")).toBe("application/problem+json");
    expect((await response.json()).errors).toEqual([
      { pointer: "/doc/a", message: 'duplicate key "a": this object names it more than once' },
    ]);
  });

  it("answers 400 with the pointer where the body got too deep, even 100,000 levels deep", async () => {
    const response = await post("/v1/limited", '{"doc":[[[{"x":1}]]]}');
    expect(response.status).toBe(400);
    expect((await response.json()).errors).toEqual([
      {
        pointer: "/doc/0/0/0",
        message: "nested deeper than 4 levels of arrays and objects (the body is level 1)",
      },
    ]);
    const deep = await post("/v1/limited", `{"doc":${"[".repeat(100_000)}${"]".repeat(100_000)}}`);
    expect(deep.status).toBe(400);
    expect((await deep.json()).errors[0].pointer).toBe("/doc/0/0/0");
  });

  it("accepts a body within the limits", async () => {
    const response = await post("/v1/limited", '{"doc":[[{"a":1,"b":2}]]}');
    expect(response.status).toBe(200);
    expect(await response.json()).toEqual({ input: { doc: [[{ a: 1, b: 2 }]] } });
  });

  it("keeps the behaviour of operations without limits: the last duplicate wins", async () => {
    const response = await post("/v1/unlimited", '{"doc":{"a":1,"a":2}}');
    expect(await response.json()).toEqual({ input: { doc: { a: 2 } } });
  });

  it("still refuses numbers beyond a double, and invalid JSON", async () => {
    for (const path of ["/v1/limited", "/v1/unlimited"]) {
      const overflow = await post(path, '{"doc":[1e999]}');
      expect(overflow.status).toBe(400);
      expect((await overflow.json()).errors).toEqual([
        { pointer: "/doc/0", message: "number out of range (not a finite double)" },
      ]);
      const broken = await post(path, '{"doc":');
      expect(broken.status).toBe(400);
      expect((await broken.json()).errors[0].pointer).toBe("");
    }
  });

  it("finds overflowing numbers and lone surrogates however they are written, and passes look-alikes", async () => {
    const refused: [string, string][] = [
      [`{"doc":[${"9".repeat(309)}]}`, "/doc/0"],
      ['{"doc":[-1.5E+400]}', "/doc/0"],
      ['{"doc":{"k":"\\uDBFF"}}', "/doc/k"],
      ['{"doc":{"\\udfff":1}}', "/doc/\udfff"],
    ];
    for (const [body, pointer] of refused) {
      const response = await post("/v1/unlimited", body);
      expect(response.status).toBe(400);
      expect((await response.json()).errors[0].pointer).toBe(pointer);
    }
    const accepted: [string, unknown][] = [
      [`{"doc":[${"9".repeat(308)}, 1e308, 2E-400]}`, [Number("9".repeat(308)), 1e308, 0]],
      ['{"doc":"\\ud83d\\ude00 and \\\\uD800"}', "\u{1F600} and \\uD800"],
      ['{"doc":"\u00e9t\u00e9"}', "\u00e9t\u00e9"],
      ['\ufeff{"doc":"after a byte order mark"}', "after a byte order mark"],
    ];
    for (const [body, doc] of accepted) {
      const response = await post("/v1/unlimited", body);
      expect(response.status).toBe(200);
      expect(await response.json()).toEqual({ input: { doc } });
    }
  });

  it("still reads query strings as before", async () => {
    const response = await app.request("/v1/query?n=2.5&list=a,b&list=c");
    expect(await response.json()).toEqual({ input: { n: 2.5, list: ["a", "b", "c"] } });
  });
});

describe("readOperationInput with a declared Content-Length", () => {
  // @hono/node-server builds a whole web Request and ReadableStream the first time `request.body` is
  // read: most of an unpaid 402's CPU. A declared length is read whole (`text`/`arrayBuffer`) instead.
  const watched = (body: string | Uint8Array<ArrayBuffer>) => {
    const request = new Request("http://service.test/v1/op", {
      method: "POST",
      body,
      headers: {
        "content-type": "application/json",
        "content-length": String(typeof body === "string" ? Buffer.byteLength(body) : body.byteLength),
      },
    });
    const touched: string[] = [];
    const raw = new Proxy(request, {
      get(target, property) {
        if (property === "body") touched.push("body");
        const value = Reflect.get(target, property, target);
        return typeof value === "function" ? value.bind(target) : value;
      },
    });
    const c = {
      req: { raw, header: (name: string) => request.headers.get(name) ?? undefined, queries: () => ({}) },
    };
    return { c: c as unknown as Parameters<typeof readOperationInput>[0], touched };
  };

  // An operation's own reader gets a small body as text (decoded once, no ArrayBuffer copy) and a large
  // one as bytes; both decode alike, invalid UTF-8 included (U+FFFD), so the reader answers alike.
  const ownReader = defineOperation({
    ...base,
    id: "own-reader",
    path: "/v1/op",
    maxBodyBytes: 2 * INLINE_JSON_BODY_BYTES,
    readBody: async (body: RequestBody) => ({ given: typeof body, doc: decodeBody(body) }),
  });

  it("for an operation that reads its own body: a small one as text", async () => {
    const { c, touched } = watched(Buffer.from('{"doc":"\xff"}', "latin1"));
    expect(await readOperationInput(c, ownReader as AnyOperation)).toEqual({
      given: "string",
      doc: '{"doc":"\ufffd"}',
    });
    expect(touched).toEqual([]);
  });

  it("for an operation that reads its own body: a large one as bytes", async () => {
    const filler = "a".repeat(INLINE_JSON_BODY_BYTES);
    const { c, touched } = watched(Buffer.from(`{"doc":"\xff${filler}"}`, "latin1"));
    expect(await readOperationInput(c, ownReader as AnyOperation)).toEqual({
      given: "object",
      doc: `{"doc":"\ufffd${filler}"}`,
    });
    expect(touched).toEqual([]);
  });

  it("for a JSON body", async () => {
    const json = defineOperation({ ...base, id: "json", path: "/v1/op" });
    const { c, touched } = watched('{"doc":1}');
    expect(await readOperationInput(c, json as AnyOperation)).toEqual({ doc: 1 });
    expect(touched).toEqual([]);
  });
});
