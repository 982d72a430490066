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
