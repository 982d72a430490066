// The OpenAPI contract and the package promise what the service does.
import assert from "node:assert/strict";
import fs from "node:fs";
import path from "node:path";
import { describe, test } from "node:test";
import { route } from "../src/server.js";
import { Readable } from "node:stream";

const root = new URL("..", import.meta.url).pathname;
const contract = JSON.parse(fs.readFileSync(path.join(root, "openapi.json"), "utf8"));
const pkg = JSON.parse(fs.readFileSync(path.join(root, "package.json"), "utf8"));

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
  test("is OpenAPI 3.1 with the package's version", () => {
    assert.equal(contract.openapi, "3.1.0");
    assert.equal(contract.info.version, pkg.version);
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

describe("package", () => {
  test("has no dependencies at all", () => {
    assert.equal(pkg.dependencies, undefined);
    assert.equal(pkg.devDependencies, undefined);
  });
  test("imports nothing but node: built-ins and its own files", () => {
    const files = [];
    const walk = (dir) => {
      for (const entry of fs.readdirSync(dir, { withFileTypes: true })) {
        const full = path.join(dir, entry.name);
        if (entry.isDirectory()) walk(full);
        else if (entry.name.endsWith(".js")) files.push(full);
      }
    };
    for (const dir of ["src", "test"]) walk(path.join(root, dir));
    for (const file of files) {
      const source = fs.readFileSync(file, "utf8");
      for (const [, specifier] of source.matchAll(/^(?:import|export)\b[^;"]*?(?:from\s*|import\s*)"([^"]+)"/gm)) {
        assert.ok(specifier.startsWith(".") || specifier.startsWith("node:"), `${path.relative(root, file)} imports ${specifier}`);
      }
    }
  });
  test("the Dockerfile runs the tests and the server", () => {
    const dockerfile = fs.readFileSync(path.join(root, "Dockerfile"), "utf8");
    assert.match(dockerfile, /^FROM node:20/m);
    assert.match(dockerfile, /RUN node --test/);
    assert.match(dockerfile, /CMD \["node", "src\/server.js"\]/);
  });
  test("the MANIFEST lists every file with its digest", async () => {
    const manifest = JSON.parse(fs.readFileSync(path.join(root, "MANIFEST.json"), "utf8"));
    assert.equal(manifest.product, "engineering-unit-conversion-api");
    const { createHash } = await import("node:crypto");
    for (const file of manifest.files) {
      const data = fs.readFileSync(path.join(root, file.path));
      assert.equal(data.length, file.size, file.path);
      assert.equal(createHash("sha256").update(data).digest("hex"), file.sha256, file.path);
    }
  });
});
