import { defineOperation } from "../../catalog/operation.ts";
import { jsonDiff as diffDocuments } from "./json-diff.ts";
import { type JsonDiffInput, JsonDiffRequest, JsonDiffResponse, MAX_DOCUMENT_DEPTH } from "./schema.ts";

export const jsonDiff = defineOperation({
  id: "json-diff",
  method: "POST",
  path: "/v1/json-diff",
  priceUsd: "0.01",
  kind: "sync",
  summary: "Deterministic JSON diff with stable hashes",
  description:
    "Diffs two JSON documents into an RFC 6902 patch with RFC 6901 JSON Pointer paths and sha256 hashes " +
    "over the RFC 8785 canonical form. Arrays are compared by index, aligned by longest common subsequence, " +
    "or matched by a key member. The patch is applied to before and checked against after before answering.",
  tags: ["data"],
  inputFrom: "body",
  input: JsonDiffRequest,
  maxBodyBytes: 2 * 1024 * 1024,
  // The body wraps the documents in one object, so they may nest MAX_DOCUMENT_DEPTH levels each.
  json: { maxDepth: MAX_DOCUMENT_DEPTH + 1, rejectDuplicateKeys: true },
  output: JsonDiffResponse,
  outputContentType: "application/json",
  example: {
    input: {
      before: { name: "widget", tags: ["a", "b"], price: 10 },
      after: { name: "widget", tags: ["a", "c", "d"], price: 12.5, "unit/size": "kg" },
    },
    output: {
      equal: false,
      beforeHash: "sha256:6ddc0f9da808ba5029fb2f6c64507f118ce7dbcd01c187394b2addd1df5a507a",
      afterHash: "sha256:5f52807c21d1bcb09d185f1473091a399cabb27b9724dcf17f8e0238b99c1a93",
      patchHash: "sha256:0c7a33c5acede004c5fd7672f2c9c9dc7accc862f14fa13b622fd49f01bc3f3c",
      changes: [
        { op: "replace", path: "/price", value: 12.5, previous: 10 },
        { op: "replace", path: "/tags/1", value: "c", previous: "b" },
        { op: "add", path: "/tags/2", value: "d" },
        { op: "add", path: "/unit~1size", value: "kg" },
      ],
      patch: [
        { op: "replace", path: "/price", value: 12.5 },
        { op: "replace", path: "/tags/1", value: "c" },
        { op: "add", path: "/tags/2", value: "d" },
        { op: "add", path: "/unit~1size", value: "kg" },
      ],
      stats: { operations: 4, add: 2, remove: 0, replace: 2, move: 0, copy: 0, test: 0, returned: 4 },
      truncated: false,
    },
  },
  errorResponses: [],
  handler: async (input) => ({ body: diffDocuments(input as JsonDiffInput) }),
});
