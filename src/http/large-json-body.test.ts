import { Hono } from "hono";
import { afterAll, describe, expect, it } from "vitest";
import { BODY_OPERATION } from "../../test/helpers/body-operation.ts";
import { type AnyOperation, defineOperation } from "../contract/operation.ts";
import { MAX_JSON_DEPTH } from "../input/parse-input.ts";
import { Problem } from "../problem.ts";
import { closeLargeJsonBodyPool, INLINE_JSON_BODY_BYTES, largeJsonBodyPool } from "./large-json-body.ts";
import { readOperationInput } from "./read-input.ts";

describe("a JSON body over INLINE_JSON_BODY_BYTES is parsed in a worker thread", () => {
  const operation = defineOperation({
    id: "large",
    ...BODY_OPERATION,
    path: "/v1/large",
    maxBodyBytes: 4 * 1024 * 1024,
    json: { maxDepth: 4, rejectDuplicateKeys: true, maxValues: 1000 },
  }) as AnyOperation;
  // An operation without JSON limits of its own: only MAX_JSON_DEPTH holds.
  const unlimited = defineOperation({
    ...operation,
    id: "unlimited",
    path: "/v1/unlimited",
    json: undefined,
  });
  const app = new Hono();
  app.post(operation.path, async (c) => c.json({ input: await readOperationInput(c, operation) }));
  app.post(unlimited.path, async (c) => c.json({ input: await readOperationInput(c, unlimited) }));
  app.onError((error) => {
    if (!(error instanceof Problem)) throw error;
    const { status, headers, body } = error.toResponse();
    return new Response(body, { status, headers });
  });
  // With and without a declared length (@hono/node-server's direct read, and a counted stream).
  const post = (body: string, declareLength: boolean) =>
    app.request(operation.path, {
      method: "POST",
      body: declareLength ? body : new Blob([body]).stream(),
      headers: declareLength ? { "content-length": String(Buffer.byteLength(body)) } : {},
      ...(declareLength ? {} : { duplex: "half" }),
    } as RequestInit);
  const big = "x".repeat(INLINE_JSON_BODY_BYTES);
  afterAll(closeLargeJsonBodyPool);

  it("answers the same input, from the worker", async () => {
    for (const declareLength of [true, false]) {
      const response = await post(JSON.stringify({ doc: { text: big, list: [1, "é"] } }), declareLength);
      expect(response.status).toBe(200);
      expect(await response.json()).toEqual({ input: { doc: { text: big, list: [1, "é"] } } });
    }
    expect(largeJsonBodyPool().stats.startedWorkers).toBe(1);
  });

  it("keeps the 400's pointer and message when the worker refuses the body", async () => {
    for (const declareLength of [true, false]) {
      const duplicate = await post(`{"doc":{"text":"${big}","a":1,"a":2}}`, declareLength);
      expect(duplicate.status).toBe(400);
      expect(duplicate.headers.get("content-type")).toBe("application/problem+json");
      expect((await duplicate.json()).errors).toEqual([
        { pointer: "/doc/a", message: 'duplicate key "a": this object names it more than once' },
      ]);
      const overflow = await post(`{"doc":{"text":"${big}","n":1e999}}`, declareLength);
      expect(overflow.status).toBe(400);
      expect((await overflow.json()).errors).toEqual([
        { pointer: "/doc/n", message: "number out of range (not a finite double)" },
      ]);
      const invalid = await post(`{"doc":"${big}"`, declareLength);
      expect(invalid.status).toBe(400);
      expect((await invalid.json()).errors[0].pointer).toBe("");
    }
  });

  it("refuses a body nested deeper than MAX_JSON_DEPTH with a 400 and its pointer (150,000 levels were a 500)", async () => {
    const nested = `${"[".repeat(150_000)}${"]".repeat(150_000)}`;
    const response = await app.request(unlimited.path, {
      method: "POST",
      body: `{"pad":"${big}","doc":${nested}}`,
    });
    expect(response.status).toBe(400);
    const [error] = (await response.json()).errors;
    expect(error.pointer).toBe(`/doc${"/0".repeat(MAX_JSON_DEPTH - 1)}`);
    expect(error.message).toContain(`nested deeper than ${MAX_JSON_DEPTH} levels`);
  });
});
