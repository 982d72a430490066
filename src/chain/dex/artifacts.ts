import { createRequire } from "node:module";
import type { Abi, Hex } from "viem";

const require = createRequire(import.meta.url);

export interface DeployableArtifact {
  abi: Abi;
  bytecode: Hex;
  deployedBytecode: Hex;
}

/** Our own stand-ins, compiled by scripts/build-contracts.ts from contracts/. */
export const ownArtifact = (name: string): DeployableArtifact =>
  require(`./artifacts/${name}.json`) as DeployableArtifact;

/** Uniswap's published build artifacts (@uniswap/v3-core, @uniswap/v3-periphery). */
export const uniswapArtifact = (packagePath: string): DeployableArtifact =>
  require(`@uniswap/${packagePath}`) as DeployableArtifact;

/** A runtime published in a registry package, kept with its source (package, version, path, sha256). */
export interface PublishedArtifact {
  source: string;
  sourceSha256: string;
  compiler: string;
  abi: Abi;
  deployedBytecode: Hex;
}

/**
 * Runtimes copied from a registry package too large to depend on (artifacts/published/): Optimism's
 * GasPriceOracle and L1Block from @eth-optimism/contracts-bedrock (126 MB unpacked).
 */
export const publishedArtifact = (name: "GasPriceOracle" | "L1Block"): PublishedArtifact =>
  require(`./artifacts/published/${name}.json`) as PublishedArtifact;
