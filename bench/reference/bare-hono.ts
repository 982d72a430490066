/**
 * Bare Hono on the same route, no payments: parses the JSON body and echoes it. The floor for the
 * unpaid 402 comparison. With STATIC_402_FILE (JSON { headers, body }: a 402 captured from
 * utility402), POST /static-402 parses the body the same way and answers with that 402 verbatim:
 * the floor for sending a 402 of that size. Environment: PORT. Run by bench/paid-path.bench.ts.
 */
import fs from "node:fs";
import { serve } from "@hono/node-server";
import { Hono } from "hono";

const app = new Hono();
app.get("/healthz", (c) => c.json({ status: "ok" }));
app.post("/v1/csv-cleanup", async (c) => c.json(await c.req.json()));
if (process.env.STATIC_402_FILE) {
  const captured = JSON.parse(fs.readFileSync(process.env.STATIC_402_FILE, "utf8")) as {
    headers: Record<string, string>;
    body: string;
  };
  app.post("/static-402", async (c) => {
    await c.req.json();
    return new Response(captured.body, { status: 402, headers: captured.headers });
  });
}

const server = serve({ fetch: app.fetch, port: Number(process.env.PORT), hostname: "127.0.0.1" });
process.once("SIGTERM", () => server.close(() => process.exit(0)));
