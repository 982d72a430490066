/**
 * A local chain with the batch-settlement escrow, and the signatures and calls its tests make:
 * ERC-3009 deposit authorizations, vouchers (signed by the official `@x402/evm` client's
 * `signVoucher`), `ClaimBatch` and `Refund` authorizations (the official EIP-712 types), and a
 * revert matcher by custom-error name.
 */
import crypto from "node:crypto";
import fs from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { BATCH_SETTLEMENT_DOMAIN, claimBatchTypes, refundTypes } from "@x402/evm";
import { computeChannelId, signVoucher } from "@x402/evm/batch-settlement/client";
import solc from "solc";
import {
  type Abi,
  type Address,
  BaseError,
  ContractFunctionRevertedError,
  createPublicClient,
  createTestClient,
  createWalletClient,
  encodeAbiParameters,
  type Hex,
  http,
  keccak256,
  type PrivateKeyAccount,
  type PublicClient,
  parseAbi,
  parseEther,
} from "viem";
import { generatePrivateKey, type HDAccount, privateKeyToAccount } from "viem/accounts";
import { base } from "viem/chains";
import {
  BATCH_SETTLEMENT_ADDRESS,
  batchSettlementAbi,
  ERC3009_DEPOSIT_COLLECTOR_ADDRESS,
} from "../../src/chain/batch-settlement.ts";
import { devAccount } from "../../src/chain/dev-accounts.ts";
import {
  fundLocalAccounts,
  LOCAL_CHAIN_ID,
  type LocalChain,
  startLocalChain,
  USDC_ADMIN,
} from "../../src/chain/local-chain.ts";
import { BASE_USDC_ADDRESS } from "../../src/config.ts";
import { createLogger } from "../../src/log.ts";
import { freePort } from "../helpers/service.ts";

export const NETWORK = `eip155:${LOCAL_CHAIN_ID}`;
export const USDC = BASE_USDC_ADDRESS as Address;
export const ZERO: Address = "0x0000000000000000000000000000000000000000";
const BATCH_DOMAIN = {
  ...BATCH_SETTLEMENT_DOMAIN,
  chainId: LOCAL_CHAIN_ID,
  verifyingContract: BATCH_SETTLEMENT_ADDRESS,
};

const usdcAdminAbi = parseAbi([
  "function blacklist(address account)",
  "function unBlacklist(address account)",
  "function mint(address to, uint256 amount) returns (bool)",
]);

/** A test-only contract (test/chain/contracts/<name>.sol), compiled with the build's solc settings. */
function compileTestContract(name: string): { abi: Abi; bytecode: Hex } {
  const source = fs.readFileSync(
    path.join(path.dirname(fileURLToPath(import.meta.url)), "contracts", `${name}.sol`),
    "utf8",
  );
  const input = {
    language: "Solidity",
    sources: { [`${name}.sol`]: { content: source } },
    settings: {
      optimizer: { enabled: true, runs: 200 },
      evmVersion: "cancun",
      outputSelection: { "*": { "*": ["abi", "evm.bytecode.object"] } },
    },
  };
  const output = JSON.parse(solc.compile(JSON.stringify(input)));
  const errors = (output.errors ?? []).filter((error: { severity: string }) => error.severity === "error");
  if (errors.length > 0) throw new Error(JSON.stringify(errors));
  const compiled = output.contracts[`${name}.sol`][name];
  return { abi: compiled.abi, bytecode: `0x${compiled.evm.bytecode.object}` };
}

export const erc20Abi = parseAbi([
  "function balanceOf(address) view returns (uint256)",
  "function transfer(address,uint256) returns (bool)",
]);

export interface ChannelConfig {
  payer: Address;
  payerAuthorizer: Address;
  receiver: Address;
  receiverAuthorizer: Address;
  token: Address;
  withdrawDelay: number;
  salt: Hex;
}

type Account = HDAccount | PrivateKeyAccount;

