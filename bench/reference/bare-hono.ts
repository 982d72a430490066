/**
 * Bare Hono on the same route, no payments: parses the JSON body and echoes it. The floor for the
 * unpaid 402 comparison. Environment: PORT. Run by bench/paid-path.bench.ts.
 */
import { serve } from "@hono/node-server";
import { Hono } from "hono";

const app = new Hono();
app.get("/healthz", (c) => c.json({ status: "ok" }));
app.post("/v1/csv-cleanup", async (c) => c.json(await c.req.json()));

const server = serve({ fetch: app.fetch, port: Number(process.env.PORT), hostname: "127.0.0.1" });
process.once("SIGTERM", () => server.close(() => process.exit(0)));
