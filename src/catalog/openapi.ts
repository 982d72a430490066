import { createRoute, OpenAPIHono } from "@hono/zod-openapi";
import { z } from "zod";
import { MCP_PATH, mcpEndpoint } from "../mcp/endpoint.ts";
import { DOWNLOAD_TOKEN_HEADER } from "../payments/headers.ts";
import type { PublishedSigner } from "../payments/resource-server/offer-receipt.ts";
import type { PaymentTerms } from "../payments/resource-server/terms.ts";
import { SIGN_IN_HEADER } from "../payments/sign-in/sign-in-with-x.ts";
import { problemTypeList } from "../problem.ts";
import { FAVICON_PATH } from "./favicon.ts";
import { JobIdParam, JobRecordSchema } from "./jobs-schema.ts";
import { agentGuidance, LLMS_TXT_PATH } from "./llms-txt.ts";
import type { AnyFreeRoute, AnyOperation } from "./operation.ts";
import { isImplemented, JOB_STATUS_PATH } from "./registry.ts";
import { SERVICE, TAG_DESCRIPTIONS } from "./service.ts";
import { JOBS_LIST_PATH, signInRoutes } from "./sign-in-routes.ts";

const FieldErrorSchema = z.object({
  pointer: z.string().meta({ description: "JSON Pointer (RFC 6901) into the request input." }),
  message: z.string(),
});

const ProblemSchema = z
  .looseObject({
    type: z.enum(problemTypeList().map(({ type }) => type) as [string, ...string[]]).meta({
      description: "One of the service's problem types: x-problem-types gives each one's status and title.",
    }),
    title: z.string(),
    status: z.int(),
    detail: z.string(),
    errors: z.array(FieldErrorSchema).optional(),
  })
  .meta({ id: "Problem", description: "RFC 9457 problem details." });

const PaymentRequiredSchema = z
  .looseObject({
    type: z.string(),
    title: z.string(),
    status: z.literal(402),
    detail: z.string(),
    x402Version: z.literal(1),
    error: z.string(),
    resource: z.looseObject({
      url: z.string(),
      description: z.string().optional(),
      mimeType: z.string().optional(),
    }),
    accepts: z.array(
      z.looseObject({
        scheme: z.string(),
        network: z.string().meta({ description: 'The x402 v1 network name ("base" for eip155:8453).' }),
        maxAmountRequired: z.string(),
        amount: z.string().meta({ description: "The same atomic amount, as x402 v2 names it." }),
        resource: z.string(),
        description: z.string(),
        mimeType: z.string(),
        asset: z.string(),
        payTo: z.string(),
        maxTimeoutSeconds: z.int(),
        extra: z.record(z.string(), z.unknown()),
      }),
    ),
    extensions: z.record(z.string(), z.unknown()).optional(),
  })
  .meta({
    id: "PaymentRequired",
    description:
      "Problem details carrying the x402 v1 PaymentRequired object a v1 client (x402-fetch, x402-axios) pays " +
      "from with the X-PAYMENT header, each entry also with the v2 `amount`, and the v2 `resource` and " +
      "`extensions`. x402 v2 clients read the PAYMENT-REQUIRED header (the v2 PaymentRequired, with the " +
      "CAIP-2 network) and pay with PAYMENT-SIGNATURE.",
  });

/** What a product download reads besides its payment: the headers that resume it (docs/products.md, "Downloads in brief"). */
const DownloadRequestHeaders = z.object({
  Range: z
    .string()
    .optional()
    .meta({
      description:
        "Resume a download: `bytes=<first>-[<last>]`, sent with the same PAYMENT-SIGNATURE within the hour " +
        "(charged once; 206 with Content-Range, 416 beyond the end).",
      example: "bytes=1048576-",
    }),
  "If-Range": z
    .string()
    .optional()
    .meta({ description: "The ETag of the first answer: the range only if unchanged." }),
  [DOWNLOAD_TOKEN_HEADER]: z.string().optional().meta({
    description: "The download token of the first answer, which a resumed download sends back.",
  }),
  [SIGN_IN_HEADER]: z
    .string()
    .optional()
    .meta({
      description:
        "x402 sign-in-with-x (base64 JSON, CAIP-122): the 402's challenge signed by the wallet that bought the release " +
        "served now, sent instead of a payment to download it again for free (see /llms.txt).",
    }),
});

