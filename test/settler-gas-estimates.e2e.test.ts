import http from "node:http";
import type { AddressInfo } from "node:net";
import { eip3009ABI } from "@x402/evm";
import pino from "pino";
import solc from "solc";
import {
  type Abi,
  createPublicClient,
  createWalletClient,
  type Hex,
  keccak256,
  parseSignature,
  toHex,
  http as viemHttp,
} from "viem";
import { privateKeyToAccount } from "viem/accounts";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { devPrivateKey } from "../src/chain/dev-accounts.ts";
import { fundLocalAccounts, type LocalChain, startLocalChain } from "../src/chain/local-chain.ts";
import { BASE_USDC_ADDRESS } from "../src/config.ts";
import { createSettlerSigner } from "../src/payments/settler/settler-signer.ts";
import { type ContractCall, gasLimitFor, type SettlerSigner } from "../src/payments/settler/signer.ts";
import { signTransferAuthorization } from "./helpers/payment-faults.ts";
import { freePort } from "./helpers/service.ts";

/**
 * A smart-contract wallet (ERC-1271) that accepts its owner's signature after spending about
 * `burn` × 100 gas: FiatTokenV2_2 asks a payer that is a contract, so its payments cost more gas
 * than an EOA's through the same transferWithAuthorization.
 */
const GAS_HUNGRY_WALLET = `// SPDX-License-Identifier: MIT
pragma solidity ^0.8.20;
contract GasHungryWallet {
    address public immutable owner;
    uint256 public immutable burn;
    constructor(address owner_, uint256 burn_) { owner = owner_; burn = burn_; }
    function isValidSignature(bytes32 hash, bytes memory signature) external view returns (bytes4) {
        uint256 x;
        for (uint256 i = 0; i < burn; i++) x = uint256(keccak256(abi.encode(x, i)));
        bytes32 r;
        bytes32 s;
        uint8 v;
        assembly {
            r := mload(add(signature, 32))
            s := mload(add(signature, 64))
            v := byte(0, mload(add(signature, 96)))
        }
        return ecrecover(hash, v, r, s) == owner && x != 0 ? bytes4(0x1626ba7e) : bytes4(0xffffffff);
    }
}`;

function compileWallet(): { abi: Abi; bytecode: Hex } {
  const output = JSON.parse(
    solc.compile(
      JSON.stringify({
        language: "Solidity",
        sources: { "GasHungryWallet.sol": { content: GAS_HUNGRY_WALLET } },
        settings: {
          optimizer: { enabled: true, runs: 200 },
          evmVersion: "cancun",
          outputSelection: { "*": { "*": ["abi", "evm.bytecode.object"] } },
        },
      }),
    ),
  );
  const compiled = output.contracts["GasHungryWallet.sol"].GasHungryWallet;
  return { abi: compiled.abi, bytecode: `0x${compiled.evm.bytecode.object}` };
}

/**
 * The settler's gas estimates on a real chain (anvil with Circle's FiatTokenV2_2): a function it
 * estimated recently is only simulated with eth_call, which refuses what eth_estimateGas refuses; an
 * estimate older than its age limit is made again. Every JSON-RPC method is counted on the way.
 */
