// The service over HTTP on a free local port: what clients see, errors included.
import assert from "node:assert/strict";
import fs from "node:fs";
import { after, before, describe, test } from "node:test";
import { createServer, MAX_BODY_BYTES } from "../src/server.js";

let server;
let base;
before(async () => {
  server = createServer();
  await new Promise((resolve) => server.listen(0, "127.0.0.1", resolve));
  base = `http://127.0.0.1:${server.address().port}`;
});
after(() => new Promise((resolve) => server.close(resolve)));

const post = (body, headers = { "content-type": "application/json" }) =>
  fetch(`${base}/v1/unit-convert`, {
    method: "POST",
    headers,
    body: typeof body === "string" ? body : JSON.stringify(body),
  });

async function problem(response, status) {
  assert.equal(response.status, status);
  assert.match(response.headers.get("content-type"), /^application\/problem\+json/);
  const body = await response.json();
  assert.equal(body.status, status);
  assert.match(body.type, /^urn:utility402:problem:/);
  return body;
}

describe("POST /v1/unit-convert", () => {
  test("one conversion", async () => {
    const response = await post({ value: 100, from: "psi", to: "kPa" });
    assert.equal(response.status, 200);
    assert.match(response.headers.get("content-type"), /^application\/json/);
    assert.deepEqual(await response.json(), {
      value: 100,
      from: "psi",
      to: "kPa",
      result: 689.475729316836,
      resultExact: "8896443230521/12903200000",
      domain: "pressure",
      dimension: "L^-1·M·T^-2",
    });
  });
  test("a batch of 100", async () => {
    const conversions = Array.from({ length: 100 }, (_, i) => ({ value: i, from: "m", to: "cm" }));
    const response = await post({ conversions });
    assert.equal(response.status, 200);
    const { results } = await response.json();
    assert.equal(results.length, 100);
    assert.equal(results[99].resultExact, "9900");
  });
  test("a batch of 101 is refused", async () => {
    const conversions = Array.from({ length: 101 }, () => ({ value: 1, from: "m", to: "cm" }));
    const body = await problem(await post({ conversions }), 400);
    assert.equal(body.errors[0].pointer, "/conversions");
  });
  test("an empty batch is refused", async () => {
    const body = await problem(await post({ conversions: [] }), 400);
    assert.equal(body.errors[0].pointer, "/conversions");
  });
  test("an unknown unit names close matches", async () => {
    const body = await problem(await post({ value: 1, from: "metre", to: "fot" }), 400);
    assert.equal(body.errors[0].pointer, "/to");
    assert.match(body.errors[0].message, /unknown unit "fot"; close matches: .*ft/);
  });
  test("an ambiguous unit lists the choices", async () => {
    const body = await problem(await post({ value: 1, from: "gallon", to: "L" }), 400);
    assert.equal(body.errors[0].pointer, "/from");
    assert.match(body.errors[0].message, /gal_US .*gal_imp/);
  });
  test("different quantities are refused with both dimensions", async () => {
    const body = await problem(await post({ value: 1, from: "kg", to: "N" }), 400);
    assert.equal(body.errors[0].pointer, "/to");
    assert.match(body.errors[0].message, /kgf, lbf and ozf/);
  });
  test("a temperature and a temperature difference do not convert", async () => {
    const body = await problem(await post({ value: 1, from: "degC", to: "delta_degF" }), 400);
    assert.match(body.errors[0].message, /temperature difference/);
  });
  test("below absolute zero is refused at /value", async () => {
    const body = await problem(await post({ value: -300, from: "degC", to: "K" }), 400);
    assert.deepEqual(body.errors.map((e) => e.pointer), ["/value"]);
  });
  test("a batch answers item by item: the bad item carries its errors, pointing into the batch", async () => {
    const response = await post({ conversions: [{ value: 1, from: "m", to: "ft" }, { value: 1, from: "m", to: "kg" }] });
    assert.equal(response.status, 200);
    const body = await response.json();
    assert.equal(body.results[0].resultExact, "3.(280839895013123359580052493438320209973753)");
    assert.equal(body.results[1].errors[0].pointer, "/conversions/1/to");
  });
  test("a batch whose every item is bad is refused whole, pointing into the batch", async () => {
    const body = await problem(await post({ conversions: [{ value: 1, from: "m", to: "kg" }] }), 400);
    assert.equal(body.errors[0].pointer, "/conversions/0/to");
  });
  test("an unknown property is refused", async () => {
    const body = await problem(await post({ value: 1, from: "m", to: "ft", precision: 3 }), 400);
    assert.equal(body.errors[0].pointer, "/precision");
  });
  test("a value that is not a number is refused", async () => {
    const body = await problem(await post({ value: "1", from: "m", to: "ft" }), 400);
    assert.equal(body.errors[0].pointer, "/value");
  });
  test("a missing unit is refused", async () => {
    const body = await problem(await post({ value: 1, from: "m" }), 400);
    assert.ok(body.errors.some((e) => e.pointer === "/to"));
  });
  test("a unit longer than 64 characters is refused", async () => {
    const body = await problem(await post({ value: 1, from: "m".repeat(65), to: "ft" }), 400);
    assert.equal(body.errors[0].pointer, "/from");
  });
  test("a result beyond the largest JSON number is refused", async () => {
    const body = await problem(await post({ value: 1e308, from: "GW", to: "mW" }), 400);
    assert.equal(body.errors[0].pointer, "/value");
  });
  test("JSON that does not parse is a 400", async () => {
    const body = await problem(await post("{value: 1"), 400);
    assert.match(body.errors[0].message, /not valid JSON/);
  });
  test("an empty body is a 400", async () => {
    await problem(await post(""), 400);
  });
  test("a body that is not an object is a 400", async () => {
    await problem(await post("[1,2]"), 400);
  });
  test("a body over 1 MiB is a 413", async () => {
    await problem(await post(`{"pad":"${"x".repeat(MAX_BODY_BYTES)}"}`), 413);
  });
  test("a body that is not JSON is a 415", async () => {
    await problem(await post("value=1", { "content-type": "application/x-www-form-urlencoded" }), 415);
  });
  test("a charset parameter is fine", async () => {
    const response = await post({ value: 1, from: "m", to: "cm" }, { "content-type": "application/json; charset=utf-8" });
    assert.equal(response.status, 200);
  });
  test("GET is a 405 naming POST", async () => {
    const response = await fetch(`${base}/v1/unit-convert`);
    await problem(response, 405);
    assert.equal(response.headers.get("allow"), "POST");
  });
});