/** The SIGN-IN-WITH-X header of the job routes. */
const JobSignInHeaders = (grants: string) =>
  z.object({
    [SIGN_IN_HEADER]: z
      .string()
      .optional()
      .meta({
        description: `x402 sign-in-with-x (base64 JSON, CAIP-122), signed by the wallet that paid: ${grants}.`,
      }),
  });

const problem = (description: string) => ({
  description,
  content: { "application/problem+json": { schema: ProblemSchema } },
});

const header = (description: string) => ({ schema: { type: "string" as const }, description });

/**
 * x-payment-info in the profile indexers read (@agentcash/discovery, x402scan): the fixed USD price,
 * and the x402 terms (the 402's `accepts`, atomic amount included) for readers that do not call first.
 */
export function paymentInfo(operation: AnyOperation, terms: PaymentTerms) {
  const { scheme, network, asset, amount, payTo, maxTimeoutSeconds } = terms.requirements;
  return {
    price: { mode: "fixed", currency: "USD", amount: operation.priceUsd },
    protocols: [{ x402: { x402Version: 2, scheme, network, asset, amount, payTo, maxTimeoutSeconds } }],
  };
}

/** How a paid operation is paid: x402 is a payment, not an authentication, so its `security` is `[]`. */
const HOW_TO_PAY =
  "Paid with x402 v2: call without payment to get 402 with the PAYMENT-REQUIRED header (base64 JSON terms: exact " +
  "scheme, USDC on eip155:8453); sign an EIP-3009 authorization with any x402 client and repeat the call with " +
  "PAYMENT-SIGNATURE. The response carries PAYMENT-RESPONSE with the settlement transaction. x402 v1 clients " +
  'pay from the 402\'s JSON body (network "base") with X-PAYMENT and get X-PAYMENT-RESPONSE. Nothing is charged ' +
  "unless the call succeeds.";

