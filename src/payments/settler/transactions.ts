import { signRecoverable } from "tiny-secp256k1";
import {
  type Abi,
  type AbiFunction,
  bytesToHex,
  concatHex,
  encodeFunctionData,
  type Hex,
  hexToBytes,
  keccak256,
  prepareEncodeFunctionData,
  serializeTransaction,
  type TransactionSerializable,
} from "viem";
import type { Fees } from "./fee-cache.ts";
import type { ContractCall } from "./signer.ts";

/** A transaction from the settler, as it signs them: no value, fees as the chain takes them. */
export interface SettlerTransaction {
  to: Hex;
  data: Hex;
  gas: bigint;
  nonce: number;
  fee: Fees;
}

/**
 * Signs the settler's transactions with libsecp256k1 (compiled to WebAssembly, the tiny-secp256k1
 * package): the same RFC 6979 signature, byte for byte, as viem's account signer (noble-curves),
 * in a third of the CPU; the signing key of a paid call is most of its JavaScript CPU otherwise.
 */
export function transactionSigner(privateKey: Hex, chainId: number): (tx: SettlerTransaction) => Hex {
  const key = hexToBytes(privateKey);
  return ({ fee, ...rest }) => {
    const transaction: TransactionSerializable = {
      chainId,
      value: 0n,
      ...rest,
      ...("gasPrice" in fee ? { type: "legacy", gasPrice: fee.gasPrice } : { type: "eip1559", ...fee }),
    };
    const digest = hexToBytes(keccak256(serializeTransaction(transaction)));
    const { signature, recoveryId } = signRecoverable(digest, key);
    return serializeTransaction(transaction, {
      r: bytesToHex(signature.subarray(0, 32)),
      s: bytesToHex(signature.subarray(32)),
      v: BigInt(27 + recoveryId),
      yParity: recoveryId,
    });
  };
}

/** A contract call's calldata (with its suffix, when it has one). */
export function calldata(call: ContractCall): Hex {
  const data = encodeFunctionData({ ...preparedFunction(call), args: call.args });
  return call.dataSuffix ? concatHex([data, call.dataSuffix]) : data;
}

/** Prepared functions by ABI and name: encodeFunctionData would hash the function's signature on every call. */
const preparedFunctions = new WeakMap<object, Map<string, PreparedFunction>>();
type PreparedFunction = { abi: [AbiFunction]; functionName: Hex };

function preparedFunction(call: ContractCall): PreparedFunction {
  let byName = preparedFunctions.get(call.abi);
  if (!byName) {
    byName = new Map();
    preparedFunctions.set(call.abi, byName);
  }
  let prepared = byName.get(call.functionName);
  if (!prepared) {
    prepared = prepareEncodeFunctionData({
      // The x402 signer interface is ABI-agnostic; viem's typing is not.
      abi: call.abi as Abi,
      functionName: call.functionName,
    }) as PreparedFunction;
    byName.set(call.functionName, prepared);
  }
  return prepared;
}
