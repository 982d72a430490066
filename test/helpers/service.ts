import fs from "node:fs";
import net from "node:net";
import os from "node:os";
import path from "node:path";
import { createPublicClient, createWalletClient, type Hex, http, parseAbi } from "viem";
import { privateKeyToAccount } from "viem/accounts";
import type { AnyOperation } from "../../src/catalog/operation.ts";
import { BASE_USDC_ADDRESS, type Config, loadConfig } from "../../src/config.ts";
import { createLogger } from "../../src/log.ts";
import { type RunningService, startService } from "../../src/serve.ts";
import { StartupError } from "../../src/startup-error.ts";
import { stretchPoolDeadlinesForTests } from "./pool-deadlines.ts";
import { createTestDatabase } from "./postgres.ts";

export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = net.createServer();
    server.once("error", reject);
    server.listen(0, "127.0.0.1", () => {
      const { port } = server.address() as net.AddressInfo;
      server.close(() => resolve(port));
    });
  });
}

export interface TestService extends RunningService {
  dataDir: string;
}

type TestServiceOptions = { operations?: readonly AnyOperation[]; clock?: () => number };

/**
 * Starts the real service (local test chain by default) on free ports with a fresh data
 * directory under the OS temp dir. Always pair with stop() in afterAll/finally.
 */
export async function startTestService(
  env: Record<string, string> = {},
  options: TestServiceOptions = {},
): Promise<TestService> {
  stretchPoolDeadlinesForTests();
  for (let attempt = 1; ; attempt++) {
    try {
      return await startOnFreePorts(env, options);
    } catch (error) {
      if (attempt >= 5 || !lostFreePort(error, env)) throw error;
    }
  }
}

/**
 * Whether a start failed because a port freePort() chose was taken before the service listened on it:
 * freePort() closes its probe, and a parallel test's outgoing connection may draw the same port from the
 * ephemeral range (a CI run failed so: "PORT: 127.0.0.1:35587 is already in use"). A port the test
 * itself set is never retried.
 */
function lostFreePort(error: unknown, env: Record<string, string>): boolean {
  const message = error instanceof Error ? error.message : "";
  if (error instanceof StartupError && error.setting === "PORT" && env.PORT === undefined) {
    return message.includes("is already in use");
  }
  return env.LOCAL_CHAIN_PORT === undefined && message.includes("set LOCAL_CHAIN_PORT");
}

async function startOnFreePorts(
  env: Record<string, string>,
  options: TestServiceOptions,
): Promise<TestService> {
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), "utility402-test-"));
  const port = await freePort();
  const postgres =
    process.env.TEST_STORE === "postgres" && !env.DATABASE_URL ? await createTestDatabase() : undefined;
  const config = loadConfig({
    ...(postgres ? { DATABASE_URL: postgres.url, DATABASE_POOL_SIZE: "5" } : {}),
    PORT: String(port),
    LOCAL_CHAIN_PORT: String(await freePort()),
    DATA_DIR: dataDir,
    LOCAL_CHAIN_STATE: "none",
    LOG_LEVEL: process.env.TEST_LOG_LEVEL ?? "silent",
    ...env,
  });
  const service = await startService(config, createLogger(config.logLevel), options).catch(async (error) => {
    fs.rmSync(dataDir, { recursive: true, force: true });
    await postgres?.dispose();
    throw error;
  });
  return {
    ...service,
    dataDir,
    async stop() {
      await service.stop();
      fs.rmSync(dataDir, { recursive: true, force: true });
      await postgres?.dispose();
    },
  };
}

/** The DATABASE_URL of a running service's store, to start another instance on the same one. */
export const databaseUrlOf = (config: Config) =>
  config.database.kind === "postgres" ? config.database.url : `sqlite:${config.database.path}`;

const ERC20 = parseAbi([
  "function balanceOf(address) view returns (uint256)",
  "function transfer(address to, uint256 amount) returns (bool)",
]);

export function usdcBalances(rpcUrl: string) {
  const client = createPublicClient({ transport: http(rpcUrl) });
  return (address: `0x${string}`) =>
    client.readContract({
      address: BASE_USDC_ADDRESS,
      abi: ERC20,
      functionName: "balanceOf",
      args: [address],
    });
}

/** A plain USDC transfer signed by `privateKey` (which needs gas), resolved once mined; throws if it reverted. */
export function usdcSender(rpcUrl: string, privateKey: Hex) {
  const publicClient = createPublicClient({ transport: http(rpcUrl), pollingInterval: 50 });
  const wallet = createWalletClient({ account: privateKeyToAccount(privateKey), transport: http(rpcUrl) });
  return async (to: `0x${string}`, amount: bigint) => {
    const hash = await wallet.writeContract({
      chain: null,
      address: BASE_USDC_ADDRESS,
      abi: ERC20,
      functionName: "transfer",
      args: [to, amount],
    });
    const receipt = await publicClient.waitForTransactionReceipt({ hash });
    if (receipt.status !== "success") throw new Error(`USDC transfer ${hash} reverted`);
  };
}

/** A POST with a JSON body (and optional headers, e.g. a PAYMENT-SIGNATURE). */
export const jsonPost = (body: unknown, headers: Record<string, string> = {}): RequestInit => ({
  method: "POST",
  headers: { "content-type": "application/json", ...headers },
  body: JSON.stringify(body),
});