describe("free routes", () => {
  test("GET /v1/units lists 92 units in 8 domains", async () => {
    const response = await fetch(`${base}/v1/units`);
    assert.equal(response.status, 200);
    const body = await response.json();
    assert.equal(body.count, 92);
    assert.equal(body.units.length, 92);
    assert.equal(body.domains.length, 8);
    assert.deepEqual(body.units.find((u) => u.id === "in"), {
      ...body.units.find((u) => u.id === "in"),
      factor: "127/5000",
      factorExact: "0.0254",
    });
  });
  test("GET /healthz", async () => {
    const response = await fetch(`${base}/healthz`);
    assert.deepEqual(await response.json(), { status: "ok" });
  });
  test("HEAD /healthz has no body", async () => {
    const response = await fetch(`${base}/healthz`, { method: "HEAD" });
    assert.equal(response.status, 200);
    assert.equal((await response.arrayBuffer()).byteLength, 0);
  });
  test("GET /openapi.json serves the contract file", async () => {
    const response = await fetch(`${base}/openapi.json`);
    assert.deepEqual(await response.json(), JSON.parse(fs.readFileSync(new URL("../openapi.json", import.meta.url))));
  });
  test("an unknown path is a 404 problem", async () => {
    await problem(await fetch(`${base}/v1/nothing`), 404);
  });
  test("POST /v1/units is a 405", async () => {
    await problem(await fetch(`${base}/v1/units`, { method: "POST" }), 405);
  });
});