describe("the settler's gas estimates", () => {
  let chain: LocalChain;
  let relay: http.Server;
  const methods: string[] = [];
  const payer = privateKeyToAccount(keccak256(toHex("gas estimates payer")));
  const payTo = privateKeyToAccount(keccak256(toHex("gas estimates payee"))).address;
  let nonceCount = 0;

  beforeAll(async () => {
    chain = await startLocalChain({ port: await freePort(), log: pino({ level: "silent" }) });
    await fundLocalAccounts(chain.rpcUrl, [{ address: payer.address, usdc: 1_000_000_000n }]);
    relay = http.createServer(async (request, response) => {
      const chunks: Buffer[] = [];
      for await (const chunk of request) chunks.push(chunk as Buffer);
      const body = JSON.parse(Buffer.concat(chunks).toString());
      for (const call of Array.isArray(body) ? body : [body]) methods.push(call.method);
      const upstream = await fetch(chain.rpcUrl, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify(body),
      });
      response.writeHead(upstream.status, { "content-type": "application/json" }).end(await upstream.text());
    });
    await new Promise<void>((resolve) => relay.listen(0, "127.0.0.1", resolve));
  });
  afterAll(async () => {
    relay?.closeAllConnections();
    await new Promise((resolve) => relay?.close(resolve));
    await chain?.stop();
  });

  /** The estimates' clock, moved by the test: an age limit is checked without waiting on a loaded machine. */
  let clockMs = 0;
  /** Every signer a test made, stopped after it: a signer's nonce-gap check would otherwise go on polling the chain. */
  const signers: { stop(): void }[] = [];
  afterEach(() => {
    for (const signer of signers.splice(0)) signer.stop();
  });
  const settler = (gasEstimateMaxAgeMs: number) => {
    const signer = createSettlerSigner({
      // No nonce-gap check during a test: its eth_getTransactionCount would be counted among the estimate's calls.
      gapCheckMs: 3_600_000,
      gasEstimateClock: () => clockMs,
      privateKey: devPrivateKey(0),
      rpcUrl: `http://127.0.0.1:${(relay.address() as AddressInfo).port}`,
      chainId: 8453,
      pollingIntervalMs: 50,
      confirmationTimeoutMs: 10_000,
      gasEstimateMaxAgeMs,
    });
    signers.push(signer);
    return signer;
  };

  /** A transferWithAuthorization of a fresh authorization from the payer. */
  async function transfer(
    options: { value?: bigint; badSignature?: boolean; from?: Hex } = {},
  ): Promise<ContractCall> {
    const now = BigInt(Math.floor(Date.now() / 1000));
    const authorization = {
      from: options.from ?? payer.address,
      to: payTo,
      value: options.value ?? 1000n,
      validAfter: now - 60n,
      validBefore: now + 600n,
      nonce: keccak256(toHex(`gas estimates ${nonceCount++}`)),
    };
    const signature = await signTransferAuthorization(payer, authorization);
    const { r, s, v } = parseSignature(signature);
    return {
      address: BASE_USDC_ADDRESS,
      abi: eip3009ABI,
      functionName: "transferWithAuthorization",
      args: [
        authorization.from,
        authorization.to,
        authorization.value,
        authorization.validAfter,
        authorization.validBefore,
        authorization.nonce,
        Number(v),
        options.badSignature ? (`0x${"11".repeat(32)}` as Hex) : r,
        s,
      ],
    };
  }
  const counted = async (run: () => Promise<unknown>) => {
    methods.length = 0;
    const outcome: { value?: unknown; error?: Error } = await run().then(
      (value) => ({ value }),
      (error: Error) => ({ error }),
    );
    return { ...outcome, methods: [...methods] };
  };
  const estimate = (signer: SettlerSigner, call: ContractCall) =>
    counted(() => signer.estimateContractGas(call));

  it("estimates a function once, then simulates its later calls with eth_call and settles them with that estimate", async () => {
    const signer = settler(60_000);
    const first = await estimate(signer, await transfer());
    expect(first.methods).toEqual(["eth_estimateGas"]);
    expect(first.value).toBeGreaterThan(50_000n);

    const later = await transfer();
    const second = await estimate(signer, later);
    expect(second.methods).toEqual(["eth_call"]);
    expect(second.value).toBe(first.value);

    // The estimate is enough to settle: the transfer lands.
    const hash = await signer.sendContractCall({
      ...later,
      gas: ((first.value as bigint) * 5n) / 4n + 25_000n,
    });
    const receipt = await signer.waitForTransactionReceipt({ hash });
    expect(receipt.status).toBe("success");
  });

  it("with a known estimate, refuses what the token refuses (a used authorization, a bad signature, more than the balance): the failed simulation is estimated, which names the refusal", async () => {
    const signer = settler(60_000);
    const used = await transfer();
    await estimate(signer, used);
    const hash = await signer.sendContractCall({ ...used, gas: 200_000n });
    await signer.waitForTransactionReceipt({ hash });
    for (const refused of [
      used,
      await transfer({ badSignature: true }),
      await transfer({ value: 10n ** 15n }),
    ]) {
      const outcome = await estimate(signer, refused);
      // The simulation fails, so the call is estimated: the token's refusal.
      expect(outcome.methods).toEqual(["eth_call", "eth_estimateGas"]);
      expect(outcome.error?.message).toMatch(/revert/i);
    }
  });

  it("estimates again once the estimate is older than its age limit", async () => {
    const signer = settler(200);
    expect((await estimate(signer, await transfer())).methods).toEqual(["eth_estimateGas"]);
    clockMs += 199;
    expect((await estimate(signer, await transfer())).methods).toEqual(["eth_call"]);
    clockMs += 1;
    expect((await estimate(signer, await transfer())).methods).toEqual(["eth_estimateGas"]);
  });

  it("estimates again a call that needs more gas than the known estimate allows (a payer's ERC-1271 wallet), and it settles", async () => {
    const { abi, bytecode } = compileWallet();
    const deployer = createWalletClient({
      account: privateKeyToAccount(devPrivateKey(9)),
      transport: viemHttp(chain.rpcUrl),
    });
    const chainClient = createPublicClient({ transport: viemHttp(chain.rpcUrl) });
    const deployed = await chainClient.waitForTransactionReceipt({
      hash: await deployer.deployContract({ abi, bytecode, args: [payer.address, 1_500n], chain: null }),
    });
    const wallet = deployed.contractAddress as Hex;
    await fundLocalAccounts(chain.rpcUrl, [{ address: wallet, usdc: 1_000_000n }]);

    const signer = settler(60_000);
    const eoa = await estimate(signer, await transfer());
    expect(eoa.methods).toEqual(["eth_estimateGas"]);

    const fromWallet = await transfer({ from: wallet });
    const walletEstimate = await estimate(signer, fromWallet);
    // The known estimate's gas limit is not enough for the wallet's signature check: estimated again.
    expect(walletEstimate.methods).toEqual(["eth_call", "eth_estimateGas"]);
    expect(walletEstimate.value).toBeGreaterThan(gasLimitFor(eoa.value as bigint));
    const hash = await signer.sendContractCall({
      ...fromWallet,
      gas: gasLimitFor(walletEstimate.value as bigint),
    });
    expect((await signer.waitForTransactionReceipt({ hash })).status).toBe("success");
  });
});
