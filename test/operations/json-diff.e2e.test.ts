import { createHash } from "node:crypto";
import fastJsonPatch from "fast-json-patch";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { canonicalJson } from "../../src/canonical-json.ts";
import { devPrivateKey } from "../../src/chain/dev-accounts.ts";
import { createPayer, paymentReceipt } from "../../src/client/paying-fetch.ts";
import { jsonDiff } from "../../src/operations/json-diff/index.ts";
import { startTestService, type TestService, usdcBalances } from "../helpers/service.ts";

const PRICE = 10_000n; // USD 0.01 in USDC atomic units
const postText = (body: string): RequestInit => ({
  method: "POST",
  headers: { "content-type": "application/json" },
  body,
});
const sha256 = (text: string) => `sha256:${createHash("sha256").update(text, "utf8").digest("hex")}`;

/** A package-lock.json shape with `count` packages; `bump` changes every bump-th package's version. */
function lockfile(count: number, bump = 0) {
  const packages: Record<string, unknown> = { "": { name: "app", version: "1.0.0" } };
  for (let i = 0; i < count; i++) {
    const version = bump > 0 && i % bump === 0 ? "2.0.1" : "1.4.2";
    packages[`node_modules/package-${i}`] = {
      version,
      resolved: `https://registry.example/package-${i}/-/package-${i}-${version}.tgz`,
      integrity: `sha512-${createHash("sha512").update(`${i}@${version}`).digest("base64")}`,
      dev: i % 3 === 0,
      license: "MIT",
      dependencies: { [`package-${(i * 7) % count}`]: "^1.0.0" },
      engines: { node: ">=14" },
    };
  }
  return { name: "app", version: "1.0.0", lockfileVersion: 3, requires: true, packages };
}

