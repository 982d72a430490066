import { createHash } from "node:crypto";
import { createPublicClient, http } from "viem";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { isImplemented, OPERATIONS } from "../../src/catalog/registry.ts";
import { devPrivateKey } from "../../src/chain/dev-accounts.ts";
import { createPayer, type Payer, paymentReceipt } from "../../src/client/paying-fetch.ts";
import { BASE_USDC_ADDRESS } from "../../src/config.ts";
import type { AnyOperation } from "../../src/contract/operation.ts";
import { openStore } from "../../src/store/open-store.ts";
import type { Store } from "../../src/store/store.ts";
import { paymentKeyOf } from "../helpers/payment-faults.ts";
import { startTestService, type TestService, usdcBalances } from "../helpers/service.ts";
import { ENVIRONMENT, type RunningEnvironment, startEnvironment } from "./environment.ts";
import {
  type ExampleRequest,
  type InvalidExample,
  invalidExample,
  requestOf,
  validInput,
} from "./examples.ts";
import { FAILURE, failingVariant } from "./failing.ts";

/**
 * The contract every paid operation keeps, checked for each operation of the registry from its own
 * declared example (a new operation gets it without an edit here):
 * 1. an invalid input is a 400 problem+json naming the fields by JSON Pointer, before any 402; a valid
 *    payment sent with it is neither taken nor recorded (a download takes no input: a method it does
 *    not take is its refusal, a 405);
 * 2. no payment: a 402 whose PAYMENT-REQUIRED carries exactly the registry's terms;
 * 3. work that fails after the payment was verified (a throwing handler, or the job of an accepted
 *    asynchronous call) is never charged;
 * 4. success: the answer (a job's result, a download's file) with its settlement transaction, and
 *    exactly the price moved from the payer to payTo on the local chain, paid with the official client.
 * One service runs the registry as it is; a second runs every operation with work that throws.
 */

const PAID = OPERATIONS.filter(isImplemented);
const BASE_NETWORK = "eip155:8453";
const TX_HASH = /^0x[0-9a-f]{64}$/;

/** "2.00" → 2000000n (USDC has 6 decimals), written here rather than imported so the service's own conversion is checked. */
function atomicUsdc(priceUsd: string): bigint {
  const [whole, fraction = ""] = priceUsd.split(".");
  return BigInt(`${whole}${fraction.padEnd(6, "0")}`);
}

interface Examples {
  valid: ExampleRequest;
  invalid?: InvalidExample;
}

/** The operation's valid and invalid requests; throws (failing the test) when it has no example to make them from. */
function examplesOf(operation: AnyOperation): Examples {
  const input = validInput(operation, ENVIRONMENT[operation.id]?.input);
  if (!input) {
    throw new Error(
      `${operation.id} declares no example input (example.input in its definition) and has no input in ` +
        "test/contract/environment.ts: the contract suite cannot call it",
    );
  }
  return { valid: requestOf(operation, input), invalid: invalidExample(operation, input) };
}

const withHeaders = (request: ExampleRequest, headers: Record<string, string>): ExampleRequest => ({
  ...request,
  init: { ...request.init, headers: { ...(request.init.headers as Record<string, string>), ...headers } },
});

const send = (service: TestService, request: ExampleRequest, fetcher: typeof fetch = fetch) =>
  fetcher(`${service.url}${request.pathAndQuery}`, request.init);

/** A payment for the operation, signed by the official client from the 402 its valid request gets (not sent). */
async function signedPayment(payer: Payer, service: TestService, valid: ExampleRequest) {
  const challenge = await send(service, valid);
  expect(challenge.status, await challenge.clone().text()).toBe(402);
  return payer.signPayment(challenge);
}

