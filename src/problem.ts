import type { z } from "zod";

/** One invalid field: a JSON Pointer (RFC 6901) into the request input and what is wrong with it. */
export interface FieldError {
  pointer: string;
  message: string;
}

export interface ProblemBody {
  type: string;
  title: string;
  status: number;
  detail: string;
  instance?: string;
  errors?: FieldError[];
  [extension: string]: unknown;
}

/** Problem types are URNs: stable identifiers that do not pretend to be fetchable pages. */
const PROBLEM_TYPE_BASE = "urn:utility402:problem:";

/**
 * Every problem type the service answers with (its URN is PROBLEM_TYPE_BASE + slug), with the status
 * and title each one always has (RFC 9457 §3.1.3: a title does not change from occurrence to
 * occurrence; the detail does). Closed: a Problem takes its slug from here, /openapi.json lists it,
 * src/problem.test.ts checks every place that builds a Problem against it.
 */
export const PROBLEM_TYPES = {
  "invalid-request": { status: 400, title: "Invalid request" },
  unauthorized: { status: 401, title: "Unauthorized" },
  "sign-in-rejected": { status: 401, title: "Sign-in rejected" },
  "payment-required": { status: 402, title: "Payment required" },
  "sign-in-required": { status: 402, title: "Sign-in required" },
  "payment-rejected": { status: 402, title: "Payment rejected" },
  "not-the-payer": { status: 403, title: "Signed in with another wallet" },
  "not-found": { status: 404, title: "Not found" },
  "job-not-found": { status: 404, title: "Unknown job" },
  "method-not-allowed": { status: 405, title: "Method not allowed" },
  "payment-already-used": { status: 409, title: "Payment already used" },
  "payment-in-progress": { status: 409, title: "Payment in progress" },
  "body-too-large": { status: 413, title: "Request body too large" },
  "range-not-satisfiable": { status: 416, title: "Range not satisfiable" },
  "time-limit": { status: 422, title: "Time limit exceeded" },
  "memory-limit": { status: 422, title: "Memory limit exceeded" },
  "audit-time-limit": { status: 422, title: "Audit time limit exceeded" },
  "audit-memory-limit": { status: 422, title: "Audit memory limit exceeded" },
  "too-many-requests": { status: 429, title: "Too many requests" },
  "too-many-held-payments": { status: 429, title: "Too many jobs running for this payer" },
  "internal-error": { status: 500, title: "Internal error" },
  "worker-failed": { status: 500, title: "Internal error" },
  "audit-failed": { status: 500, title: "Audit failed" },
  "diff-check-failed": { status: 500, title: "Diff check failed" },
  "result-lost": { status: 500, title: "Result lost" },
  "not-implemented": { status: 501, title: "Not available yet" },
  "chain-unavailable": { status: 502, title: "Chain RPC unavailable" },
  "quoter-failed": { status: 502, title: "Quoter failed" },
  "upstream-unavailable": { status: 502, title: "Official notice upstream unavailable" },
  "facilitator-error": { status: 502, title: "Facilitator error" },
  "payments-unavailable": { status: 503, title: "Payments temporarily unavailable" },
  "store-unavailable": { status: 503, title: "Temporarily unavailable" },
  "too-many-connections": { status: 503, title: "Too many connections" },
  "chain-not-configured": { status: 503, title: "No chain RPC" },
  "dataset-unavailable": { status: 503, title: "Dataset not loaded" },
  "release-unavailable": { status: 503, title: "Release temporarily unavailable" },
  "research-unavailable": { status: 503, title: "Research worker unavailable" },
  "worker-busy": { status: 503, title: "Workers busy" },
  "worker-unavailable": { status: 503, title: "Temporarily unavailable" },
  "audit-busy": { status: 503, title: "Audit workers busy" },
  "audit-unavailable": { status: 503, title: "Audit unavailable" },
} as const satisfies Record<string, { status: number; title: string }>;

export type ProblemType = keyof typeof PROBLEM_TYPES;

/** The catalogue as /openapi.json lists it: each type's URN, status and title. */
export const problemTypeList = () =>
  Object.entries(PROBLEM_TYPES).map(([slug, { status, title }]) => ({
    type: PROBLEM_TYPE_BASE + slug,
    status,
    title,
  }));

export interface ProblemOptions {
  errors?: FieldError[];
  headers?: Record<string, string>;
  extensions?: Record<string, unknown>;
}

/**
 * An RFC 9457 problem. Thrown anywhere in a request (validation, payment, operation) and
 * rendered as application/problem+json by the app's error handler.
 */
export class Problem extends Error {
  readonly headers: Record<string, string>;
  readonly extensions: Record<string, unknown>;

  constructor(
    readonly status: number,
    readonly slug: ProblemType,
    readonly title: string,
    readonly detail: string,
    options: ProblemOptions = {},
  ) {
    super(detail);
    this.headers = options.headers ?? {};
    this.extensions = { ...(options.errors ? { errors: options.errors } : {}), ...options.extensions };
  }

  /** A problem of a catalogued type: its status and title come from PROBLEM_TYPES. */
  static of(slug: ProblemType, detail: string, options?: ProblemOptions): Problem {
    const { status, title } = PROBLEM_TYPES[slug];
    return new Problem(status, slug, title, detail, options);
  }

  /** The whole HTTP answer: status, problem+json content type with this problem's headers, body. */
  toResponse(instance?: string): { status: number; headers: Record<string, string>; body: string } {
    return {
      status: this.status,
      headers: { "content-type": "application/problem+json", ...this.headers },
      body: JSON.stringify(this.body(instance)),
    };
  }

  body(instance?: string): ProblemBody {
    return {
      type: PROBLEM_TYPE_BASE + this.slug,
      title: this.title,
      status: this.status,
      detail: this.detail,
      ...(instance ? { instance } : {}),
      ...this.extensions,
    };
  }
}

export const escapePointerToken = (token: string | number) =>
  String(token).replaceAll("~", "~0").replaceAll("/", "~1");

export const toPointer = (path: ReadonlyArray<PropertyKey>) =>
  path.map((token) => `/${escapePointerToken(String(token))}`).join("");

export function invalidRequest(errors: FieldError[], detail?: string): Problem {
  return Problem.of(
    "invalid-request",
    detail ?? errors.map((e) => `${e.pointer || "(body)"}: ${e.message}`).join("; "),
    { errors },
  );
}

/** Maps zod issues to field errors; unrecognized keys are reported one pointer per key. */
export function zodIssuesToFieldErrors(issues: z.core.$ZodIssue[]): FieldError[] {
  const errors: FieldError[] = [];
  for (const issue of issues) {
    if (issue.code === "unrecognized_keys") {
      for (const key of issue.keys) {
        errors.push({ pointer: toPointer([...issue.path, key]), message: "unknown property (not allowed)" });
      }
    } else if (issue.code === "invalid_union" && issue.errors.some((branch) => deepest(branch) > 0)) {
      // A branch that got past the top level explains the failure better than "no branch matched";
      // its issue paths are relative to the union.
      const best = issue.errors.reduce((a, b) => (deepest(b) > deepest(a) ? b : a));
      errors.push(
        ...zodIssuesToFieldErrors(best).map((error) => ({
          ...error,
          pointer: toPointer(issue.path) + error.pointer,
        })),
      );
    } else {
      errors.push({ pointer: toPointer(issue.path), message: issue.message });
    }
  }
  return errors;
}

const deepest = (issues: z.core.$ZodIssue[]) => Math.max(0, ...issues.map((i) => i.path.length));
