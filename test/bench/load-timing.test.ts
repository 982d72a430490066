/**
 * The benchmarks' load runner times a run of a fixed number of requests (the paid runs) until its last
 * response. autocannon itself says "done" only at its next one-second sampling tick, so a paid run of
 * 7.1 s was reported as 8 s and calls per second came out up to a seventh low, in steps.
 */
import http from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, expect, it } from "vitest";
import { runLoad } from "../../bench/load/load.ts";

let server: http.Server;
let url: string;

beforeAll(async () => {
  server = http.createServer((request, response) => {
    request.resume();
    request.on("end", () => response.end("ok"));
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/`;
});

afterAll(async () => {
  await new Promise((resolve) => server.close(resolve));
});

it("a run of a fixed amount lasts until its last response, not until autocannon's next second", async () => {
  const headers = Array.from({ length: 40 }, (_, i) => `payment-${i}`);
  const result = await runLoad({
    targets: [url],
    connections: 4,
    method: "POST",
    body: "{}",
    paymentHeaders: headers,
  });
  expect(result.responses).toBe(40);
  expect(result.paymentsUsed).toBe(40);
  // 40 local answers take tens of milliseconds; autocannon's "done" comes at its first tick, 1 s after the start.
  expect(result.durationMs).toBeLessThan(1000);
  expect(result.perSecond).toBeCloseTo(40 / (result.durationMs / 1000), 6);
});
