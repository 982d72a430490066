import { Hono } from "hono";
import { describe, expect, it } from "vitest";
import { openCors } from "./cors.ts";

const app = new Hono();
app.use(
  "*",
  openCors({ allowHeaders: ["content-type", "PAYMENT-SIGNATURE"], exposeHeaders: ["PAYMENT-REQUIRED"] }),
);
app.post("/paid", () => new Response("{}", { status: 402, headers: { "content-type": "application/json" } }));

describe("openCors", () => {
  it("answers a preflight with 204 and the allowed methods and headers", async () => {
    const response = await app.request("/paid", {
      method: "OPTIONS",
      headers: { origin: "https://agent.example", "access-control-request-method": "POST" },
    });
    expect(response.status).toBe(204);
    expect(response.headers.get("access-control-allow-origin")).toBe("*");
    expect(response.headers.get("access-control-allow-methods")).toContain("POST");
    expect(response.headers.get("access-control-allow-headers")).toBe("content-type,PAYMENT-SIGNATURE");
    expect(response.headers.get("access-control-expose-headers")).toBe("PAYMENT-REQUIRED");
  });

  it("adds the origin and exposed headers to the route's own response, keeping its status and body", async () => {
    const response = await app.request("/paid", {
      method: "POST",
      headers: { origin: "https://agent.example" },
    });
    expect(response.status).toBe(402);
    expect(response.headers.get("access-control-allow-origin")).toBe("*");
    expect(response.headers.get("access-control-expose-headers")).toBe("PAYMENT-REQUIRED");
    expect(response.headers.get("content-type")).toBe("application/json");
    expect(await response.text()).toBe("{}");
  });
});
