import { type BodyRequest, defineOperation, type RequestBody } from "../../catalog/operation.ts";
import { bodyByteLength } from "../../input/parse-input.ts";
import {
  defaultPoolSize,
  OffThreadInput,
  serviceDeadlines,
  WorkerPool,
  workerModule,
} from "../worker-pool.ts";
import {
  CSV_BODY_DOC,
  CSV_CLEANUP_JSON_LIMITS,
  CsvQuery,
  readCsvCleanupRequest,
  runCleanup,
} from "./read-request.ts";
import { type CsvCleanupInput, CsvCleanupRequest, CsvCleanupResponse } from "./schema.ts";
import type { CsvCleanupTask, CsvCleanupTaskResult } from "./worker.ts";

/**
 * Bodies up to this size are read, checked and cleaned on the main thread (a few ms); larger ones,
 * up to the 1 MiB body limit, in a worker thread, before payment too, so no body keeps the event
 * loop busy (parsing, the schema and the request's hash of a 1 MiB body of small cells cost ~160 ms).
 */
export const CSV_CLEANUP_INLINE_BYTES = 64 * 1024;

let pool: WorkerPool<CsvCleanupTask, CsvCleanupTaskResult> | undefined;

export const csvCleanupPool = () => {
  pool ??= new WorkerPool<CsvCleanupTask, CsvCleanupTaskResult>({
    name: "csv-cleanup",
    workerUrl: workerModule(import.meta.url, "./worker", "./worker-entry.mjs"),
    size: defaultPoolSize(),
    maxQueued: 32,
    ...serviceDeadlines({ timeLimitMs: 10_000, queueTimeoutMs: 20_000, startTimeoutMs: 30_000 }),
    maxMemoryMb: 256,
  });
  return pool;
};

async function closeCsvCleanupPool(): Promise<void> {
  const closing = pool;
  pool = undefined;
  await closing?.close();
}

async function readBody(body: RequestBody, { contentType, query }: BodyRequest) {
  if (bodyByteLength(body) <= CSV_CLEANUP_INLINE_BYTES)
    return readCsvCleanupRequest(body, contentType, query);
  const task = { kind: "check", body, contentType, query } as const;
  const { digest } = (await csvCleanupPool().run(task)) as { digest: string };
  return new OffThreadInput(body, contentType, query, digest) as unknown as CsvCleanupInput;
}

async function handle(input: CsvCleanupInput | OffThreadInput) {
  if (!(input instanceof OffThreadInput)) return runCleanup(input);
  const task = { kind: "run", body: input.body, contentType: input.contentType, query: input.query } as const;
  const { bodyText } = (await csvCleanupPool().run(task)) as { bodyText: string };
  return { body: undefined as never, bodyText };
}

export const csvCleanup = defineOperation({
  id: "csv-cleanup",
  method: "POST",
  path: "/v1/csv-cleanup",
  priceUsd: "2.00",
  kind: "sync",
  summary: "Clean and deduplicate CSV/JSON rows",
  description:
    "Normalises up to 500 rows into one rectangular table (union of columns, missing cells null), trims strings, " +
    "drops blank rows and removes duplicates on the key columns (first occurrence kept, input order preserved; " +
    "each dropped row says how it matched). Values are never changed: numbers come back exactly as written " +
    "(9007199254740993 stays 9007199254740993), case is folded only in key columns the caller names. The body is " +
    "JSON, or RFC 4180 CSV (text/csv) with the options in the query string.",
  tags: ["data"],
  inputFrom: "body",
  input: CsvCleanupRequest,
  json: CSV_CLEANUP_JSON_LIMITS,
  readBody,
  otherBodies: { "text/csv": CSV_BODY_DOC },
  bodyQuery: CsvQuery,
  output: CsvCleanupResponse,
  outputContentType: "application/json",
  example: {
    input: {
      rows: [
        { id: "A-1", name: " Ada Lovelace ", email: "ADA@example.org" },
        { id: "a-1", name: "Ada Lovelace", email: "ada@example.org" },
        { id: "", name: " ", email: null },
        { id: "B-2", name: "Grace Hopper" },
      ],
      keyColumns: ["id"],
    },
    output: {
      rows: [
        { id: "A-1", name: "Ada Lovelace", email: "ADA@example.org" },
        { id: "B-2", name: "Grace Hopper", email: null },
      ],
      columns: ["id", "name", "email"],
      keyColumns: ["id"],
      stats: { inputRows: 4, outputRows: 2, blankRowsDropped: 1, duplicatesDropped: 1, trimmedValues: 2 },
      duplicates: [
        { index: 1, duplicateOf: 0, match: "case-folded", differences: [{ column: "id", kind: "case" }] },
      ],
    },
  },
  errorResponses: [
    { status: 503, description: "Every csv-cleanup worker is busy; retry after Retry-After. Never charged." },
  ],
  handler: async (input) => handle(input as CsvCleanupInput | OffThreadInput),
  close: closeCsvCleanupPool,
});
