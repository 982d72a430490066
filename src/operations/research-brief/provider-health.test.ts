import net from "node:net";
import { describe, expect, it } from "vitest";
import { ProviderHealth, tcpProbe } from "./provider-health.ts";

const search = { name: "wikipedia", url: "http://127.0.0.1:9/w/api.php" };

describe("ProviderHealth", () => {
  it("opens the circuit after three failures in a row, for 30 s, and closes it on a success", async () => {
    let clock = 1_000_000;
    let probes = 0;
    const health = new ProviderHealth({ now: () => clock, probe: async () => void probes++ });
    health.failed("wikipedia", "answered 500");
    health.failed("wikipedia", "answered 500");
    expect(await health.unavailable(search)).toBeUndefined();
    health.failed("wikipedia", "answered 503: busy\nstack");
    expect(await health.unavailable(search)).toBe(
      "wikipedia failed 3 times in a row (last: answered 503: busy)",
    );
    expect(health.status([search])[0]).toMatchObject({
      available: false,
      lastFailure: { reason: "answered 503: busy" },
    });
    clock += 30_000;
    expect(await health.unavailable(search)).toBeUndefined();
    health.succeeded("wikipedia");
    health.failed("wikipedia", "once");
    expect(await health.unavailable(search)).toBeUndefined();
    expect(probes).toBe(2); // once at first, once more when the 30 s answer had gone stale
  });

  it("probes reachability at most once per 30 s, and concurrent checks share one probe", async () => {
    let clock = 0;
    let probes = 0;
    const health = new ProviderHealth({
      now: () => clock,
      probe: async () => {
        probes++;
        throw new Error("connect ECONNREFUSED 127.0.0.1:9");
      },
    });
    const answers = await Promise.all([health.unavailable(search), health.unavailable(search)]);
    expect(answers).toEqual([
      "wikipedia is unreachable at 127.0.0.1:9 (connect ECONNREFUSED 127.0.0.1:9)",
      "wikipedia is unreachable at 127.0.0.1:9 (connect ECONNREFUSED 127.0.0.1:9)",
    ]);
    clock += 29_999;
    await health.unavailable(search);
    expect(probes).toBe(1);
    clock += 1;
    await health.unavailable(search);
    expect(probes).toBe(2);
  });

  it("the TCP probe connects to a listening port and is refused by a closed one, sending nothing", async () => {
    let received = 0;
    const server = net.createServer((socket) => socket.on("data", () => received++));
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    const { port } = server.address() as net.AddressInfo;
    try {
      await expect(tcpProbe(`http://127.0.0.1:${port}/search`, 2000)).resolves.toBeUndefined();
      const closed = await new Promise<number>((resolve) => {
        const other = net.createServer().listen(0, "127.0.0.1", () => {
          const free = (other.address() as net.AddressInfo).port;
          other.close(() => resolve(free));
        });
      });
      await expect(tcpProbe(`http://127.0.0.1:${closed}/`, 2000)).rejects.toThrow(/ECONNREFUSED/);
      expect(received).toBe(0);
    } finally {
      server.close();
    }
  });
});
