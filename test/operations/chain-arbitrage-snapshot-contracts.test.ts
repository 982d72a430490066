import crypto from "node:crypto";
import fs from "node:fs";
import { createPublicClient, http } from "viem";
import { afterAll, describe, expect, it } from "vitest";
import { artifactPath, compileContracts, DEPLOYED_CONTRACTS } from "../../scripts/build-contracts.ts";
import { publishedArtifact } from "../../src/chain/dex/artifacts.ts";
import {
  ensureLocalDex,
  GAS_PRICE_ORACLE_ADDRESS,
  L1_BLOCK_ADDRESS,
  LOCAL_L1,
} from "../../src/chain/dex/local-dex.ts";
import { type LocalChain, startLocalChain } from "../../src/chain/local-chain.ts";
import { createLogger } from "../../src/log.ts";
import { freePort } from "../helpers/service.ts";

describe("the local DEX's committed contract artifacts", () => {
  it("are exactly what solc-js compiles from contracts/ (run scripts/build-contracts.ts after editing a source)", () => {
    const compiled = compileContracts();
    expect(compiled.map((artifact) => artifact.contractName)).toEqual([...DEPLOYED_CONTRACTS]);
    for (const artifact of compiled) {
      const committed = JSON.parse(fs.readFileSync(artifactPath(artifact.contractName), "utf8"));
      expect(committed.bytecode, artifact.contractName).toBe(artifact.bytecode);
      expect(committed.deployedBytecode, artifact.contractName).toBe(artifact.deployedBytecode);
      expect(committed.abi, artifact.contractName).toEqual(artifact.abi);
      expect(committed.compiler).toBe(artifact.compiler);
    }
  }, 60_000);
});

describe("the local chain's GasPriceOracle", () => {
  let chain: LocalChain | undefined;
  afterAll(async () => {
    await chain?.stop();
  });

  it("is Optimism's published GasPriceOracle and L1Block (Fjord), not a stand-in: getL1Fee by the Fjord formula", async () => {
    const log = createLogger("silent");
    chain = await startLocalChain({ port: await freePort(), log });
    await ensureLocalDex(chain.rpcUrl, log);
    const client = createPublicClient({ transport: http(chain.rpcUrl) });
    for (const [address, name] of [
      [GAS_PRICE_ORACLE_ADDRESS, "GasPriceOracle"],
      [L1_BLOCK_ADDRESS, "L1Block"],
    ] as const) {
      expect(await client.getCode({ address })).toBe(publishedArtifact(name).deployedBytecode);
      expect(publishedArtifact(name).source).toContain("@eth-optimism/contracts-bedrock@0.17.3");
    }
    const oracle = { address: GAS_PRICE_ORACLE_ADDRESS, abi: publishedArtifact("GasPriceOracle").abi };
    const read = (functionName: string, args: unknown[] = []) =>
      client.readContract({ ...oracle, functionName, args }) as Promise<unknown>;
    expect(await read("version")).toBe("1.3.0");
    expect([await read("isEcotone"), await read("isFjord")]).toEqual([true, true]);
    expect(await read("l1BaseFee")).toBe(LOCAL_L1.baseFee);
    expect(await read("blobBaseFee")).toBe(LOCAL_L1.blobBaseFee);
    expect(BigInt((await read("baseFeeScalar")) as number)).toBe(LOCAL_L1.baseFeeScalar);
    expect(BigInt((await read("blobBaseFeeScalar")) as number)).toBe(LOCAL_L1.blobBaseFeeScalar);
    // Fjord: fee = max(100e6, −42,585,600 + 836,500 × fastLzSize) × (baseFeeScalar × 16 × l1BaseFee +
    // blobBaseFeeScalar × blobBaseFee) / 1e12; the upper bound takes fastLzSize = n + n / 255 + 16, n = size + 68.
    const feeScaled =
      LOCAL_L1.baseFeeScalar * 16n * LOCAL_L1.baseFee + LOCAL_L1.blobBaseFeeScalar * LOCAL_L1.blobBaseFee;
    for (const size of [10n, 400n, 2000n]) {
      const n = size + 68n;
      const estimated = -42_585_600n + 836_500n * (n + n / 255n + 16n);
      const expected = ((estimated < 100_000_000n ? 100_000_000n : estimated) * feeScaled) / 10n ** 12n;
      expect(await read("getL1FeeUpperBound", [size])).toBe(expected);
    }
    // getL1Fee (what a snapshot reads): a short transaction pays the 100-byte floor; incompressible
    // bytes pay by their compressed size.
    const floor = (100_000_000n * feeScaled) / 10n ** 12n;
    expect(await read("getL1Fee", ["0x01"])).toBe(floor);
    const incompressible = `0x${crypto.randomBytes(600).toString("hex")}`;
    const large = (await read("getL1Fee", [incompressible])) as bigint;
    expect(large).toBeGreaterThan(floor);
    // 600 random bytes compress to no less than ~600: at least the formula's fee for 600 + 68 bytes.
    expect(large).toBeGreaterThanOrEqual(((-42_585_600n + 836_500n * 668n) * feeScaled) / 10n ** 12n);
  }, 60_000);
});
