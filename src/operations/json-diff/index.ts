import { type BodyRequest, defineOperation, type RequestBody } from "../../catalog/operation.ts";
import { bodyByteLength } from "../../input/parse-input.ts";
import {
  defaultPoolSize,
  OffThreadInput,
  serviceDeadlines,
  WorkerPool,
  workerModule,
} from "../worker-pool.ts";
import { jsonDiff as diffDocuments } from "./json-diff.ts";
import { JSON_DIFF_BODY_LIMITS, readJsonDiffRequest } from "./read-request.ts";
import { type JsonDiffInput, JsonDiffRequest, JsonDiffResponse } from "./schema.ts";
import type { JsonDiffTask, JsonDiffTaskResult } from "./worker.ts";

/** Room for a real pretty-printed package-lock.json pair (2 MiB was too little). */
export const JSON_DIFF_MAX_BODY_BYTES = 8 * 1024 * 1024;
/**
 * Bodies up to this size are read, checked and diffed on the main thread: parsing, the structure
 * scan, the schema and the request's hash together stay well under 50 ms of event loop for them
 * (bench/json-diff.bench.ts measures it). Larger ones go to a worker thread, before payment too.
 */
export const JSON_DIFF_INLINE_BYTES = 256 * 1024;

let pool: WorkerPool<JsonDiffTask, JsonDiffTaskResult> | undefined;

/** The service's json-diff workers, started on the first large body. */
export const jsonDiffPool = () => {
  pool ??= new WorkerPool<JsonDiffTask, JsonDiffTaskResult>({
    name: "json-diff",
    workerUrl: workerModule(import.meta.url, "./worker", "./worker-entry.mjs"),
    size: defaultPoolSize(),
    maxQueued: 16,
    ...serviceDeadlines({ timeLimitMs: 20_000, queueTimeoutMs: 20_000, startTimeoutMs: 30_000 }),
    maxMemoryMb: 768,
  });
  return pool;
};

async function closeJsonDiffPool(): Promise<void> {
  const closing = pool;
  pool = undefined;
  await closing?.close();
}

/** A small body: checked here. A large one: checked in a worker; the bytes wait for the paid call. */
async function readBody(body: RequestBody, request: BodyRequest) {
  if (bodyByteLength(body) <= JSON_DIFF_INLINE_BYTES) return readJsonDiffRequest(body);
  const checked = (await jsonDiffPool().run({ kind: "check", body })) as { digest: string };
  return new OffThreadInput(body, request.contentType, {}, checked.digest) as unknown as JsonDiffInput;
}

async function handle(input: JsonDiffInput | OffThreadInput) {
  if (!(input instanceof OffThreadInput)) return { body: diffDocuments(input) };
  const { bodyText } = (await jsonDiffPool().run({ kind: "diff", body: input.body })) as { bodyText: string };
  return { body: undefined as never, bodyText };
}

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
    "or matched by a key member, with move and copy where they shorten the patch and optional test operations " +
    "guarding old values. The patch is applied to before and checked against after before answering. Bodies up " +
    "to 8 MiB; a large one is parsed, checked and diffed in a worker thread.",
  tags: ["data"],
  inputFrom: "body",
  input: JsonDiffRequest,
  maxBodyBytes: JSON_DIFF_MAX_BODY_BYTES,
  json: JSON_DIFF_BODY_LIMITS,
  readBody,
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
  errorResponses: [
    {
      status: 422,
      description: "A large diff exceeded its worker's time or memory limit and was stopped. Never charged.",
    },
    { status: 503, description: "Every json-diff worker is busy; retry after Retry-After. Never charged." },
  ],
  handler: async (input) => handle(input as JsonDiffInput | OffThreadInput),
  close: closeJsonDiffPool,
});
