import { createPublicClient, parseAbi, parseAbiItem, parseEventLogs } from "viem";
import { jsonRpcTransport } from "../../chain/json-rpc-transport.ts";

const AUTHORIZATION_STATE_ABI = parseAbi([
  "function authorizationState(address authorizer, bytes32 nonce) view returns (bool)",
]);
const AUTHORIZATION_USED = parseAbiItem(
  "event AuthorizationUsed(address indexed authorizer, bytes32 indexed nonce)",
);
const TRANSFER_ABI = parseAbi(["event Transfer(address indexed from, address indexed to, uint256 value)"]);
/** How far back to look for the transaction that used an authorization (about a day of Base blocks). */
const LOG_LOOKBACK_BLOCKS = 50_000n;

/**
 * What the token says about one EIP-3009 authorization:
 * - `unused`: it can still be settled;
 * - `paid`: a transaction used it and moved exactly the amount from the payer to the payee;
 * - `consumed`: it is used up without paying us (the payer cancelled it or spent the nonce on
 *   another transfer), so it never will.
 */
export type AuthorizationOutcome =
  | { state: "unused" }
  | { state: "paid"; transaction: `0x${string}` }
  | { state: "consumed"; transaction?: `0x${string}` };

export interface ExpectedPayment {
  asset: `0x${string}`;
  payer: `0x${string}`;
  nonce: `0x${string}`;
  payTo: `0x${string}`;
  amount: bigint;
}

/**
 * Reads from the token itself what became of an authorization: the ground truth when a
 * settlement's outcome is unknown (a lost receipt, a crash between broadcast and bookkeeping).
 * Throws when the chain cannot tell (unreachable, or the using transaction cannot be found).
 */
export interface AuthorizationChecker {
  check(expected: ExpectedPayment): Promise<AuthorizationOutcome>;
}

const same = (a: string, b: string) => a.toLowerCase() === b.toLowerCase();

export function createAuthorizationChecker(rpcUrl: string): AuthorizationChecker {
  const client = createPublicClient({ transport: jsonRpcTransport(rpcUrl, { retryCount: 2 }) });
  return {
    async check({ asset, payer, nonce, payTo, amount }) {
      const used = await client.readContract({
        address: asset,
        abi: AUTHORIZATION_STATE_ABI,
        functionName: "authorizationState",
        args: [payer, nonce],
      });
      if (!used) return { state: "unused" };
      const latest = await client.getBlockNumber({ cacheTime: 0 });
      const [use] = await client.getLogs({
        address: asset,
        event: AUTHORIZATION_USED,
        args: { authorizer: payer, nonce },
        fromBlock: latest > LOG_LOOKBACK_BLOCKS ? latest - LOG_LOOKBACK_BLOCKS : 0n,
        toBlock: latest,
      });
      if (!use) {
        // Cancelling an authorization emits AuthorizationCanceled, not AuthorizationUsed.
        return { state: "consumed" };
      }
      const receipt = await client.getTransactionReceipt({ hash: use.transactionHash });
      const paid = parseEventLogs({ abi: TRANSFER_ABI, logs: receipt.logs, eventName: "Transfer" }).some(
        (log) =>
          same(log.address, asset) &&
          same(log.args.from, payer) &&
          same(log.args.to, payTo) &&
          log.args.value === amount,
      );
      return paid
        ? { state: "paid", transaction: use.transactionHash }
        : { state: "consumed", transaction: use.transactionHash };
    },
  };
}
