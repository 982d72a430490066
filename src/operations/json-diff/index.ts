import { defineOperation } from "../../catalog/operation.ts";
import { JsonDiffRequest, JsonDiffResponse } from "./schema.ts";

export const jsonDiff = defineOperation({
  id: "json-diff",
  method: "POST",
  path: "/v1/json-diff",
  priceUsd: "0.01",
  kind: "sync",
  summary: "Deterministic JSON diff with stable hashes",
  description:
    "Diffs two JSON documents into an RFC 6902 patch with RFC 6901 JSON Pointer paths and sha256 hashes " +
    "over the RFC 8785 canonical form.",
  tags: ["data"],
  inputFrom: "body",
  input: JsonDiffRequest,
  maxBodyBytes: 2 * 1024 * 1024,
  output: JsonDiffResponse,
  outputContentType: "application/json",
  example: { input: { before: { a: 1 }, after: { a: 2 } } },
  errorResponses: [],
});
