// The OpenAPI contract and the package promise what the service does.
import assert from "node:assert/strict";
import { Readable } from "node:stream";
import { describe, test } from "node:test";
import { route } from "../src/server.js";

// The contract as the service serves it: these tests check behaviour, never the bytes of a file, so
// editing the README, the Dockerfile or package.json cannot make them fail.
const contract = JSON.parse((await route(request("GET", "/openapi.json"))).body.toString("utf8"));

/** A request object as node:http hands it to the server. */
function request(method, url, body) {
  const stream = Readable.from(body === undefined ? [] : [Buffer.from(JSON.stringify(body))]);
  return Object.assign(stream, { method, url, headers: { "content-type": "application/json" } });
}

/** Checks a value against the JSON Schema subset the contract uses. */
function conforms(schema, value, where = "") {
  if (schema.anyOf || schema.oneOf) {
    const branches = schema.anyOf ?? schema.oneOf;
    assert.ok(branches.some((branch) => { try { conforms(branch, value, where); return true; } catch { return false; } }), `${where}: no branch matches`);
    return;
  }
  if (schema.const !== undefined) assert.equal(value, schema.const, where);
  if (schema.enum) assert.ok(schema.enum.includes(value), `${where}: ${value} not in enum`);
  const type = schema.type;
  if (type === "object") {
    assert.equal(typeof value, "object", where);
    for (const key of schema.required ?? []) assert.ok(key in value, `${where}/${key} is required`);
    for (const [key, child] of Object.entries(value)) {
      const property = schema.properties?.[key];
      if (property) conforms(property, child, `${where}/${key}`);
      else assert.notEqual(schema.additionalProperties, false, `${where}/${key} is not in the contract`);
    }
  } else if (type === "array") {
    assert.ok(Array.isArray(value), where);
    value.forEach((item, i) => conforms(schema.items, item, `${where}/${i}`));
  } else if (type === "integer") {
    assert.ok(Number.isInteger(value), where);
  } else if (type) {
    assert.equal(typeof value, type, where);
  }
}

describe("OpenAPI contract", () => {
  test("is OpenAPI 3.1 with a version", () => {
    assert.equal(contract.openapi, "3.1.0");
    assert.match(contract.info.version, /^\d+\.\d+\.\d+/);
  });
  test("speaks as the buyer's own service: no price, no payment words", () => {
    const text = JSON.stringify(contract);
    for (const words of [/never charged/i, /\(free\)/i, /\bcharged\b/i, /\bpaying\b/i, /\bpaid\b/i, /x402/i]) {
      assert.doesNotMatch(text, words);
    }
  });
  test("describes exactly the routes the server answers", () => {
    assert.deepEqual(Object.keys(contract.paths).sort(), ["/healthz", "/openapi.json", "/v1/unit-convert", "/v1/units"]);
  });
  test("every operation has an operationId and a 2xx response", () => {
    for (const [p, item] of Object.entries(contract.paths)) {
      for (const [method, operation] of Object.entries(item)) {
        assert.ok(operation.operationId, `${method} ${p}`);
        assert.ok(Object.keys(operation.responses).some((status) => status.startsWith("2")), `${method} ${p}`);
      }
    }
  });
  test("the request example is answered with the response example", async () => {
    const post = contract.paths["/v1/unit-convert"].post;
    const answer = await route(request("POST", "/v1/unit-convert", post.requestBody.content["application/json"].example));
    assert.deepEqual(JSON.parse(answer.body), post.responses["200"].content["application/json"].example);
  });
  test("a single answer conforms to the response schema", async () => {
    const schema = contract.paths["/v1/unit-convert"].post.responses["200"].content["application/json"].schema;
    const answer = await route(request("POST", "/v1/unit-convert", { value: 3, from: "hp", to: "kW" }));
    conforms(schema, JSON.parse(answer.body));
  });
  test("a batch answer conforms to the response schema", async () => {
    const schema = contract.paths["/v1/unit-convert"].post.responses["200"].content["application/json"].schema;
    const answer = await route(request("POST", "/v1/unit-convert", { conversions: [{ value: 3, from: "hp", to: "kW" }] }));
    conforms(schema, JSON.parse(answer.body));
  });
  test("the unit list conforms to its schema", async () => {
    const schema = contract.paths["/v1/units"].get.responses["200"].content["application/json"].schema;
    const answer = await route(request("GET", "/v1/units"));
    conforms(schema, JSON.parse(answer.body));
  });
  test("the request schema refuses unknown properties, as the service does", () => {
    const schema = contract.paths["/v1/unit-convert"].post.requestBody.content["application/json"].schema;
    const branches = schema.anyOf ?? schema.oneOf;
    assert.ok(branches.every((branch) => branch.additionalProperties === false));
  });
});
