/** The worst inputs of the hardening review (issue 16, findings 1 and 6), shared by its tests. */

/** An OpenAPI contract in YAML with `n` keys (85,000 keys: 1.09 MB, which held the event loop 68 s). */
export const keysYaml = (n: number) =>
  `openapi: 3.1.0\ninfo: {title: t, version: '1'}\npaths: {}\nx-data:\n${Array.from({ length: n }, (_, i) => `  k${i}: 1\n`).join("")}`;

/** 2^40 paths for a backtracking engine against `^(a+)+$`: hours, far beyond the audit's time limit. */
export const EVIL = `${"a".repeat(40)}!`;
/** A contract whose pattern backtracks catastrophically on its own example. */
export const catastrophic = (variant: number) => ({
  openapi: "3.1.0",
  info: { title: `ReDoS ${variant}`, version: "1.0.0" },
  paths: {
    "/names": {
      post: {
        operationId: `postName${variant}`,
        requestBody: {
          content: {
            "application/json": {
              schema: { type: "string", pattern: "^(a+)+$", example: EVIL },
              example: EVIL,
            },
          },
        },
        responses: { "200": { description: "OK" } },
      },
    },
  },
});