export interface EscrowChain {
  chain: LocalChain;
  client: PublicClient;
  /** Relays deposits and signed claims/refunds (dev account #0, the settler). */
  relayer: HDAccount;
  receiver: HDAccount;
  receiverAuthorizer: PrivateKeyAccount;
  /** Moves the chain's clock forward (anvil evm_increaseTime + a block). */
  advance(seconds: number): Promise<void>;
  /** Sends a call of the escrow as `from` and waits for it; throws on a revert. */
  send(from: Account, functionName: string, args: readonly unknown[]): Promise<Hex>;
  /** The same for any contract. */
  sendTo(
    from: Account,
    contract: { address: Address; abi: Abi },
    functionName: string,
    args: readonly unknown[],
  ): Promise<Hex>;
  /** Simulates a call as `from` and returns the custom error's name it reverts with (throws if it does not revert). */
  revertOf(from: Account, functionName: string, args: readonly unknown[]): Promise<string>;
  read<T>(functionName: string, args: readonly unknown[]): Promise<T>;
  usdc(address: Address): Promise<bigint>;
  /** A fresh payer with `usdc` test USDC and gas. */
  newPayer(usdc: bigint): Promise<PrivateKeyAccount>;
  /** Compiles a test-only contract of test/chain/contracts/ and deploys it; returns its address. */
  deployTestContract(name: string, args?: readonly unknown[]): Promise<{ address: Address; abi: Abi }>;
  /** Calls USDC as its admin (owner, blacklister, master minter). */
  asUsdcAdmin(functionName: string, args: readonly unknown[]): Promise<void>;
  stop(): Promise<void>;
}

export async function startEscrowChain(): Promise<EscrowChain> {
  const chain = await startLocalChain({ port: await freePort(), log: createLogger("silent") });
  try {
    const transport = http(chain.rpcUrl);
    const viemChain = { ...base, rpcUrls: { default: { http: [chain.rpcUrl] } } };
    const client = createPublicClient({ chain: viemChain, transport, pollingInterval: 20 }) as PublicClient;
    const testClient = createTestClient({ chain: viemChain, mode: "anvil", transport });
    const receiverAuthorizer = privateKeyToAccount(generatePrivateKey());
    await testClient.setBalance({ address: receiverAuthorizer.address, value: parseEther("10") });
    const escrow = { address: BATCH_SETTLEMENT_ADDRESS, abi: batchSettlementAbi } as const;
    const sendTo: EscrowChain["sendTo"] = async (from, contract, functionName, args) => {
      const wallet = createWalletClient({ chain: viemChain, transport, account: from });
      const hash = await wallet.writeContract({ ...contract, functionName, args });
      const receipt = await client.waitForTransactionReceipt({ hash });
      if (receipt.status !== "success") throw new Error(`${functionName} reverted in ${hash}`);
      return hash;
    };
    return {
      chain,
      client,
      relayer: chain.accounts.settler,
      receiver: chain.accounts.payTo,
      receiverAuthorizer,
      async advance(seconds) {
        await testClient.increaseTime({ seconds });
        await testClient.mine({ blocks: 1 });
      },
      send: (from, functionName, args) => sendTo(from, escrow, functionName, args),
      sendTo,
      async revertOf(from, functionName, args) {
        try {
          await client.simulateContract({ ...escrow, functionName, args, account: from });
        } catch (error) {
          return revertName(error);
        }
        throw new Error(`${functionName} did not revert`);
      },
      read: <T>(functionName: string, args: readonly unknown[]) =>
        client.readContract({ ...escrow, functionName, args }) as Promise<T>,
      usdc: (address) =>
        client.readContract({ address: USDC, abi: erc20Abi, functionName: "balanceOf", args: [address] }),
      async newPayer(usdc) {
        const payer = privateKeyToAccount(generatePrivateKey());
        await fundLocalAccounts(chain.rpcUrl, [{ address: payer.address, usdc, ether: parseEther("1") }]);
        return payer;
      },
      async deployTestContract(name, args = []) {
        const { abi, bytecode } = compileTestContract(name);
        const wallet = createWalletClient({ chain: viemChain, transport, account: chain.accounts.settler });
        const hash = await wallet.deployContract({ abi, bytecode, args });
        const { contractAddress } = await client.waitForTransactionReceipt({ hash });
        if (!contractAddress) throw new Error(`${name}: deployment failed`);
        return { address: contractAddress, abi };
      },
      async asUsdcAdmin(functionName, args) {
        await testClient.impersonateAccount({ address: USDC_ADMIN });
        try {
          const admin = createWalletClient({ chain: viemChain, transport, account: USDC_ADMIN });
          const hash = await admin.writeContract({
            address: USDC,
            abi: usdcAdminAbi,
            functionName,
            args,
          } as never);
          const receipt = await client.waitForTransactionReceipt({ hash });
          if (receipt.status !== "success") throw new Error(`USDC ${functionName} reverted`);
        } finally {
          await testClient.stopImpersonatingAccount({ address: USDC_ADMIN });
        }
      },
      stop: () => chain.stop(),
    };
  } catch (error) {
    await chain.stop();
    throw error;
  }
}

