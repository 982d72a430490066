import pino from "pino";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { loadConfig } from "../config.ts";
import { type HealthListener, startHealthListener } from "./health-listener.ts";

describe("the health listener (HEALTH_PORT)", () => {
  let listener: HealthListener;
  const asked: string[] = [];

  beforeAll(async () => {
    listener = await startHealthListener(
      (request) => {
        asked.push(new URL(request.url).pathname);
        return new Response("from the app");
      },
      { host: "127.0.0.1", port: 0, limits: loadConfig({}).http, log: pino({ level: "silent" }) },
    );
  });
  afterAll(() => listener?.close());

  it("hands /healthz, /readyz and /metrics to the app", async () => {
    for (const path of ["/healthz", "/readyz", "/metrics"]) {
      const response = await fetch(`http://127.0.0.1:${listener.port}${path}`);
      expect(response.status).toBe(200);
      expect(await response.text()).toBe("from the app");
    }
    expect(asked).toEqual(["/healthz", "/readyz", "/metrics"]);
  });

  it("serves nothing else: a paid route or a document is a 404 there, never reaching the app", async () => {
    for (const path of ["/v1/csv-cleanup", "/openapi.json", "/"]) {
      const response = await fetch(`http://127.0.0.1:${listener.port}${path}`, { method: "POST" });
      expect(response.status).toBe(404);
      expect(await response.text()).toContain("only /healthz, /readyz and /metrics");
    }
    expect(asked).toHaveLength(3);
  });
});
