import http from "node:http";
import { createPublicClient, createWalletClient, parseAbi, http as viemHttp } from "viem";
import { type PrivateKeyAccount, privateKeyToAccount } from "viem/accounts";
import { base } from "viem/chains";
import { BASE_USDC_ADDRESS } from "../../src/config.ts";
import { freePort } from "./service.ts";

/** Ways a payment can go wrong on the chain's side, for end-to-end tests of the paid pipeline. */

/** The EIP-712 typed data of an EIP-3009 transfer authorization over Base USDC's real domain. */
export function transferAuthorizationTypedData(authorization: {
  from: `0x${string}`;
  to: `0x${string}`;
  value: bigint;
  validAfter: bigint;
  validBefore: bigint;
  nonce: `0x${string}`;
}) {
  return {
    domain: { name: "USD Coin", version: "2", chainId: 8453, verifyingContract: BASE_USDC_ADDRESS },
    types: {
      TransferWithAuthorization: [
        { name: "from", type: "address" },
        { name: "to", type: "address" },
        { name: "value", type: "uint256" },
        { name: "validAfter", type: "uint256" },
        { name: "validBefore", type: "uint256" },
        { name: "nonce", type: "bytes32" },
      ],
    },
    primaryType: "TransferWithAuthorization",
    message: authorization,
  } as const;
}

/** The EIP-3009 signature a payer gives for `authorization`, over Base USDC's real EIP-712 domain. */
export function signTransferAuthorization(
  account: PrivateKeyAccount,
  authorization: Parameters<typeof transferAuthorizationTypedData>[0],
): Promise<`0x${string}`> {
  return account.signTypedData(transferAuthorizationTypedData(authorization));
}

const decodePayment = (payment: Record<string, string>) =>
  JSON.parse(Buffer.from(Object.values(payment)[0] as string, "base64").toString());

/** The ledger key of a signed payment: network, asset, payer and nonce. */
export function paymentKeyOf(payment: Record<string, string>): string {
  const decoded = decodePayment(payment);
  const { from, nonce } = decoded.payload.authorization;
  return `${decoded.accepted.network}:${decoded.accepted.asset}:${from}:${nonce}`.toLowerCase();
}

/** A signed payment's validBefore (epoch seconds): after it, its authorization can no longer land. */
export function validBeforeOf(payment: Record<string, string>): number {
  return Number(decodePayment(payment).payload.authorization.validBefore);
}

/** One JSON-RPC call to the local chain (anvil's own methods too: evm_setAutomine, evm_mine, anvil_*); throws its error. */
export async function chainRpc(rpcUrl: string, method: string, params: unknown[] = []): Promise<unknown> {
  const response = await fetch(rpcUrl, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ jsonrpc: "2.0", id: 1, method, params }),
  });
  const { result, error } = (await response.json()) as { result?: unknown; error?: { message: string } };
  if (error) throw new Error(`${method}: ${error.message}`);
  return result;
}

/**
 * A JSON-RPC relay to anvil that can go dark at the next broadcast: the transaction reaches the chain,
 * and nothing comes back, neither the broadcast's answer (nor a receipt asked for in the same batch)
 * nor any later answer, until heal().
 */
export async function startFlakyRpc(target: string) {
  let darkAfterBroadcast = false;
  let dark = false;
  const server = http.createServer(async (request, response) => {
    const chunks: Buffer[] = [];
    for await (const chunk of request) chunks.push(chunk as Buffer);
    const body = Buffer.concat(chunks).toString();
    if (dark) {
      response.writeHead(503).end("unavailable");
      return;
    }
    const lostAnswer = darkAfterBroadcast && body.includes("eth_sendRawTransaction");
    if (lostAnswer) dark = true;
    const upstream = await fetch(target, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body,
    });
    const text = await upstream.text();
    if (lostAnswer) response.writeHead(503).end("unavailable");
    else response.writeHead(upstream.status, { "content-type": "application/json" }).end(text);
  });
  const port = await freePort();
  await new Promise<void>((resolve) => server.listen(port, "127.0.0.1", resolve));
  return {
    url: `http://127.0.0.1:${port}`,
    goDarkAfterNextBroadcast: () => {
      darkAfterBroadcast = true;
    },
    heal: () => {
      darkAfterBroadcast = false;
      dark = false;
    },
    stop: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}

/**
 * The payer spends its authorization's nonce on a 0-value transfer to itself and mines it, so the
 * payment it signed can no longer settle (the nonce is "consumed" without paying payTo).
 */
export async function spendNonceElsewhere(rpcUrl: string, privateKey: `0x${string}`, nonce: `0x${string}`) {
  const account = privateKeyToAccount(privateKey);
  const authorization = {
    from: account.address,
    to: account.address,
    value: 0n,
    validAfter: 0n,
    validBefore: BigInt(Math.floor(Date.now() / 1000) + 3600),
    nonce,
  };
  const signature = await signTransferAuthorization(account, authorization);
  const wallet = createWalletClient({
    account,
    transport: viemHttp(rpcUrl),
    chain: { ...base, rpcUrls: { default: { http: [rpcUrl] } } },
  });
  const hash = await wallet.writeContract({
    address: BASE_USDC_ADDRESS,
    abi: parseAbi([
      "function transferWithAuthorization(address from, address to, uint256 value, uint256 validAfter, uint256 validBefore, bytes32 nonce, bytes signature)",
    ]),
    functionName: "transferWithAuthorization",
    args: [
      authorization.from,
      authorization.to,
      authorization.value,
      authorization.validAfter,
      authorization.validBefore,
      authorization.nonce,
      signature,
    ],
  });
  await createPublicClient({ transport: viemHttp(rpcUrl) }).waitForTransactionReceipt({ hash });
}
