/**
 * Compiles contracts/*.sol (the local chain's DEX stand-ins and the x402 batch-settlement escrow) with solc-js and writes one artifact per
 * deployed contract to src/chain/dex/artifacts/ (committed: the service never compiles at run time).
 * A test recompiles and checks the committed bytecode is what these sources give.
 *
 *   npx tsx scripts/build-contracts.ts
 */
import fs from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import solc from "solc";

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
export const CONTRACTS_DIR = path.join(root, "contracts");
export const ARTIFACTS_DIR = path.join(root, "src", "chain", "dex", "artifacts");

/** The contracts the local chain deploys (interfaces and helpers compile but get no artifact). */
export const DEPLOYED_CONTRACTS = [
  "WETH9",
  "AerodromeVolatileFactory",
  "AerodromeVolatilePool",
  "AerodromeRouter",
  "UniswapV3LiquidityProvider",
  "SlipstreamStandIn",
  "ChainlinkFeedStandIn",
  "GasPriceOracleStandIn",
  "x402BatchSettlement",
  "ERC3009DepositCollector",
] as const;

export interface ContractArtifact {
  contractName: string;
  sourceName: string;
  compiler: string;
  abi: unknown[];
  bytecode: `0x${string}`;
  deployedBytecode: `0x${string}`;
}

interface SolcOutput {
  errors?: { severity: string; formattedMessage: string }[];
  contracts: Record<
    string,
    Record<
      string,
      { abi: unknown[]; evm: { bytecode: { object: string }; deployedBytecode: { object: string } } }
    >
  >;
}

/** Compiles every source with fixed settings (so the output is reproducible) and returns the artifacts. */
export function compileContracts(): ContractArtifact[] {
  const sources = Object.fromEntries(
    fs
      .readdirSync(CONTRACTS_DIR)
      .filter((file) => file.endsWith(".sol"))
      .sort()
      .map((file) => [file, { content: fs.readFileSync(path.join(CONTRACTS_DIR, file), "utf8") }]),
  );
  const input = {
    language: "Solidity",
    sources,
    settings: {
      optimizer: { enabled: true, runs: 200 },
      evmVersion: "cancun",
      // No metadata hash: the bytecode then depends only on the sources and these settings.
      metadata: { bytecodeHash: "none", appendCBOR: false },
      outputSelection: { "*": { "*": ["abi", "evm.bytecode.object", "evm.deployedBytecode.object"] } },
    },
  };
  const output = JSON.parse(solc.compile(JSON.stringify(input))) as SolcOutput;
  const errors = (output.errors ?? []).filter((error) => error.severity === "error");
  if (errors.length > 0) throw new Error(errors.map((error) => error.formattedMessage).join("\n"));
  const artifacts: ContractArtifact[] = [];
  for (const name of DEPLOYED_CONTRACTS) {
    const sourceName = Object.keys(output.contracts).find((source) => output.contracts[source]?.[name]);
    const compiled = sourceName ? output.contracts[sourceName]?.[name] : undefined;
    if (!sourceName || !compiled) throw new Error(`contract ${name} not found in contracts/`);
    artifacts.push({
      contractName: name,
      sourceName: `contracts/${sourceName}`,
      compiler: `solc ${solc.version()}`,
      abi: compiled.abi,
      bytecode: `0x${compiled.evm.bytecode.object}`,
      deployedBytecode: `0x${compiled.evm.deployedBytecode.object}`,
    });
  }
  return artifacts;
}

export const artifactPath = (name: string) => path.join(ARTIFACTS_DIR, `${name}.json`);

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  fs.mkdirSync(ARTIFACTS_DIR, { recursive: true });
  for (const artifact of compileContracts()) {
    fs.writeFileSync(artifactPath(artifact.contractName), `${JSON.stringify(artifact, null, 2)}\n`);
    console.log(`${artifact.contractName}: ${(artifact.deployedBytecode.length - 2) / 2} bytes runtime`);
  }
}
