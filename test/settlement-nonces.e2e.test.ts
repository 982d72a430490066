import http from "node:http";
import type { AddressInfo } from "node:net";
import pino from "pino";
import { createPublicClient, createWalletClient, parseAbi, http as viemHttp } from "viem";
import { privateKeyToAccount } from "viem/accounts";
import { base } from "viem/chains";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { devAccounts, devPrivateKey } from "../src/chain/dev-accounts.ts";
import { type LocalChain, startLocalChain } from "../src/chain/local-chain.ts";
import { isTransportError } from "../src/chain/transport-failures.ts";
import { createPayer, type Payer, paymentReceipt } from "../src/client/paying-fetch.ts";
import { BASE_USDC_ADDRESS } from "../src/config.ts";
import { csvCleanup } from "../src/operations/csv-cleanup/index.ts";
import { createSettlerSigner } from "../src/payments/settler/settler-signer.ts";
import { openStore } from "../src/store/open-store.ts";
import { freePort, jsonPost, startTestService, type TestService, usdcBalances } from "./helpers/service.ts";

const CSV_PRICE = 2_000_000n;
const CONCURRENT = 32;

/**
 * The settlement nonce allocator under a burst: the settler (dev account #0 on a fresh chain)
 * starts at nonce 0, and 32 paid calls arrive at once, each with its own payment signed
 * beforehand. Every call must settle exactly once, with exactly one transaction each (no nonce
 * handed out twice, none skipped), also after a send was refused for a stale nonce.
 */
describe("settlement nonces under 32 concurrent paid calls", () => {
  let service: TestService;
  let balanceOf: ReturnType<typeof usdcBalances>;
  const payers = Array.from({ length: 8 }, (_, i) => createPayer(devPrivateKey(i + 2)));
  const settler = privateKeyToAccount(devPrivateKey(0));
  let chain: ReturnType<typeof createPublicClient>;

  beforeAll(async () => {
    service = await startTestService({}, { operations: [csvCleanup] });
    const rpcUrl = service.localChain?.rpcUrl as string;
    balanceOf = usdcBalances(rpcUrl);
    chain = createPublicClient({ transport: viemHttp(rpcUrl) });
  });
  afterAll(async () => {
    await service?.stop();
  });

  const settlerNonce = () => chain.getTransactionCount({ address: settler.address, blockTag: "pending" });
  const settledRows = async () => {
    const store = await openStore(service.config.database);
    try {
      return (await store.paymentCounts()).find((row) => row.state === "settled")?.count ?? 0;
    } finally {
      await store.close();
    }
  };

  /** 32 payments signed first, then sent all at once. */
  async function burst(label: string): Promise<Response[]> {
    const url = `${service.url}/v1/csv-cleanup`;
    const requests = await Promise.all(
      Array.from({ length: CONCURRENT }, async (_, i) => {
        const init = jsonPost({ rows: [{ id: `${label}-${i}` }], keyColumns: ["id"] });
        const headers = await (payers[i % payers.length] as Payer).signPayment(await fetch(url, init));
        return jsonPost({ rows: [{ id: `${label}-${i}` }], keyColumns: ["id"] }, headers);
      }),
    );
    return Promise.all(requests.map((init) => fetch(url, init)));
  }

  async function expectEachSettledOnce(responses: Response[], payToBefore: bigint, rowsBefore: number) {
    // A call that is not a 200 shows its problem body in the failure, not only its status.
    const outcomes = await Promise.all(
      responses.map(async (response) =>
        response.status === 200 ? 200 : `${response.status} ${await response.text()}`,
      ),
    );
    expect(outcomes).toEqual(Array(CONCURRENT).fill(200));
    const transactions = new Set(responses.map((response) => paymentReceipt(response)?.transaction));
    expect(transactions.size).toBe(CONCURRENT);
    expect(await balanceOf(service.payTo)).toBe(payToBefore + BigInt(CONCURRENT) * CSV_PRICE);
    expect(await settledRows()).toBe(rowsBefore + CONCURRENT);
  }

  it("settles every call of a burst from a settler at nonce 0, one transaction each", async () => {
    expect(await settlerNonce()).toBe(0);
    const payToBefore = await balanceOf(service.payTo);
    const responses = await burst("fresh");
    await expectEachSettledOnce(responses, payToBefore, 0);
    expect(await settlerNonce()).toBe(CONCURRENT);
  });

  it("recovers from a send refused for a stale nonce without failing or repeating a settlement", async () => {
    // Another sender uses the settler's next nonce behind the service's back: its next broadcast is
    // refused ("nonce too low"), and every settlement of the burst must still land exactly once.
    const outsider = createWalletClient({
      account: settler,
      chain: { ...base, rpcUrls: { default: { http: [service.localChain?.rpcUrl as string] } } },
      transport: viemHttp(service.localChain?.rpcUrl),
    });
    const nonce = await settlerNonce();
    await outsider.sendTransaction({ to: settler.address, value: 0n, nonce });
    const payToBefore = await balanceOf(service.payTo);
    const rowsBefore = await settledRows();
    const responses = await burst("stale");
    await expectEachSettledOnce(responses, payToBefore, rowsBefore);
    expect(await settlerNonce()).toBe(nonce + 1 + CONCURRENT);
  });
});

