import { createHash, timingSafeEqual } from "node:crypto";
import type { FacilitatorClient } from "@x402/core/server";
import { Hono } from "hono";
import { z } from "zod";
import { invalidRequest, Problem, zodIssuesToFieldErrors } from "../../problem.ts";

const FacilitatorRequest = z.object({
  x402Version: z.literal(2),
  paymentPayload: z.looseObject({
    x402Version: z.literal(2),
    accepted: z.looseObject({}),
    payload: z.looseObject({}),
  }),
  paymentRequirements: z.looseObject({
    scheme: z.string(),
    network: z.string(),
    asset: z.string(),
    amount: z.string(),
    payTo: z.string(),
    maxTimeoutSeconds: z.number(),
    extra: z.record(z.string(), z.unknown()),
  }),
});

/**
 * The x402 facilitator HTTP interface (GET /supported, POST /verify, POST /settle) over a
 * facilitator client, so several API instances can share one settling key and nonce sequence.
 * Optionally guarded by a bearer token.
 */
export function buildFacilitatorApp(
  facilitator: FacilitatorClient,
  options: { authToken?: string } = {},
): Hono {
  const app = new Hono();
  if (options.authToken) {
    const expected = createHash("sha256").update(`Bearer ${options.authToken}`).digest();
    app.use("*", async (c, next) => {
      // Compared as digests in constant time: the token must not leak through response timing.
      const given = createHash("sha256")
        .update(c.req.header("authorization") ?? "")
        .digest();
      if (!timingSafeEqual(given, expected)) {
        throw Problem.of("unauthorized", "a valid facilitator bearer token is required");
      }
      await next();
    });
  }
  const parse = async (request: Request) => {
    let body: unknown;
    try {
      body = await request.json();
    } catch {
      throw invalidRequest([{ pointer: "", message: "the body is not valid JSON" }]);
    }
    const parsed = FacilitatorRequest.safeParse(body);
    if (!parsed.success) throw invalidRequest(zodIssuesToFieldErrors(parsed.error.issues));
    return parsed.data as unknown as {
      paymentPayload: Parameters<FacilitatorClient["verify"]>[0];
      paymentRequirements: Parameters<FacilitatorClient["verify"]>[1];
    };
  };
  app.get("/supported", async (c) => c.json(await facilitator.getSupported()));
  app.post("/verify", async (c) => {
    const { paymentPayload, paymentRequirements } = await parse(c.req.raw);
    return c.json(await facilitator.verify(paymentPayload, paymentRequirements));
  });
  app.post("/settle", async (c) => {
    const { paymentPayload, paymentRequirements } = await parse(c.req.raw);
    return c.json(await facilitator.settle(paymentPayload, paymentRequirements));
  });
  app.onError((error) => {
    const problem = error instanceof Problem ? error : Problem.of("facilitator-error", error.message);
    return new Response(JSON.stringify(problem.body()), {
      status: problem.status,
      headers: { "content-type": "application/problem+json" },
    });
  });
  return app;
}
