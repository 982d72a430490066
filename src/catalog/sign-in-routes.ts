import { SIGN_IN_HEADER } from "../payments/sign-in/sign-in-with-x.ts";
import type { AnyOperation } from "./operation.ts";
import { JOB_STATUS_PATH } from "./registry.ts";

/** The route that lists a signed-in wallet's research jobs (sign-in only: nothing is sold there). */
export const JOBS_LIST_PATH = "/v1/jobs";

/** A route where a wallet signs in (x402 sign-in-with-x) instead of paying, and what the signature gets it. */
export interface SignInRoute {
  method: "GET";
  path: string;
  grants: string;
}

/**
 * Every route that takes a SIGN-IN-WITH-X header: each product's download (free again for the wallet that
 * bought the release served), and the jobs of the wallet that paid for them. One list for /openapi.json,
 * /.well-known/x402, /llms.txt and the agent skills.
 */
export function signInRoutes(operations: readonly AnyOperation[]): SignInRoute[] {
  const products = operations
    .filter((operation) => operation.kind === "product")
    .map((operation) => ({
      method: "GET" as const,
      path: operation.path,
      grants: "the product again, without paying, for the wallet that bought the release served now",
    }));
  const hasJobs = operations.some((operation) => operation.kind === "async");
  return [
    ...products,
    ...(hasJobs
      ? [
          {
            method: "GET" as const,
            path: JOBS_LIST_PATH,
            grants: "the signed-in wallet's research jobs, newest first (how a lost job id is found again)",
          },
          {
            method: "GET" as const,
            path: JOB_STATUS_PATH,
            grants: "the job, only if the signed-in wallet paid for it (without a sign-in its id reads it)",
          },
        ]
      : []),
  ];
}

/** The sign-in in a few lines, for the documents agents read. */
export const SIGN_IN_GUIDANCE =
  `Sign in instead of paying again (x402 sign-in-with-x, CAIP-122): a product's 402 and the 402 of GET ${JOBS_LIST_PATH} ` +
  `carry extensions["sign-in-with-x"], a fresh challenge; sign it with the wallet that paid (EIP-191) and repeat the ` +
  `request with the ${SIGN_IN_HEADER} header (wrapFetchWithSIWx, or createSIWxClientExtension with @x402/fetch, from ` +
  "@x402/extensions/sign-in-with-x). A challenge is valid for 5 minutes and once; it costs nothing.";
