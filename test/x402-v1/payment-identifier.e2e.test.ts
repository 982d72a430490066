import { decodePaymentSignatureHeader } from "@x402/core/http";
import { registerExactEvmScheme } from "@x402/evm/exact/client";
import { appendPaymentIdentifierToExtensions, generatePaymentId } from "@x402/extensions/payment-identifier";
import { wrapFetchWithPayment, x402Client, x402HTTPClient } from "@x402/fetch";
import { createPublicClient, http, parseAbi } from "viem";
import { privateKeyToAccount } from "viem/accounts";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { devPrivateKey } from "../../src/chain/dev-accounts.ts";
import { paymentReceipt } from "../../src/client/paying-fetch.ts";
import { BASE_USDC_ADDRESS } from "../../src/config.ts";
import { defineOperation } from "../../src/contract/operation.ts";
import { atomicPrice } from "../../src/contract/price.ts";
import { csvCleanup } from "../../src/operations/csv-cleanup/index.ts";
import { Problem } from "../../src/problem.ts";
import { openStore } from "../../src/store/open-store.ts";
import { startTestService, type TestService, usdcBalances } from "../helpers/service.ts";

const PRICE = BigInt(atomicPrice(csvCleanup));
const AUTHORIZATION_STATE = parseAbi([
  "function authorizationState(address authorizer, bytes32 nonce) view returns (bool)",
]);

const cleanup = csvCleanup.handler as NonNullable<typeof csvCleanup.handler>;
// Fails its first call (an upstream outage: the payment is released, nothing charged), then works.
let flakyCalls = 0;
const flaky = defineOperation({
  ...csvCleanup,
  id: "test-flaky-cleanup",
  path: "/v1/test-flaky-cleanup",
  handler: async (input, context) => {
    if (flakyCalls++ === 0) {
      throw new Problem(502, "upstream-unavailable", "Upstream unavailable", "the upstream did not answer");
    }
    return cleanup(input, context);
  },
});

/** (Dev accounts #2-#9 hold test USDC on the local chain.) The official v2 client (@x402/fetch) with the payment-identifier the SDK's client helper adds to each payment. */
function payerWithIdentifier(index: number, id: () => string) {
  const account = privateKeyToAccount(devPrivateKey(index));
  const client = x402Client.fromConfig({ schemes: [], spendControls: { maxAmountPerPayment: "$100" } });
  registerExactEvmScheme(client, { signer: account });
  client.onBeforePaymentCreation(async ({ paymentRequired }) => {
    paymentRequired.extensions ??= {};
    appendPaymentIdentifierToExtensions(paymentRequired.extensions, id());
  });
  const httpClient = new x402HTTPClient(client);
  return {
    address: account.address,
    fetch: wrapFetchWithPayment(fetch, client) as typeof fetch,
    /** A signed PAYMENT-SIGNATURE for a 402, not sent. */
    async sign(unpaid: Response) {
      const required = httpClient.getPaymentRequiredResponse((name) => unpaid.headers.get(name));
      return httpClient.encodePaymentSignatureHeader(await httpClient.createPaymentPayload(required));
    },
  };
}

const jsonInit = (body: unknown, headers: Record<string, string> = {}): RequestInit => ({
  method: "POST",
  headers: { "content-type": "application/json", ...headers },
  body: JSON.stringify(body),
});
const rows = (id: string) => ({ rows: [{ id, name: ` ${id} ` }], keyColumns: ["id"] });