/** The job behind a 202, polled (as a client does) until both it and its held payment are final. */
async function finishedJob(statusUrl: string) {
  for (let polls = 0; polls < 600; polls++) {
    const job = await (await fetch(statusUrl)).json();
    const paymentFinal = ["settled", "released", "failed"].includes(job.payment?.state);
    if (["succeeded", "failed"].includes(job.status) && paymentFinal) return job;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  throw new Error(`the job at ${statusUrl} did not finish with its payment decided`);
}

describe("the paid-operation contract, for every operation of the registry", () => {
  let environment: RunningEnvironment;
  let service: TestService;
  let failing: TestService;
  let stores: { service: Store; failing: Store };
  const payer = createPayer(devPrivateKey(2));

  beforeAll(async () => {
    environment = await startEnvironment(PAID);
    // One after the other: each picks free ports for itself and its chain.
    service = await startTestService(environment.env, { operations: PAID });
    failing = await startTestService(environment.env, { operations: PAID.map(failingVariant) });
    stores = {
      service: await openStore(service.config.database),
      failing: await openStore(failing.config.database),
    };
  }, 300_000);
  afterAll(async () => {
    await stores?.service.close();
    await stores?.failing.close();
    await service?.stop();
    await failing?.stop();
    await environment?.stop();
  });

  /** Payer's and payTo's USDC on the service's own chain. */
  const balances = async (on: TestService) => {
    const balanceOf = usdcBalances(on.localChain?.rpcUrl as string);
    return { payer: await balanceOf(payer.address), payTo: await balanceOf(on.payTo) };
  };

  it("the environment map names only operations of the registry", () => {
    const ids = new Set(OPERATIONS.map((operation) => operation.id));
    expect(Object.keys(ENVIRONMENT).filter((id) => !ids.has(id))).toEqual([]);
  });

  for (const operation of PAID) {
    const price = atomicUsdc(operation.priceUsd);

    describe(`${operation.method} ${operation.path} (${operation.id}, ${operation.kind})`, () => {
      if (operation.kind === "product") {
        it("a method the download does not take: 405 problem+json before any 402; a valid payment sent with it is not taken", async () => {
          const { valid } = examplesOf(operation);
          const refused = { pathAndQuery: operation.path, init: { method: "POST", body: "{}" } };
          const unpaid = await send(service, refused);
          expect(unpaid.status).toBe(405);
          expect(unpaid.headers.get("content-type")).toContain("application/problem+json");
          expect(unpaid.headers.get("allow")).toBe("GET");
          expect(unpaid.headers.get("PAYMENT-REQUIRED")).toBeNull();

          const payment = await signedPayment(payer, service, valid);
          const before = await balances(service);
          const paid = await send(service, withHeaders(refused, payment));
          expect(paid.status).toBe(405);
          expect(paid.headers.get("PAYMENT-RESPONSE")).toBeNull();
          expect(await stores.service.getPayment(paymentKeyOf(payment))).toBeUndefined();
          expect(await balances(service)).toEqual(before);
        });
      } else {
        it("invalid input: 400 problem+json with JSON Pointers before any 402; a valid payment sent with it is not taken", async () => {
          const { valid, invalid } = examplesOf(operation);
          if (!invalid) {
            throw new Error(`no field of ${operation.id}'s example can be made invalid for its input schema`);
          }
          const expectInvalid = async (response: Response) => {
            expect(response.status, invalid.request.init.body as string).toBe(400);
            expect(response.headers.get("content-type")).toContain("application/problem+json");
            expect(response.headers.get("PAYMENT-REQUIRED")).toBeNull();
            expect(response.headers.get("PAYMENT-RESPONSE")).toBeNull();
            const problem = await response.json();
            expect(problem).toMatchObject({ status: 400, type: "urn:utility402:problem:invalid-request" });
            const pointers = problem.errors.map((error: { pointer: string }) => error.pointer);
            expect([...new Set(pointers)].sort()).toEqual([...invalid.pointers].sort());
          };
          await expectInvalid(await send(service, invalid.request));

          const payment = await signedPayment(payer, service, valid);
          const before = await balances(service);
          await expectInvalid(await send(service, withHeaders(invalid.request, payment)));
          expect(await stores.service.getPayment(paymentKeyOf(payment))).toBeUndefined();
          expect(await balances(service)).toEqual(before);
        });
      }

      it("no payment: 402 with exactly the registry's terms in PAYMENT-REQUIRED", async () => {
        const { valid } = examplesOf(operation);
        const response = await send(service, valid);
        expect(response.status).toBe(402);
        const header = response.headers.get("PAYMENT-REQUIRED");
        expect(header).toBeTruthy();
        const required = JSON.parse(Buffer.from(header as string, "base64").toString("utf8"));
        expect(required.x402Version).toBe(2);
        expect(new URL(required.resource.url).pathname).toBe(operation.path);
        expect(required.accepts).toHaveLength(1);
        const [terms] = required.accepts;
        expect(terms).toMatchObject({ scheme: "exact", network: BASE_NETWORK, amount: price.toString() });
        expect(terms.asset.toLowerCase()).toBe(BASE_USDC_ADDRESS.toLowerCase());
        expect(terms.payTo.toLowerCase()).toBe(service.payTo.toLowerCase());
      });

      it("work that fails after the payment was verified: nothing charged, the payment released", async () => {
        const { valid } = examplesOf(operation);
        const payment = await signedPayment(payer, failing, valid);
        const before = await balances(failing);
        const response = await send(failing, withHeaders(valid, payment));
        expect(response.headers.get("PAYMENT-RESPONSE")).toBeNull();
        if (operation.kind === "async") {
          // Accepted and held; the job fails, so the held payment is released, never settled.
          expect(response.status).toBe(202);
          const job = await finishedJob((await response.json()).statusUrl);
          expect(job).toMatchObject({ status: "failed", payment: { state: "released" } });
          expect(job.payment.transaction).toBeUndefined();
        } else {
          expect(response.status).toBe(500);
          expect(response.headers.get("content-type")).toContain("application/problem+json");
          const problem = await response.json();
          expect(problem.detail).toContain("nothing was charged");
          expect(JSON.stringify(problem)).not.toContain(FAILURE);
        }
        expect((await stores.failing.getPayment(paymentKeyOf(payment)))?.state).toBe("released");
        expect(await balances(failing)).toEqual(before);
      });

      it("success: the answer with its settlement transaction, exactly the price moved from payer to payTo", async () => {
        const { valid } = examplesOf(operation);
        const before = await balances(service);
        const response = await send(service, valid, payer.fetch);
        let transaction: string | undefined;
        if (operation.kind === "async") {
          // Accepted with the payment held: nothing settled yet; the delivered job settles it.
          expect(response.status, await response.clone().text()).toBe(202);
          expect(paymentReceipt(response)).toBeUndefined();
          const job = await finishedJob((await response.json()).statusUrl);
          expect(job).toMatchObject({
            status: "succeeded",
            payment: { state: "settled", amount: price.toString(), network: BASE_NETWORK },
          });
          expect(operation.jobResult?.safeParse(job.result).success ?? true).toBe(true);
          transaction = job.payment.transaction;
        } else {
          expect(response.status, await response.clone().text()).toBe(200);
          const receipt = paymentReceipt(response);
          expect(receipt).toMatchObject({ success: true, network: BASE_NETWORK });
          expect(receipt?.payer?.toLowerCase()).toBe(payer.address.toLowerCase());
          transaction = receipt?.transaction;
          if (operation.kind === "product") {
            // The release the catalog lists, byte for byte.
            const catalog = await (await fetch(`${service.url}/catalog.json`)).json();
            const entry = catalog.products.find((product: { id: string }) => product.id === operation.id);
            expect(response.headers.get("content-type")).toBe("application/zip");
            const file = Buffer.from(await response.arrayBuffer());
            expect(file.length).toBe(entry.release.size);
            expect(createHash("sha256").update(file).digest("hex")).toBe(entry.release.sha256);
          } else {
            const parsed = operation.output.safeParse(await response.json());
            expect(parsed.error).toBeUndefined();
          }
        }
        expect(transaction).toMatch(TX_HASH);
        const chain = createPublicClient({ transport: http(service.localChain?.rpcUrl) });
        const mined = await chain.getTransactionReceipt({ hash: transaction as `0x${string}` });
        expect(mined.status).toBe("success");
        expect(await balances(service)).toEqual({ payer: before.payer - price, payTo: before.payTo + price });
      });
    });
  }
});