/** /openapi.json (OpenAPI 3.1.0), generated from the registry by @hono/zod-openapi. */
export function buildOpenApiDocument(
  operations: readonly AnyOperation[],
  freeRoutes: readonly AnyFreeRoute[],
  termsById: ReadonlyMap<string, PaymentTerms>,
  baseUrl: string,
  signer?: PublishedSigner,
): Record<string, unknown> {
  const app = new OpenAPIHono();
  const registry = app.openAPIRegistry;
  // The routes that take a SIGN-IN-WITH-X header, and what it gets there.
  const signInGrants = new Map(signInRoutes(operations).map((route) => [route.path, route.grants]));
  const signsIn = (operation: AnyOperation) => operation.method === "GET" && signInGrants.has(operation.path);

  for (const operation of operations) {
    const terms = termsById.get(operation.id);
    if (!terms) throw new Error(`no payment terms for ${operation.id}`);
    const request =
      operation.inputFrom === "body"
        ? {
            body: {
              required: !operation.bodyOptional,
              content: {
                "application/json": { schema: operation.input, example: operation.example.input },
                ...operation.otherBodies,
              },
            },
            ...(operation.bodyQuery ? { query: operation.bodyQuery } : {}),
          }
        : operation.inputFrom === "query"
          ? { query: operation.input as z.ZodObject }
          : operation.kind === "product"
            ? { headers: DownloadRequestHeaders }
            : undefined;
    const success = operation.kind === "async" ? 202 : 200;
    const successContent =
      operation.outputContentType === "application/zip"
        ? { "application/zip": { schema: operation.output } }
        : {
            "application/json": {
              schema: operation.output,
              ...(operation.example.output !== undefined ? { example: operation.example.output } : {}),
            },
          };
    const responses: Record<number, unknown> = {
      [success]: {
        description:
          operation.kind === "async" ? "Accepted: the job is queued and paid for." : "Success (paid).",
        headers: {
          "PAYMENT-RESPONSE": header("base64 JSON settlement receipt: success, transaction, network, payer."),
          "X-PAYMENT-RESPONSE": header(
            "The same receipt for an x402 v1 payment (X-PAYMENT), network `base`.",
          ),
          ...(operation.kind === "async" ? { Location: header("The job's status URL (GET, free).") } : {}),
        },
        content: successContent,
      },
      400: problem("Invalid request: `errors` lists a JSON Pointer and a message per field. Never charged."),
      402: {
        description: "Payment required, or the payment presented was rejected (the reason is in `error`).",
        headers: { "PAYMENT-REQUIRED": header("base64 JSON x402 v2 PaymentRequired.") },
        content: { "application/problem+json": { schema: PaymentRequiredSchema } },
      },
      409: problem("This payment was already used for a different request, or is still being processed."),
      503: problem(
        "Payments (facilitator or chain) temporarily unavailable; retry after Retry-After. Never charged.",
      ),
    };
    if (operation.inputFrom === "body") responses[413] = problem("Request body too large. Never charged.");
    if (signsIn(operation)) {
      responses[401] = problem(
        "The SIGN-IN-WITH-X header is not accepted (forged, expired, replayed, another origin, route or chain); " +
          "`errors[].pointer` names the field of its decoded JSON. Never charged.",
      );
    }
    if (!isImplemented(operation))
      responses[501] = problem("Not available yet on this service. Never charged.");
    for (const extra of operation.errorResponses) responses[extra.status] = problem(extra.description);

    registry.registerPath({
      ...createRoute({
        method: operation.method.toLowerCase() as "get" | "post",
        path: operation.path,
        operationId: operation.id,
        summary: operation.summary,
        description: `${operation.description}\n\nPrice: USD ${operation.priceUsd} (${terms.requirements.amount} atomic USDC). ${HOW_TO_PAY}`,
        tags: [...operation.tags],
        security: [],
        ...(request ? { request } : {}),
        // biome-ignore lint/suspicious/noExplicitAny: response map built per status above.
        responses: responses as any,
      }),
      "x-payment-info": paymentInfo(operation, terms),
      // Its 402 carries a signed offer and its paid answer a signed receipt (offer-receipt.ts).
      ...(signer ? { "x-offer-receipt": signer } : {}),
      ...(signsIn(operation)
        ? { "x-sign-in-with-x": { header: SIGN_IN_HEADER, grants: signInGrants.get(operation.path) } }
        : {}),
    } as Parameters<typeof registry.registerPath>[0]);
  }

  for (const route of freeRoutes) {
    registry.registerPath(
      createRoute({
        method: "get",
        path: route.path,
        operationId: route.id,
        summary: route.summary,
        description: `${route.description}\n\nFree.`,
        tags: [...route.tags],
        security: [],
        responses: {
          200: { description: "Success (free).", content: { "application/json": { schema: route.output } } },
          "4XX": problem("Client error, e.g. 405 for a method other than GET."),
        },
      }),
    );
  }

  if (signInGrants.has(JOBS_LIST_PATH)) {
    registry.registerPath({
      ...createRoute({
        method: "get",
        path: JOBS_LIST_PATH,
        operationId: "list-my-jobs",
        summary: "List the research jobs of the wallet that signs in (free)",
        description:
          "Free, sign-in only: the 402 carries an x402 sign-in-with-x challenge and `accepts: []` (nothing to pay); " +
          "the request signed by a wallet lists the jobs that wallet paid for, newest first, each as GET " +
          `${JOB_STATUS_PATH} shows it. How a lost job id is found again: only the paying wallet can.`,
        tags: ["research"],
        security: [],
        request: { headers: JobSignInHeaders("lists its jobs") },
        responses: {
          200: {
            description: "The signed-in wallet and its jobs.",
            content: {
              "application/json": {
                schema: z.object({ payer: z.string(), jobs: z.array(jobSchema(operations)) }),
              },
            },
          },
          401: problem("The SIGN-IN-WITH-X header is not accepted; `errors[].pointer` names the field."),
          402: {
            description:
              'Sign in: the challenge is in the PAYMENT-REQUIRED header (`extensions["sign-in-with-x"]`).',
            headers: { "PAYMENT-REQUIRED": header("base64 JSON x402 v2 PaymentRequired, `accepts: []`.") },
            content: { "application/problem+json": { schema: PaymentRequiredSchema } },
          },
        },
      }),
      "x-sign-in-with-x": { header: SIGN_IN_HEADER, grants: signInGrants.get(JOBS_LIST_PATH) },
    } as Parameters<typeof registry.registerPath>[0]);
  }

  registry.registerPath(
    createRoute({
      method: "get",
      path: JOB_STATUS_PATH,
      operationId: "get-job",
      summary: "Read a job's state or its completed result (free)",
      description:
        "Free: knowing the job id is enough. Poll until the state is final. With a SIGN-IN-WITH-X header it " +
        "answers only the wallet that paid for the job (403 for another).",
      tags: ["research"],
      security: [],
      request: { params: z.object({ id: JobIdParam }), headers: JobSignInHeaders("reads its own job only") },
      responses: {
        200: {
          description: "The job.",
          headers: {
            "Retry-After": header("Seconds to wait before polling again, while the job is not finished."),
          },
          content: { "application/json": { schema: jobSchema(operations) } },
        },
        400: problem("The id is not a UUID."),
        401: problem("The SIGN-IN-WITH-X header is not accepted; `errors[].pointer` names the field."),
        403: problem("Signed in with a wallet that did not pay for this job; nothing is shown."),
        404: problem("Unknown job."),
      },
    }),
  );

  const llmsTxtUrl = baseUrl + LLMS_TXT_PATH;
  const document = app.getOpenAPI31Document({
    openapi: "3.1.0",
    info: {
      title: SERVICE.name,
      version: "1.0.0",
      description:
        `${SERVICE.description}\n\nMCP: the same operations are tools of the MCP server at ${baseUrl}${MCP_PATH} ` +
        "(Streamable HTTP), each paid per call through the same payment gate with the x402 MCP transport " +
        '(the PaymentPayload in params._meta["x402/payment"]); see x-mcp.',
      contact: { name: SERVICE.name, url: llmsTxtUrl },
      // SPDX LicenseRef for the service's own terms; openapi3-ts's type predates 3.1's `identifier`.
      license: { name: "Proprietary", identifier: "LicenseRef-utility402" } as { name: string },
      // Short guidance indexers inline in an agent's context (@agentcash/discovery reads info.x-guidance).
      "x-guidance": agentGuidance(baseUrl, signer),
      "x-logo": { url: baseUrl + FAVICON_PATH },
    },
    servers: [{ url: baseUrl }],
    tags: [...new Set(operations.flatMap((operation) => operation.tags))].map((name) => {
      const description = TAG_DESCRIPTIONS[name];
      if (!description) throw new Error(`tag "${name}" has no description in TAG_DESCRIPTIONS`);
      return { name, description };
    }),
  }) as unknown as Record<string, unknown>;
  // Where indexers look for the longer guidance: @agentcash/discovery's and x402scan's extensions.
  return {
    ...document,
    "x-agentcash-guidance": { llmsTxtUrl },
    "x-discovery": { llmsTxtUrl },
    "x-mcp": mcpEndpoint(operations, baseUrl),
    // The closed catalogue of problem types (src/problem.ts): every error this service answers with.
    "x-problem-types": problemTypeList(),
  };
}

/** The job record, with `result` described by the async operations' result schemas. */
function jobSchema(operations: readonly AnyOperation[]) {
  const results = operations.flatMap((operation) => (operation.jobResult ? [operation.jobResult] : []));
  if (results.length === 0) return JobRecordSchema;
  const result =
    results.length === 1 ? (results[0] as z.ZodType) : z.union(results as [z.ZodType, z.ZodType]);
  return JobRecordSchema.extend({ result: result.optional() }).meta({
    id: "Job",
    description: "A job: its state and, once succeeded, its result.",
  });
}
