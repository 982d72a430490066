#!/usr/bin/env node
// Standalone engineering unit conversion service: node:http, no runtime dependencies.
// The conversion logic under src/operations/ is generated from utility402's paid unit-convert
// operation, so both give the same answers and the same 400s.
import fs from "node:fs";
import http from "node:http";
import { fileURLToPath } from "node:url";
import { convertRequest, unitList } from "./operations/unit-convert/index.js";
import { UnitConvertRequest } from "./operations/unit-convert/schema.js";
import { invalidRequest, Problem, zodIssuesToFieldErrors } from "./problem.js";

export const MAX_BODY_BYTES = 1024 * 1024;
const CONTRACT = fs.readFileSync(new URL("../openapi.json", import.meta.url));
const UNITS = Buffer.from(JSON.stringify(unitList()));
const ROUTES = {
  "/v1/unit-convert": ["POST"],
  "/v1/units": ["GET", "HEAD"],
  "/healthz": ["GET", "HEAD"],
  "/openapi.json": ["GET", "HEAD"],
};

/** Reads the body up to the limit; a 413 Problem beyond it. */
async function readBody(request) {
  const declared = Number(request.headers["content-length"] ?? "0");
  const tooLarge = () =>
    new Problem(413, "body-too-large", "Request body too large", `the request body exceeds ${MAX_BODY_BYTES} bytes`);
  if (declared > MAX_BODY_BYTES) throw tooLarge();
  const chunks = [];
  let size = 0;
  for await (const chunk of request) {
    size += chunk.length;
    if (size > MAX_BODY_BYTES) throw tooLarge();
    chunks.push(chunk);
  }
  return Buffer.concat(chunks).toString("utf8");
}

/** POST /v1/unit-convert: the same validation (before anything else) and the same answer as the paid operation. */
async function unitConvert(request) {
  const type = request.headers["content-type"] ?? "";
  if (!/^application\/json\s*(;|$)/i.test(type)) {
    throw new Problem(415, "unsupported-media-type", "Unsupported media type", "send the body as application/json");
  }
  const text = await readBody(request);
  if (text.trim() === "") throw invalidRequest([{ pointer: "", message: "a JSON request body is required" }]);
  let body;
  try {
    body = JSON.parse(text);
  } catch (error) {
    throw invalidRequest([{ pointer: "", message: `the body is not valid JSON: ${error.message}` }]);
  }
  const parsed = UnitConvertRequest.safeParse(body);
  if (!parsed.success) throw invalidRequest(zodIssuesToFieldErrors(parsed.error.issues));
  return { status: 200, type: "application/json", body: Buffer.from(JSON.stringify(convertRequest(parsed.data))) };
}

/** Answers one request: { status, type, body, headers? }. */
export async function route(request) {
  const path = new URL(request.url ?? "/", "http://localhost").pathname;
  const methods = ROUTES[path];
  if (!methods) throw new Problem(404, "not-found", "Not found", `nothing at ${path}`);
  if (!methods.includes(request.method ?? "")) {
    throw new Problem(405, "method-not-allowed", "Method not allowed", `${path} accepts ${methods.join(", ")}`, {
      headers: { allow: methods.join(", ") },
    });
  }
  if (path === "/v1/unit-convert") return unitConvert(request);
  if (path === "/v1/units") return { status: 200, type: "application/json", body: UNITS };
  if (path === "/openapi.json") return { status: 200, type: "application/json", body: CONTRACT };
  return { status: 200, type: "application/json", body: Buffer.from('{"status":"ok"}') };
}

export function createServer() {
  return http.createServer(async (request, response) => {
    let answer;
    try {
      answer = await route(request);
    } catch (error) {
      const problem =
        error instanceof Problem
          ? error
          : new Problem(500, "internal-error", "Internal error", "the request failed unexpectedly");
      if (!(error instanceof Problem)) console.error(error);
      const { status, headers, body } = problem.toResponse(new URL(request.url ?? "/", "http://localhost").pathname);
      answer = { status, type: headers["content-type"], body: Buffer.from(body), headers };
      // A body that was not read (413 on a declared length) must not be parsed as the next request.
      if (status === 413) response.setHeader("connection", "close");
    }
    response.writeHead(answer.status, {
      ...answer.headers,
      "content-type": answer.type.includes("charset") ? answer.type : `${answer.type}; charset=utf-8`,
      "content-length": answer.body.length,
    });
    response.end(request.method === "HEAD" ? undefined : answer.body);
  });
}

// fileURLToPath, not URL.pathname: a folder with a space or a non-ASCII name must still match.
const isMain = process.argv[1] && fs.realpathSync(fileURLToPath(import.meta.url)) === fs.realpathSync(process.argv[1]);
if (isMain) {
  const port = Number(process.env.PORT ?? 8080);
  const host = process.env.HOST ?? "0.0.0.0";
  const server = createServer();
  server.listen(port, host, () => console.log(JSON.stringify({ msg: "listening", host, port })));
  const stop = () => server.close(() => process.exit(0));
  process.once("SIGTERM", stop);
  process.once("SIGINT", stop);
}
