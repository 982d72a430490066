import fs from "node:fs";
import { describe, expect, it } from "vitest";
import { artifactPath, compileContracts, DEPLOYED_CONTRACTS } from "../../scripts/build-contracts.ts";

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
