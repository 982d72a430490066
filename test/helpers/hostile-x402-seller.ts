import http from "node:http";
import type { AddressInfo } from "node:net";
import { createPublicClient, createWalletClient, type Hex, parseAbi, http as viemHttp } from "viem";
import type { HDAccount } from "viem/accounts";
import { base } from "viem/chains";
import { BASE_USDC_ADDRESS } from "../../src/config.ts";
import { chainRpc } from "./payment-faults.ts";

/**
 * A hostile x402 seller on 127.0.0.1 for the buyer-side guard's tests, backed by a real local chain:
 * it speaks x402 v2 (PAYMENT-REQUIRED / PAYMENT-SIGNATURE / PAYMENT-RESPONSE) or v1 (JSON 402 body,
 * X-PAYMENT, X-PAYMENT-RESPONSE), offers several entries whose prices can change with every quote,
 * sets any maxTimeoutSeconds, and answers a paid call with an honest receipt (settled on chain), no
 * receipt, a lying one (success with an invented transaction) or `success: false` (settling anyway
 * when it likes). It keeps every authorization it receives and can take any of them to the chain
 * (USDC's transferWithAuthorization) whenever it wants, before or after validBefore: the chain
 * decides.
 */

export type Receipt = "honest" | "none" | "lying" | "false" | "false-but-settled";

export interface Offer {
  amount: string;
  payTo: `0x${string}`;
  asset?: `0x${string}`;
}

export interface SellerTerms {
  version: 1 | 2;
  /** The entries of the n-th quote (0-based): prices can change between quotes. */
  offers: (quote: number) => Offer[];
  maxTimeoutSeconds: number;
  receipt: Receipt;
}

export interface HeldAuthorization {
  from: `0x${string}`;
  to: `0x${string}`;
  value: string;
  validAfter: string;
  validBefore: string;
  nonce: Hex;
  signature: Hex;
  version: 1 | 2;
  /** Model time (ms) at which the seller received it. */
  receivedAt: number;
}

const USDC_ABI = parseAbi([
  "function transferWithAuthorization(address from, address to, uint256 value, uint256 validAfter, uint256 validBefore, bytes32 nonce, bytes signature)",
  "function authorizationState(address authorizer, bytes32 nonce) view returns (bool)",
]);

const b64 = (value: unknown) => Buffer.from(JSON.stringify(value)).toString("base64");

