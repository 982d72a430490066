import { createPublicClient, createWalletClient, http } from "viem";
import { privateKeyToAccount } from "viem/accounts";
import { base } from "viem/chains";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { devPrivateKey } from "../src/chain/dev-accounts.ts";
import { createPayer, type Payer, paymentReceipt } from "../src/client/paying-fetch.ts";
import { csvCleanup } from "../src/operations/csv-cleanup/index.ts";
import { openStore } from "../src/store/open-store.ts";
import { jsonPost, startTestService, type TestService, usdcBalances } from "./helpers/service.ts";

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
    chain = createPublicClient({ transport: http(rpcUrl) });
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
    expect(responses.map((response) => response.status)).toEqual(Array(CONCURRENT).fill(200));
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
      transport: http(service.localChain?.rpcUrl),
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
