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
 * An RFC 9457 problem. Thrown anywhere in a request (validation, payment, operation) and
 * rendered as application/problem+json by the app's error handler.
 */
export class Problem extends Error {
  readonly headers: Record<string, string>;
  readonly extensions: Record<string, unknown>;

  constructor(
    readonly status: number,
    readonly slug: string,
    readonly title: string,
    readonly detail: string,
    options: {
      errors?: FieldError[];
      headers?: Record<string, string>;
      extensions?: Record<string, unknown>;
    } = {},
  ) {
    super(detail);
    this.headers = options.headers ?? {};
    this.extensions = { ...(options.errors ? { errors: options.errors } : {}), ...options.extensions };
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
  return new Problem(
    400,
    "invalid-request",
    "Invalid request",
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