describe("json-diff on the local chain", () => {
  let service: TestService;
  let balanceOf: ReturnType<typeof usdcBalances>;
  const payer = createPayer(devPrivateKey(4));

  beforeAll(async () => {
    service = await startTestService({}, { operations: [jsonDiff] });
    balanceOf = usdcBalances(service.localChain?.rpcUrl as string);
  });
  afterAll(async () => {
    await service?.stop();
  });

  it("a paid diff charges exactly USD 0.01 and answers the verified patch with a receipt", async () => {
    const [payerBefore, payToBefore] = [await balanceOf(payer.address), await balanceOf(service.payTo)];
    // Number spelling and member order are not differences.
    const body =
      '{"before":{"items":[{"id":"a","qty":1.0},{"id":"b","qty":2}],"note":"x","a/b":1},' +
      '"after":{"a/b":1,"items":[{"qty":2E0,"id":"b"},{"id":"c","qty":5}]},' +
      '"arrayMode":"key","arrayKey":"id"}';
    const response = await payer.fetch(`${service.url}/v1/json-diff`, postText(body));
    expect(response.status).toBe(200);
    expect(await response.json()).toEqual({
      equal: false,
      beforeHash: sha256('{"a/b":1,"items":[{"id":"a","qty":1},{"id":"b","qty":2}],"note":"x"}'),
      afterHash: sha256('{"a/b":1,"items":[{"id":"b","qty":2},{"id":"c","qty":5}]}'),
      patchHash: sha256(
        '[{"op":"remove","path":"/items/0"},{"op":"add","path":"/items/1","value":{"id":"c","qty":5}},' +
          '{"op":"remove","path":"/note"}]',
      ),
      changes: [
        { op: "remove", path: "/items/0", previous: { id: "a", qty: 1 } },
        { op: "add", path: "/items/1", value: { id: "c", qty: 5 } },
        { op: "remove", path: "/note", previous: "x" },
      ],
      patch: [
        { op: "remove", path: "/items/0" },
        { op: "add", path: "/items/1", value: { id: "c", qty: 5 } },
        { op: "remove", path: "/note" },
      ],
      stats: { operations: 3, add: 1, remove: 2, replace: 0, move: 0, copy: 0, test: 0, returned: 3 },
      truncated: false,
    });
    const receipt = paymentReceipt(response);
    expect(receipt).toMatchObject({ success: true, network: "eip155:8453" });
    expect(receipt?.transaction).toMatch(/^0x[0-9a-f]{64}$/);
    expect(receipt?.payer?.toLowerCase()).toBe(payer.address.toLowerCase());
    expect(await balanceOf(payer.address)).toBe(payerBefore - PRICE);
    expect(await balanceOf(service.payTo)).toBe(payToBefore + PRICE);
  });

  // The money rules of a 400 (before the 402, a payment sent with it not taken): test/contract/paid-operations.
  it("invalid requests are 400s with JSON Pointers, a large body's checked off the main thread as a small one's", async () => {
    const cases: [string, { pointer: string; message: string }][] = [
      [
        '{"before":{"a":1,"a":2},"after":{}}',
        { pointer: "/before/a", message: 'duplicate key "a": this object names it more than once' },
      ],
      [
        `{"before":${"[".repeat(65)}${"]".repeat(65)},"after":1}`,
        {
          pointer: `/before${"/0".repeat(64)}`,
          message: "nested deeper than 65 levels of arrays and objects (the body is level 1)",
        },
      ],
      [
        '{"before":[{"id":1},{"name":"x"}],"after":[],"arrayMode":"key","arrayKey":"id"}',
        {
          pointer: "/before/1",
          message: 'missing "id" (arrayMode "key" matches the items of this array by it)',
        },
      ],
    ];
    for (const [body, error] of cases) {
      const response = await fetch(`${service.url}/v1/json-diff`, postText(body));
      expect(response.status).toBe(400);
      expect((await response.json()).errors).toEqual([error]);
    }
    const tooLarge = await fetch(
      `${service.url}/v1/json-diff`,
      postText(JSON.stringify({ before: "x".repeat(8 * 1024 * 1024), after: "" })),
    );
    expect(tooLarge.status).toBe(413);
    expect((await tooLarge.json()).detail).toContain(String(8 * 1024 * 1024));
    // A large body is checked off the main thread, with the same pointers as a small one.
    const largeInvalid = await fetch(
      `${service.url}/v1/json-diff`,
      postText(`{"before":${JSON.stringify(lockfile(3000), null, 2)},"after":{"a":1,"a":2}}`),
    );
    expect(largeInvalid.status).toBe(400);
    expect((await largeInvalid.json()).errors).toEqual([
      { pointer: "/after/a", message: 'duplicate key "a": this object names it more than once' },
    ]);
  });

  it("a pretty-printed package-lock pair of several MiB is diffed (2 MiB was the old limit)", async () => {
    const before = lockfile(9000);
    const after = lockfile(9000, 7);
    const body = `{"before":${JSON.stringify(before, null, 2)},"after":${JSON.stringify(after, null, 2)},"maxChanges":10000}`;
    expect(Buffer.byteLength(body)).toBeGreaterThan(4 * 1024 * 1024);
    const unpaid = await fetch(`${service.url}/v1/json-diff`, postText(body));
    expect(unpaid.status).toBe(402);
    const payerBefore = await balanceOf(payer.address);
    const response = await payer.fetch(`${service.url}/v1/json-diff`, postText(body));
    expect(response.status).toBe(200);
    const output = await response.json();
    expect(output).toMatchObject({
      equal: false,
      truncated: false,
      stats: { replace: 3858, operations: 3858 },
    });
    expect(output.beforeHash).toBe(sha256(canonicalJson(before)));
    expect(output.afterHash).toBe(sha256(canonicalJson(after)));
    const { newDocument } = fastJsonPatch.applyPatch(structuredClone(before), output.patch, true, false);
    expect(canonicalJson(newDocument)).toBe(canonicalJson(after));
    expect(await balanceOf(payer.address)).toBe(payerBefore - PRICE);
  });
});