export async function startHostileSeller(options: {
  rpcUrl: string;
  /** The account that submits settlements (pays gas). */
  relayer: HDAccount;
  terms: SellerTerms;
  /** The body of a paid answer, from the request's body (default "{}"). */
  respond?: (requestBody: string) => string;
  /** The `extensions` of each v2 402, from its terms (e.g. signed offers, forged or not). */
  extensions?: (required: {
    resource: { url: string };
    accepts: Record<string, unknown>[];
  }) => Promise<Record<string, unknown> | undefined>;
}) {
  const chain = { ...base, rpcUrls: { default: { http: [options.rpcUrl] } } };
  const transport = viemHttp(options.rpcUrl);
  const publicClient = createPublicClient({ chain, transport, pollingInterval: 20 });
  const wallet = createWalletClient({ chain, transport, account: options.relayer });
  let terms = options.terms;
  let quotes = 0;
  const held: HeldAuthorization[] = [];

  // One settlement at a time: the relayer's transaction nonces and the chain's clock are shared.
  let queue: Promise<unknown> = Promise.resolve();
  const settle = (
    authorization: HeldAuthorization,
    options: { atChainTime?: boolean } = {},
  ): Promise<{ settled: boolean; transaction?: Hex }> => {
    const next = queue.then(() => submit(authorization, options));
    queue = next.catch(() => undefined);
    return next;
  };

  /** Submits the authorization; settled when the chain accepted it (it reverts after validBefore or when used). */
  async function submit(
    authorization: HeldAuthorization,
    { atChainTime = false }: { atChainTime?: boolean },
  ): Promise<{ settled: boolean; transaction?: Hex }> {
    // The chain's clock follows the test's (faked) clock: a transfer is judged at the time the test
    // is at; `atChainTime` includes it in the next block after the head instead (after a reorg, the
    // head can be earlier than the test's clock).
    const latest = await publicClient.getBlock({ blockTag: "latest" });
    const wanted = atChainTime ? 0n : BigInt(Math.floor(Date.now() / 1000));
    await chainRpc(options.rpcUrl, "evm_setNextBlockTimestamp", [
      Number(wanted > latest.timestamp ? wanted : latest.timestamp + 1n),
    ]);
    try {
      const hash = await wallet.writeContract({
        address: BASE_USDC_ADDRESS,
        abi: USDC_ABI,
        functionName: "transferWithAuthorization",
        args: [
          authorization.from,
          authorization.to,
          BigInt(authorization.value),
          BigInt(authorization.validAfter),
          BigInt(authorization.validBefore),
          authorization.nonce,
          authorization.signature,
        ],
        gas: 200_000n,
      });
      const receipt = await publicClient.waitForTransactionReceipt({ hash });
      return { settled: receipt.status === "success", transaction: hash };
    } catch {
      return { settled: false };
    }
  }

  const server = http.createServer(async (req, res) => {
    try {
      const chunks: Buffer[] = [];
      for await (const chunk of req) chunks.push(chunk as Buffer);
      const port = (server.address() as AddressInfo).port;
      const url = `http://127.0.0.1:${port}${req.url}`;
      const header = req.headers["payment-signature"] ?? req.headers["x-payment"];
      if (typeof header !== "string") {
        const offers = terms.offers(quotes++);
        const entry = (offer: Offer) => ({
          scheme: "exact",
          payTo: offer.payTo,
          asset: offer.asset ?? BASE_USDC_ADDRESS,
          maxTimeoutSeconds: terms.maxTimeoutSeconds,
          extra: { name: "USD Coin", version: "2" },
        });
        if (terms.version === 1) {
          const accepts = offers.map((offer) => ({
            ...entry(offer),
            network: "base",
            maxAmountRequired: offer.amount,
            resource: url,
            description: "hostile seller",
            mimeType: "application/json",
          }));
          res.writeHead(402, { "content-type": "application/json" });
          res.end(JSON.stringify({ x402Version: 1, error: "X-PAYMENT header is required", accepts }));
          return;
        }
        const required = {
          x402Version: 2,
          resource: { url, description: "hostile seller", mimeType: "application/json" },
          accepts: offers.map((offer) => ({ ...entry(offer), network: "eip155:8453", amount: offer.amount })),
        };
        const extensions = await options.extensions?.(required);
        res
          .writeHead(402, {
            "content-type": "application/json",
            "payment-required": b64(extensions ? { ...required, extensions } : required),
          })
          .end("{}");
        return;
      }
      const payload = JSON.parse(Buffer.from(header, "base64").toString("utf8"));
      const version = payload.x402Version === 1 ? 1 : 2;
      const authorization: HeldAuthorization = {
        ...payload.payload.authorization,
        signature: payload.payload.signature,
        version,
        receivedAt: Date.now(),
      };
      held.push(authorization);
      const receiptHeader = version === 1 ? "x-payment-response" : "payment-response";
      const headers: Record<string, string> = { "content-type": "application/json" };
      const network = version === 1 ? "base" : "eip155:8453";
      switch (terms.receipt) {
        case "honest": {
          const { settled, transaction } = await settle(authorization);
          headers[receiptHeader] = b64(
            settled
              ? { success: true, transaction, network, payer: authorization.from }
              : { success: false, errorReason: "settlement_failed", transaction: "", network },
          );
          break;
        }
        case "lying":
          headers[receiptHeader] = b64({
            success: true,
            transaction: `0x${"ab".repeat(32)}`,
            network,
            payer: authorization.from,
          });
          break;
        case "false-but-settled":
          await settle(authorization);
          headers[receiptHeader] = b64({
            success: false,
            errorReason: "insufficient_funds",
            transaction: "",
            network,
          });
          break;
        case "false":
          headers[receiptHeader] = b64({
            success: false,
            errorReason: "insufficient_funds",
            transaction: "",
            network,
          });
          break;
        case "none":
          break;
      }
      res.writeHead(200, headers).end(options.respond?.(Buffer.concat(chunks).toString("utf8")) ?? "{}");
    } catch (error) {
      res.writeHead(500).end(String(error));
    }
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/paid`,
    held,
    settle,
    setTerms(next: SellerTerms) {
      terms = next;
      quotes = 0;
    },
    /** The chain's answer for every held authorization: used, and the latest block's time. */
    async chainView() {
      const latest = await publicClient.getBlock({ blockTag: "latest" });
      const used = await Promise.all(
        held.map((a) =>
          publicClient.readContract({
            address: BASE_USDC_ADDRESS,
            abi: USDC_ABI,
            functionName: "authorizationState",
            args: [a.from, a.nonce],
            blockNumber: latest.number,
          }),
        ),
      );
      return { time: latest.timestamp, used };
    },
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

/**
 * Makes the head final: anvil reports as "finalized" the block 64 behind the head (and "safe" 32
 * behind), so 64 blocks are mined at the head's own time (anvil's own clock would add the real
 * time elapsed, running ahead of the test's).
 */
export async function finalizeHead(rpcUrl: string): Promise<void> {
  await chainRpc(rpcUrl, "anvil_setBlockTimestampInterval", [0]);
  try {
    await chainRpc(rpcUrl, "anvil_mine", ["0x40"]);
  } finally {
    await chainRpc(rpcUrl, "anvil_removeBlockTimestampInterval", []);
  }
}

/** Moves the chain's clock to the test's (faked) clock by mining one block at that time. */
export async function mineAtNow(rpcUrl: string): Promise<void> {
  const latest = (await chainRpc(rpcUrl, "eth_getBlockByNumber", ["latest", false])) as { timestamp: string };
  const wanted = Math.floor(Date.now() / 1000);
  await chainRpc(rpcUrl, "evm_mine", [Math.max(wanted, Number(BigInt(latest.timestamp)) + 1)]);
}

/**
 * A JSON-RPC endpoint that claims to be another chain (eth_chainId 84532, Base Sepolia) and has never
 * seen any payer's nonce (every eth_call answers zero); everything else is passed to `upstreamUrl`.
 * `asked` lists the methods it was sent.
 */
export async function startOtherChainRpc(
  upstreamUrl: string,
): Promise<{ url: string; asked: string[]; close(): Promise<void> }> {
  const asked: string[] = [];
  const server = http.createServer(async (req, res) => {
    let body = "";
    for await (const chunk of req) body += chunk;
    const call = JSON.parse(body) as { id: number; method: string };
    asked.push(call.method);
    const reply = (result: string) => res.end(JSON.stringify({ jsonrpc: "2.0", id: call.id, result }));
    if (call.method === "eth_chainId") return reply("0x14a34");
    if (call.method === "eth_call") return reply(`0x${"0".repeat(64)}`);
    const upstream = await fetch(upstreamUrl, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body,
    });
    res.end(await upstream.text());
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", () => resolve()));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    asked,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
