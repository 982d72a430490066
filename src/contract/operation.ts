/**
 * The contract every operation implements: what it is (path, price, kind, schemas) and what it answers.
 * A leaf: it imports no module of the service, so every operation folder, and every room above them,
 * may depend on it. What a running service hands an operation at start is the service's own type
 * (src/operation-environment.ts); the contract only passes it through (`Env` of `start`).
 */
import type { Logger } from "pino";
import type { z } from "zod";

export type OperationKind = "sync" | "async" | "product";

export interface OperationContext {
  requestId: string;
  log: Logger;
  now: () => Date;
  /** The ledger key of the payment this call is made under (absent outside the paid pipeline). */
  paymentKey?: string;
  /** Who pays for this call (lower-case address; absent outside the paid pipeline): whose fair share it uses. */
  payer?: string;
}

/** What a job is doing (shown to the client polling it). */
export interface JobProgress {
  /** What the job is doing now, e.g. "searching", "reading sources". */
  stage: string;
  /** 0 to 1, when known. */
  fraction?: number;
}

/** What an async operation's job is given when a worker runs it (the worker's JobContext carries more). */
export interface JobRun {
  log: Logger;
  /** Aborted when the worker lost the job's lease (another worker has it now) or is stopping. */
  signal: AbortSignal;
  /** Records what the job is doing (shown to the client polling it) and renews the lease. */
  progress(progress: JobProgress): Promise<void>;
}

/** Runs one job of an async operation; resolves with the result, throws JobFailure (or anything) to fail it. */
export type RunJob = (input: unknown, run: JobRun) => Promise<unknown>;

/** A release file a paid download streams; its bytes never pass through the store. */
export interface FileBody {
  path: string;
  size: number;
  /** Hex sha256 of the whole file: its ETag. */
  sha256: string;
}

/** An operation bound to a running service: its handler and what it holds. */
export interface StartedOperation<I = unknown, O = unknown> {
  handle(input: I, ctx: OperationContext): Promise<OperationResult<O>>;
  /** Facts the catalog shows about this operation as started (dataset totals, a release's size and digest). */
  catalogDetails?: Record<string, unknown>;
  /**
   * What the operation says of itself as started, over its definition's summary and description (e.g.
   * the dataset it loaded): the 402 terms, /openapi.json, /catalog.json, /.well-known/x402 and the
   * agent skills are built from it.
   */
  describe?: { summary?: string; description?: string };
  /** False when the operation cannot serve now (e.g. no release built); the catalog says so. */
  available?: boolean;
  /**
   * Why the operation is refusing work right now (an upstream known to be down), without any I/O; the
   * catalog is served with `available: false` and this as `unavailable` while it says so.
   */
  unavailableNow?(): string | undefined;
  /** A /readyz line for what the operation depends on; throws when it is not ready. */
  probe?(): Promise<string>;
  /** Releases what it holds when the service stops. */
  close?(): Promise<void>;
  /**
   * Async operations: throws a 503 Problem when the work cannot be taken now (no live worker, no
   * provider), so the call is refused before any payment is asked for or taken.
   */
  admit?(): Promise<void>;
  /**
   * Async operations: the payment under which handle() recorded a job is held (queue the job) or ended
   * before it was held (released, failed: drop the job). Idempotent.
   */
  paymentFinal?(paymentKey: string, state: "held" | "released" | "failed"): Promise<void>;
  /** Async operations: runs one job of this operation in a worker (see src/jobs/worker.ts). */
  jobHandler?: RunJob;
}

/** What an operation answers on success; any failure is a thrown Problem. */
export interface OperationResult<O> {
  status?: 200 | 201 | 202;
  /** Extra response headers kept with the answer (Location of a queued job, a download's Content-Disposition). */
  headers?: Record<string, string>;
  body: O;
  /**
   * The JSON body already written (by a worker thread, or keeping number lexemes exactly as the
   * request gave them); sent as it is instead of `JSON.stringify(body)`.
   */
  bodyText?: string;
  /** A download: the response body is this file, streamed by the app (`body` is ignored). */
  file?: FileBody;
}

export interface JsonBodyLimits {
  maxDepth?: number;
  /** JSON.parse keeps the last of duplicate keys silently; reject such a body instead. */
  rejectDuplicateKeys?: boolean;
  /**
   * At most about this many values outside strings (counted as commas and opening brackets), checked
   * before JSON.parse: parsing many small values is what keeps the event loop busy, not long strings.
   */
  maxValues?: number;
}

/**
 * A request body as a door hands it to an operation's reader: its text when the door read it as text
 * (http/read-input.ts reads a body of a declared length up to INLINE_JSON_BODY_BYTES so; the MCP door has
 * its arguments as text), else its bytes (a large or chunked body, which the reader may hand to a worker
 * thread). Text for the common small body: copying a socket chunk into an ArrayBuffer of its own was the
 * dearest single step of an unpaid csv-cleanup 402.
 */
