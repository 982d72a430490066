import fs from "node:fs";
import net from "node:net";
import { afterEach, describe, expect, it } from "vitest";
import { defineOperation } from "../src/contract/operation.ts";
import { csvCleanup } from "../src/operations/csv-cleanup/index.ts";
import { freePort, startTestService } from "./helpers/service.ts";

/** An operation whose close fails (a pool already gone): what was opened before it must still be closed. */
const closesBadly = defineOperation({
  ...csvCleanup,
  id: "test-closes-badly",
  path: "/v1/test-closes-badly",
  close: async () => {
    throw new Error("the pool was already gone");
  },
});

/** Whether something accepts connections on 127.0.0.1:port. */
const listening = (port: number) =>
  new Promise<boolean>((resolve) => {
    const socket = net.connect(port, "127.0.0.1");
    socket.once("connect", () => {
      socket.destroy();
      resolve(true);
    });
    socket.once("error", () => resolve(false));
  });

const blockers: net.Server[] = [];
afterEach(async () => {
  await Promise.all(blockers.splice(0).map((server) => new Promise((resolve) => server.close(resolve))));
});

describe("the service's shutdown stack", () => {
  it("stop(): an operation whose close fails does not keep the local chain running; stop() fails with its error", async () => {
    const chainPort = await freePort();
    const service = await startTestService(
      { LOCAL_CHAIN_PORT: String(chainPort) },
      { operations: [csvCleanup, closesBadly] },
    );
    try {
      expect(await listening(chainPort)).toBe(true);
      await expect(service.stop()).rejects.toThrow("the pool was already gone");
      // The chain was started before the operations: it is stopped after them, whatever they did.
      expect(await listening(chainPort)).toBe(false);
      expect(await listening(Number(new URL(service.url).port))).toBe(false);
    } finally {
      fs.rmSync(service.dataDir, { recursive: true, force: true });
    }
  });

  it("a start that fails halfway closes what it opened and fails with its own error, not a closer's", async () => {
    const chainPort = await freePort();
    // The health listener opens late (after the chain, the operations and the payments): its port is taken.
    const blocker = net.createServer();
    await new Promise<void>((resolve) => blocker.listen(0, "127.0.0.1", resolve));
    blockers.push(blocker);
    const healthPort = (blocker.address() as net.AddressInfo).port;
    await expect(
      startTestService(
        { LOCAL_CHAIN_PORT: String(chainPort), HEALTH_PORT: String(healthPort) },
        { operations: [csvCleanup, closesBadly] },
      ),
    ).rejects.toThrow(`HEALTH_PORT: 127.0.0.1:${healthPort} is already in use`);
    expect(await listening(chainPort)).toBe(false);
  });
});
