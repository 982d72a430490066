import { eip3009ABI } from "@x402/evm";
import { concatHex, encodeFunctionData, type Hex, keccak256, recoverTransactionAddress, toHex } from "viem";
import { privateKeyToAccount } from "viem/accounts";
import { describe, expect, it } from "vitest";
import { calldata, transactionSigner } from "./transactions.ts";

const keyOf = (i: number) => keccak256(toHex(`settler signing test ${i}`));

describe("transactionSigner", () => {
  it("signs byte for byte as viem's account signer, EIP-1559 and legacy, and the signature recovers the settler", async () => {
    for (let i = 0; i < 40; i++) {
      const key = keyOf(i);
      const account = privateKeyToAccount(key);
      const chainId = i % 2 === 0 ? 8453 : 31337;
      const fee =
        i % 3 === 0
          ? { gasPrice: 1_000_000_000n + BigInt(i) }
          : { maxFeePerGas: 2_000_000_000n + BigInt(i), maxPriorityFeePerGas: 1_000_000n * BigInt(i) };
      const tx = {
        to: privateKeyToAccount(keyOf(1000 + i)).address,
        data: keccak256(toHex(i))
          .repeat(1 + (i % 5))
          .replace(/0x/g, "")
          .replace(/^/, "0x") as Hex,
        gas: 60_000n + BigInt(i * 1000),
        nonce: i * 7919,
      };
      const signed = transactionSigner(key, chainId)({ ...tx, fee });
      const expected = await account.signTransaction({
        chainId,
        value: 0n,
        ...tx,
        ...("gasPrice" in fee ? { type: "legacy", gasPrice: fee.gasPrice } : { type: "eip1559", ...fee }),
      });
      expect(signed).toBe(expected);
      expect(await recoverTransactionAddress({ serializedTransaction: signed as never })).toBe(
        account.address,
      );
    }
  });
});

describe("calldata", () => {
  it("encodes as encodeFunctionData, with the suffix appended, for each function of one ABI", () => {
    const args = [
      privateKeyToAccount(keyOf(1)).address,
      privateKeyToAccount(keyOf(2)).address,
      1000n,
      0n,
      99n,
      keyOf(3),
      27,
      keyOf(4),
      keyOf(5),
    ] as const;
    for (const functionName of ["transferWithAuthorization", "transferWithAuthorization"]) {
      const call = { address: keyOf(6).slice(0, 42) as Hex, abi: eip3009ABI, functionName, args };
      const expected = encodeFunctionData({
        abi: eip3009ABI,
        functionName: "transferWithAuthorization",
        args,
      });
      expect(calldata(call)).toBe(expected);
      expect(calldata({ ...call, dataSuffix: "0xdeadbeef" })).toBe(concatHex([expected, "0xdeadbeef"]));
    }
    const authorizationState = {
      address: keyOf(6).slice(0, 42) as Hex,
      abi: eip3009ABI,
      functionName: "authorizationState",
      args: [args[0], keyOf(7)],
    };
    expect(calldata(authorizationState)).toBe(
      encodeFunctionData({ abi: eip3009ABI, functionName: "authorizationState", args: [args[0], keyOf(7)] }),
    );
  });
});