/** The custom error (or reason) a failed call reverted with. */
export function revertName(error: unknown): string {
  if (error instanceof BaseError) {
    const reverted = error.walk((e) => e instanceof ContractFunctionRevertedError);
    if (reverted instanceof ContractFunctionRevertedError) {
      // Error(string) (USDC's own reverts, bubbled up through the collector) by its reason.
      const name = reverted.data?.errorName;
      return (
        (name === "Error" ? reverted.reason : name) ??
        reverted.reason ??
        reverted.signature ??
        "unknown revert"
      );
    }
  }
  throw error;
}

export function channelConfig(
  payer: Address,
  overrides: Partial<ChannelConfig> & { receiver: Address; receiverAuthorizer: Address },
): ChannelConfig {
  return {
    payer,
    payerAuthorizer: payer,
    token: USDC,
    withdrawDelay: 900,
    salt: `0x${crypto.randomBytes(32).toString("hex")}`,
    ...overrides,
  };
}

export const channelIdOf = (config: ChannelConfig): Hex => computeChannelId(config, NETWORK);

/**
 * The `collectorData` of an ERC-3009 deposit: the payer's `ReceiveWithAuthorization` to the
 * collector, nonce = keccak256(abi.encode(channelId, salt)) (the binding the official client signs).
 */
export async function depositAuthorization(
  payer: Account,
  config: ChannelConfig,
  amount: bigint,
  options: { validAfter?: bigint; validBefore?: bigint; salt?: bigint; channelId?: Hex } = {},
): Promise<Hex> {
  const validAfter = options.validAfter ?? 0n;
  const validBefore = options.validBefore ?? 2n ** 40n;
  const salt = options.salt ?? BigInt(`0x${crypto.randomBytes(31).toString("hex")}`);
  const nonce = keccak256(
    encodeAbiParameters(
      [{ type: "bytes32" }, { type: "uint256" }],
      [options.channelId ?? channelIdOf(config), salt],
    ),
  );
  const signature = await payer.signTypedData({
    domain: { name: "USD Coin", version: "2", chainId: LOCAL_CHAIN_ID, verifyingContract: USDC },
    types: {
      ReceiveWithAuthorization: [
        { name: "from", type: "address" },
        { name: "to", type: "address" },
        { name: "value", type: "uint256" },
        { name: "validAfter", type: "uint256" },
        { name: "validBefore", type: "uint256" },
        { name: "nonce", type: "bytes32" },
      ],
    },
    primaryType: "ReceiveWithAuthorization",
    message: {
      from: payer.address,
      to: ERC3009_DEPOSIT_COLLECTOR_ADDRESS,
      value: amount,
      validAfter,
      validBefore,
      nonce,
    },
  });
  return encodeAbiParameters(
    [{ type: "uint256" }, { type: "uint256" }, { type: "uint256" }, { type: "bytes" }],
    [validAfter, validBefore, salt, signature],
  );
}

/** A voucher for `maxClaimableAmount`, signed by the official client's `signVoucher`. */
export async function voucherSignature(
  signer: Account,
  config: ChannelConfig,
  maxClaimableAmount: bigint,
): Promise<Hex> {
  const voucher = await signVoucher(signer, channelIdOf(config), maxClaimableAmount.toString(), NETWORK);
  return voucher.signature as Hex;
}

export interface ClaimRow {
  config: ChannelConfig;
  maxClaimableAmount: bigint;
  signature: Hex;
  totalClaimed: bigint;
}

/** The contract's `VoucherClaim[]` argument. */
export const claimArgs = (rows: ClaimRow[]) =>
  rows.map((row) => ({
    voucher: { channel: row.config, maxClaimableAmount: row.maxClaimableAmount },
    signature: row.signature,
    totalClaimed: row.totalClaimed,
  }));

export function signClaimBatch(authorizer: Account, rows: ClaimRow[]): Promise<Hex> {
  return authorizer.signTypedData({
    domain: BATCH_DOMAIN,
    types: claimBatchTypes,
    primaryType: "ClaimBatch",
    message: {
      claims: rows.map((row) => ({
        channelId: channelIdOf(row.config),
        maxClaimableAmount: row.maxClaimableAmount,
        totalClaimed: row.totalClaimed,
      })),
    },
  });
}

export function signRefund(
  authorizer: Account,
  config: ChannelConfig,
  nonce: bigint,
  amount: bigint,
): Promise<Hex> {
  return authorizer.signTypedData({
    domain: BATCH_DOMAIN,
    types: refundTypes,
    primaryType: "Refund",
    message: { channelId: channelIdOf(config), nonce, amount },
  });
}

export { BATCH_SETTLEMENT_ADDRESS, devAccount, ERC3009_DEPOSIT_COLLECTOR_ADDRESS };
