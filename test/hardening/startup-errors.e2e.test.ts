import fs from "node:fs";
import net from "node:net";
import os from "node:os";
import path from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { testDatabaseUrl } from "../helpers/postgres.ts";
import { spawnUtility402 } from "../helpers/processes.ts";
import { freePort } from "../helpers/service.ts";

/**
 * Finding 9 of issue 16: a start-up error (a PostgreSQL password problem) printed a stack trace. Every
 * configuration and connection error at start is one line on stderr naming the setting, exit code 1.
 */

const dirs: string[] = [];
const holders: net.Server[] = [];

afterAll(async () => {
  for (const dir of dirs) fs.rmSync(dir, { recursive: true, force: true });
  await Promise.all(holders.map((server) => new Promise((resolve) => server.close(resolve))));
});

/** Runs `utility402 serve` with `env` until it exits: its exit code and what it wrote to stderr. */
async function serveFails(env: Record<string, string>): Promise<{ code: number | null; stderr: string }> {
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), "utility402-startup-"));
  dirs.push(dataDir);
  const spawned = spawnUtility402(["serve"], {
    DATA_DIR: dataDir,
    LOCAL_CHAIN_STATE: "none",
    PORT: String(await freePort()),
    LOCAL_CHAIN_PORT: String(await freePort()),
    LOG_LEVEL: "info",
    ...env,
  });
  let stderr = "";
  spawned.child.stderr?.on("data", (chunk) => (stderr += chunk));
  const code = await new Promise<number | null>((resolve) => spawned.child.once("exit", resolve));
  return { code, stderr };
}

/** Exactly one line, naming the setting, no stack frames. */
function expectOneLine(stderr: string, pattern: RegExp) {
  const lines = stderr.trimEnd().split("\n");
  expect(lines, stderr).toHaveLength(1);
  expect(lines[0]).toMatch(pattern);
  expect(stderr).not.toMatch(/\n\s+at |node:internal|\.ts:\d+/);
}

const pgBase = testDatabaseUrl();

describe("start-up errors are one line naming the setting", () => {
  it.skipIf(!pgBase)(
    "a wrong PostgreSQL password",
    async () => {
      const url = new URL(pgBase as string);
      url.password = "not-the-password";
      const { code, stderr } = await serveFails({ DATABASE_URL: url.toString() });
      expect(code).toBe(1);
      expectOneLine(
        stderr,
        /^utility402: cannot start: DATABASE_URL: password authentication failed for user "[^"]+" \(PostgreSQL at [^)]+\)$/,
      );
      expect(stderr).not.toContain("not-the-password");
    },
    120_000,
  );

  it.skipIf(!pgBase)(
    "no password at all (pg's SASL message)",
    async () => {
      const url = new URL(pgBase as string);
      url.password = "";
      const { code, stderr } = await serveFails({ DATABASE_URL: url.toString() });
      expect(code).toBe(1);
      expectOneLine(stderr, /^utility402: cannot start: DATABASE_URL: no password in the URL/);
      expect(stderr).not.toContain("SASL");
    },
    120_000,
  );

  it("an unreachable DATABASE_URL", async () => {
    const port = await freePort(); // nothing listens there
    const { code, stderr } = await serveFails({
      DATABASE_URL: `postgres://someone:secret@127.0.0.1:${port}/db`,
    });
    expect(code).toBe(1);
    expectOneLine(
      stderr,
      new RegExp(
        `^utility402: cannot start: DATABASE_URL: cannot connect to 127\\.0\\.0\\.1:${port}: connection refused`,
      ),
    );
    expect(stderr).not.toContain("secret");
  }, 120_000);

  it("an invalid setting", async () => {
    const { code, stderr } = await serveFails({ MAX_REQUESTS_PER_CLIENT: "many" });
    expect(code).toBe(1);
    expectOneLine(stderr, /^config error: MAX_REQUESTS_PER_CLIENT: /);
  }, 60_000);

  it("PORT in use", async () => {
    const holder = net.createServer();
    holders.push(holder);
    await new Promise<void>((resolve) => holder.listen(0, "127.0.0.1", resolve));
    const port = (holder.address() as net.AddressInfo).port;
    const { code, stderr } = await serveFails({ PORT: String(port) });
    expect(code).toBe(1);
    expectOneLine(
      stderr,
      new RegExp(`^utility402: cannot start: PORT: 127\\.0\\.0\\.1:${port} is already in use`),
    );
  }, 120_000);

  it("an RPC_URL that does not answer (self mode)", async () => {
    const port = await freePort();
    const { code, stderr } = await serveFails({
      PAYMENT_MODE: "self",
      X402_SETTLER_PRIVATE_KEY: `0x${"ab".repeat(32)}`,
      X402_PAY_TO: `0x${"cd".repeat(20)}`,
      RPC_URL: `http://127.0.0.1:${port}/an-api-key-in-the-path`,
    });
    expect(code).toBe(1);
    expectOneLine(
      stderr,
      new RegExp(
        `^utility402: cannot start: RPC_URL: cannot connect to 127\\.0\\.0\\.1:${port}: connection refused`,
      ),
    );
    expect(stderr).not.toContain("an-api-key-in-the-path");
  }, 120_000);
});
