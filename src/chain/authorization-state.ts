import { createPublicClient, http, parseAbi, parseAbiItem } from "viem";

const AUTHORIZATION_STATE_ABI = parseAbi([
  "function authorizationState(address authorizer, bytes32 nonce) view returns (bool)",
]);
const AUTHORIZATION_USED = parseAbiItem(
  "event AuthorizationUsed(address indexed authorizer, bytes32 indexed nonce)",
);
/** How far back to look for the transaction that used an authorization (about a day of Base blocks). */
const LOG_LOOKBACK_BLOCKS = 50_000n;

export interface AuthorizationUse {
  used: boolean;
  /** The transaction that used it, when it could be found. */
  transaction?: `0x${string}`;
}

/**
 * Reads from the token itself whether an EIP-3009 authorization was used: the ground truth when
 * a settlement's outcome is unknown (a lost receipt, a crash between broadcast and bookkeeping).
 */
export interface AuthorizationChecker {
  check(asset: `0x${string}`, payer: `0x${string}`, nonce: `0x${string}`): Promise<AuthorizationUse>;
}

export function createAuthorizationChecker(rpcUrl: string): AuthorizationChecker {
  const client = createPublicClient({ transport: http(rpcUrl, { timeout: 10_000, retryCount: 2 }) });
  return {
    async check(asset, payer, nonce) {
      const used = await client.readContract({
        address: asset,
        abi: AUTHORIZATION_STATE_ABI,
        functionName: "authorizationState",
        args: [payer, nonce],
      });
      if (!used) return { used: false };
      const latest = await client.getBlockNumber({ cacheTime: 0 });
      const logs = await client
        .getLogs({
          address: asset,
          event: AUTHORIZATION_USED,
          args: { authorizer: payer, nonce },
          fromBlock: latest > LOG_LOOKBACK_BLOCKS ? latest - LOG_LOOKBACK_BLOCKS : 0n,
          toBlock: latest,
        })
        .catch(() => []);
      return { used: true, transaction: logs[0]?.transactionHash ?? undefined };
    },
  };
}