/**
 * A broadcast the node accepted but whose answer was lost (HTTP 500 after forwarding): the settler
 * must not send the authorization again in another transaction (the second would revert after the
 * first paid). The failure surfaces as a transport error, so the pipeline treats the outcome as
 * unknown and asks the token.
 */
describe("a settlement broadcast whose answer is lost", () => {
  let localChain: LocalChain;
  let proxy: http.Server;
  const rawTransactions = new Set<string>();

  beforeAll(async () => {
    localChain = await startLocalChain({ port: await freePort(), log: pino({ level: "silent" }) });
    proxy = http.createServer(async (request, response) => {
      const chunks: Buffer[] = [];
      for await (const chunk of request) chunks.push(chunk as Buffer);
      const body = Buffer.concat(chunks).toString();
      const calls = [JSON.parse(body)].flat() as { method: string; params: unknown[] }[];
      const upstream = await fetch(localChain.rpcUrl, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body,
      });
      const text = await upstream.text();
      const broadcasts = calls.filter((call) => call.method === "eth_sendRawTransaction");
      for (const call of broadcasts) rawTransactions.add(call.params[0] as string);
      // A gateway error after the node took the transaction; its text even mentions a nonce, the way a
      // proxy may echo an upstream message: still a transport failure, never a reason to send again.
      if (broadcasts.length > 0) response.writeHead(502).end("upstream error: nonce too low");
      else response.writeHead(upstream.status, { "content-type": "application/json" }).end(text);
    });
    await new Promise<void>((resolve) => proxy.listen(0, "127.0.0.1", resolve));
  });
  afterAll(async () => {
    await new Promise<void>((resolve) => {
      proxy?.close(() => resolve());
      proxy?.closeAllConnections();
    });
    await localChain?.stop();
  });

  it("is never sent again in another transaction, and fails as a transport error", async () => {
    const key = devPrivateKey(9);
    const signer = createSettlerSigner({
      privateKey: key,
      rpcUrl: `http://127.0.0.1:${(proxy.address() as AddressInfo).port}`,
      chainId: 8453,
      pollingIntervalMs: 50,
      rpcTimeoutMs: 2000,
      confirmationTimeoutMs: 2000,
    });
    const chain = createPublicClient({ transport: viemHttp(localChain.rpcUrl) });
    const address = privateKeyToAccount(key).address;
    const before = await chain.getTransactionCount({ address, blockTag: "pending" });
    const sent = signer.sendContractCall({
      address: BASE_USDC_ADDRESS,
      abi: parseAbi(["function approve(address spender, uint256 value) returns (bool)"]),
      functionName: "approve",
      args: [devAccounts().payTo.address, 0n],
      gas: 100_000n,
    });
    const error = await sent.then(
      () => undefined,
      (reason: unknown) => reason,
    );
    expect(error).toBeDefined();
    expect(isTransportError(error)).toBe(true);
    // One transaction (viem may repeat the very same bytes; never a second one), and it landed.
    expect(rawTransactions.size).toBe(1);
    expect(await chain.getTransactionCount({ address, blockTag: "pending" })).toBe(before + 1);
  });
});