export type RequestBody = string | Uint8Array;

/** What an operation's own body reader is given besides the body. */
export interface BodyRequest {
  /** The Content-Type header as sent (absent: undefined). */
  contentType: string | undefined;
  /** The query string's parameters (a body may take its options there, e.g. a CSV body). */
  query: Record<string, string[]>;
}

export interface ErrorResponseDoc {
  status: number;
  description: string;
}

/**
 * One paid operation, declared once. Routes, 402 terms, /openapi.json, /catalog.json,
 * /.well-known/x402, the agent-skills index and the Bazaar extension all derive from this.
 */
export interface OperationDefinition<I = unknown, O = unknown, Env = unknown> {
  id: string;
  method: "GET" | "POST";
  path: `/v1/${string}`;
  /** Decimal US dollars as written in SPEC.md, e.g. "0.15"; the atomic amount is derived. */
  priceUsd: string;
  kind: OperationKind;
  summary: string;
  description: string;
  tags: readonly string[];
  /** Where the input comes from: the JSON body (POST) or the query string (GET), or nothing (products). */
  inputFrom: "body" | "query" | "none";
  /** Validated before any payment; for "none" an empty strict object. */
  input: z.ZodType<I>;
  /** Whether a POST body may be omitted (then validated as {}). */
  bodyOptional?: boolean;
  maxBodyBytes?: number;
  /**
   * Structural limits of a JSON body, checked right after it parses and before the schema (so
   * before any payment): a 400 with the pointer of the first container nested deeper than
   * `maxDepth` (the body itself is level 1), or of the first key an object names twice.
   */
  json?: JsonBodyLimits;
  /**
   * Reads the body itself instead of the JSON reader (another content type, numbers kept exactly, work
   * moved off the main thread): given the body (within maxBodyBytes; its text or its bytes, see
   * RequestBody), it returns the validated input or throws a Problem, before any payment.
   */
  readBody?: (body: RequestBody, request: BodyRequest) => Promise<I>;
  /** For the documents: request bodies readBody takes besides application/json (content type → schema). */
  otherBodies?: Record<string, { schema: z.ZodType; example?: unknown }>;
  /** For the documents: query parameters that go with a body (e.g. a CSV body's options). */
  bodyQuery?: z.ZodObject;
  output: z.ZodType<O>;
  /** Async operations: the `result` of a succeeded job (GET /v1/jobs/{id}), for the documents. */
  jobResult?: z.ZodType;
  outputContentType: "application/json" | "application/zip";
  /**
   * `briefInput`: a smaller valid input for the compact discovery extension (the 402's PAYMENT-REQUIRED
   * header, an MCP tool's terms) when `input` is too large to carry there; `input` otherwise.
   */
  example: { input?: unknown; output?: unknown; briefInput?: unknown };
  /** Statuses beyond 400/402/413 that this operation can answer. */
  errorResponses: readonly ErrorResponseDoc[];
  /** Releases what the operation holds (worker threads, pools) when the service stops. */
  close?: () => Promise<void>;
  /**
   * A pure handler of the validated input. An operation that needs the service's settings or
   * clients declares `start` instead. With neither, the route answers 501 and never asks for payment.
   */
  handler?: (input: I, ctx: OperationContext) => Promise<OperationResult<O>>;
  /**
   * Binds the operation to the running service once, at start, given the service's environment
   * (OperationEnvironment of src/operation-environment.ts; the registry checks that every `start` takes it).
   */
  start?: (env: Env) => Promise<StartedOperation<I, O>>;
}

export function defineOperation<I, O, Env = unknown>(
  definition: OperationDefinition<I, O, Env>,
): OperationDefinition<I, O, Env> {
  return definition;
}

// biome-ignore lint/suspicious/noExplicitAny: the registry holds operations of every input/output type and environment.
export type AnyOperation = OperationDefinition<any, any, any>;

/** A free, read-only GET route that belongs to an operation (e.g. the unit list agents read before paying). */
export interface FreeRouteDefinition<O = unknown> {
  id: string;
  path: `/v1/${string}`;
  summary: string;
  description: string;
  tags: readonly string[];
  output: z.ZodType<O>;
  handler: () => O | Promise<O>;
}

export function defineFreeRoute<O>(definition: FreeRouteDefinition<O>): FreeRouteDefinition<O> {
  return definition;
}

// biome-ignore lint/suspicious/noExplicitAny: the registry holds free routes of every output type.
export type AnyFreeRoute = FreeRouteDefinition<any>;