describe("the payment-identifier extension: one charge and one result per client-chosen id", () => {
  let service: TestService;
  let balanceOf: ReturnType<typeof usdcBalances>;
  let nonceUsed: (payer: `0x${string}`, nonce: `0x${string}`) => Promise<boolean>;

  beforeAll(async () => {
    service = await startTestService({}, { operations: [csvCleanup, flaky] });
    const rpcUrl = service.localChain?.rpcUrl as string;
    balanceOf = usdcBalances(rpcUrl);
    const chain = createPublicClient({ transport: http(rpcUrl) });
    nonceUsed = (payer, nonce) =>
      chain.readContract({
        address: BASE_USDC_ADDRESS,
        abi: AUTHORIZATION_STATE,
        functionName: "authorizationState",
        args: [payer, nonce],
      });
  });
  afterAll(async () => {
    await service?.stop();
  });

  const nonceOf = (signature: string) =>
    (decodePaymentSignatureHeader(signature).payload as { authorization: { nonce: `0x${string}` } })
      .authorization.nonce;

  it("every 402 declares the extension, optional", async () => {
    const unpaid = await fetch(`${service.url}/v1/csv-cleanup`, jsonInit(rows("declared")));
    const body = await unpaid.json();
    expect(body.extensions["payment-identifier"]).toEqual({ info: { required: false } });
  });

  it("a retry with a new payment under the same id: the first answer, charged once; the second authorization is never settled", async () => {
    const id = generatePaymentId();
    const payer = payerWithIdentifier(2, () => id);
    const url = `${service.url}/v1/csv-cleanup`;
    const before = await balanceOf(payer.address);
    const first = await payer.fetch(url, jsonInit(rows("retry")));
    expect(first.status).toBe(200);
    const firstBody = await first.text();
    const transaction = paymentReceipt(first)?.transaction;

    // The agent did not see that answer and retries: the client signs a new payment (another nonce).
    const second = await payer.sign(await fetch(url, jsonInit(rows("retry"))));
    const retried = await fetch(url, jsonInit(rows("retry"), second));
    expect(retried.status).toBe(200);
    expect(retried.headers.get("x-payment-replayed")).toBe("true");
    expect(await retried.text()).toBe(firstBody);
    expect(paymentReceipt(retried)?.transaction).toBe(transaction);
    expect(await balanceOf(payer.address)).toBe(before - PRICE);
    // The second authorization was verified, not recorded, not sent: its nonce is unused on chain.
    expect(await nonceUsed(payer.address, nonceOf(second["PAYMENT-SIGNATURE"] as string))).toBe(false);
    const store = await openStore(service.config.database);
    expect(
      await store.getPayment(
        `eip155:8453:${BASE_USDC_ADDRESS}:${payer.address}:${nonceOf(second["PAYMENT-SIGNATURE"] as string)}`.toLowerCase(),
      ),
    ).toBeUndefined();
    await store.close();
  });

  it("two payments under the same id at once: one runs and is charged, both get its answer", async () => {
    const id = generatePaymentId();
    const payer = payerWithIdentifier(3, () => id);
    const url = `${service.url}/v1/csv-cleanup`;
    const [a, b] = await Promise.all(
      [0, 1].map(async () => payer.sign(await fetch(url, jsonInit(rows("at-once"))))),
    );
    expect(nonceOf(a?.["PAYMENT-SIGNATURE"] as string)).not.toBe(nonceOf(b?.["PAYMENT-SIGNATURE"] as string));
    const before = await balanceOf(payer.address);
    const answers = await Promise.all(
      [a, b].map((headers) => fetch(url, jsonInit(rows("at-once"), headers))),
    );
    expect(answers.map((answer) => answer.status)).toEqual([200, 200]);
    const [bodyA, bodyB] = await Promise.all(answers.map((answer) => answer.text()));
    expect(bodyB).toBe(bodyA);
    expect(new Set(answers.map((answer) => paymentReceipt(answer)?.transaction)).size).toBe(1);
    expect(await balanceOf(payer.address)).toBe(before - PRICE);
  });

  it("the same id for another request is a 409, nothing charged", async () => {
    const id = generatePaymentId();
    const payer = payerWithIdentifier(4, () => id);
    const url = `${service.url}/v1/csv-cleanup`;
    expect((await payer.fetch(url, jsonInit(rows("one request")))).status).toBe(200);
    const before = await balanceOf(payer.address);
    const other = await payer.fetch(url, jsonInit(rows("another request")));
    expect(other.status).toBe(409);
    const problem = await other.json();
    expect(problem.type).toBe("urn:utility402:problem:payment-already-used");
    expect(problem.detail).toContain("payment-identifier");
    expect(await balanceOf(payer.address)).toBe(before);
  });

  it("the id is honoured through the x402 v1 door too: a v1 retry gets the v2 payment's answer, charged nothing", async () => {
    const id = generatePaymentId();
    const payer = payerWithIdentifier(5, () => id);
    const url = `${service.url}/v1/csv-cleanup`;
    const first = await payer.fetch(url, jsonInit(rows("v2 then v1")));
    expect(first.status).toBe(200);
    const firstBody = await first.text();
    const before = await balanceOf(payer.address);
    const signed = decodePaymentSignatureHeader(
      (await payer.sign(await fetch(url, jsonInit(rows("v2 then v1")))))["PAYMENT-SIGNATURE"] as string,
    );
    const xPayment = Buffer.from(
      JSON.stringify({
        x402Version: 1,
        scheme: "exact",
        network: "base",
        payload: signed.payload,
        extensions: signed.extensions,
      }),
    ).toString("base64");
    const retried = await fetch(url, jsonInit(rows("v2 then v1"), { "X-PAYMENT": xPayment }));
    expect(retried.status).toBe(200);
    expect(retried.headers.get("X-PAYMENT-RESPONSE")).toBeTruthy();
    expect(await retried.text()).toBe(firstBody);
    expect(await balanceOf(payer.address)).toBe(before);
  });

  it("a first payment that charged nothing (the operation failed) frees the id: the retry runs and is charged once", async () => {
    const id = generatePaymentId();
    const payer = payerWithIdentifier(6, () => id);
    const url = `${service.url}/v1/test-flaky-cleanup`;
    const before = await balanceOf(payer.address);
    const failed = await payer.fetch(url, jsonInit(rows("flaky")));
    expect(failed.status).toBe(502);
    expect(await balanceOf(payer.address)).toBe(before);
    const retried = await payer.fetch(url, jsonInit(rows("flaky")));
    expect(retried.status).toBe(200);
    expect(retried.headers.get("x-payment-replayed")).toBeNull();
    expect(await balanceOf(payer.address)).toBe(before - PRICE);
  });

  it("a malformed id is refused as a payment (402 naming the extension), nothing charged", async () => {
    const payer = payerWithIdentifier(7, () => "short");
    const url = `${service.url}/v1/csv-cleanup`;
    await expect(payer.fetch(url, jsonInit(rows("bad id")))).rejects.toThrow(/Invalid payment ID/);
    const valid = payerWithIdentifier(7, () => generatePaymentId());
    const signed = decodePaymentSignatureHeader(
      (await valid.sign(await fetch(url, jsonInit(rows("bad id")))))["PAYMENT-SIGNATURE"] as string,
    );
    const tampered = {
      ...signed,
      extensions: {
        ...signed.extensions,
        "payment-identifier": { info: { required: false, id: "no spaces allowed here" } },
      },
    };
    const before = await balanceOf(valid.address);
    const refused = await fetch(
      url,
      jsonInit(rows("bad id"), {
        "PAYMENT-SIGNATURE": Buffer.from(JSON.stringify(tampered)).toString("base64"),
      }),
    );
    expect(refused.status).toBe(402);
    const problem = await refused.json();
    expect(problem.reason).toBe("invalid_payload");
    expect(problem.detail).toContain("payment-identifier");
    expect(await balanceOf(valid.address)).toBe(before);
  });
});
