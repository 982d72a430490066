import { z } from "zod";

/** A JSON-body operation's fields for reader tests (`{ doc }` input); a test adds its id, path and limits. */
export const BODY_OPERATION = {
  method: "POST",
  priceUsd: "0.01",
  kind: "sync",
  summary: "test",
  description: "test",
  tags: [],
  inputFrom: "body",
  input: z.object({ doc: z.unknown() }),
  output: z.unknown(),
  outputContentType: "application/json",
  example: {},
  errorResponses: [],
} as const;
