import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { decodePaymentRequiredHeader } from "@x402/core/http";
import { registerExactEvmScheme } from "@x402/evm/exact/client";
import {
  createSIWxClientExtension,
  createSIWxPayload,
  encodeSIWxHeader,
  SIGN_IN_WITH_X,
  type SIWxExtension,
  wrapFetchWithSIWx,
} from "@x402/extensions/sign-in-with-x";
import { wrapFetchWithPayment, x402Client } from "@x402/fetch";
import { privateKeyToAccount } from "viem/accounts";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { devPrivateKey } from "../src/chain/dev-accounts.ts";
import { createPayer } from "../src/client/paying-fetch.ts";
import { researchBrief } from "../src/operations/research-brief/index.ts";
import { MAX_PAYMENT_REQUIRED_BYTES } from "../src/payments/resource-server/terms.ts";
import { buildProducts } from "../src/products/build.ts";
import { products } from "../src/products/index.ts";
import { jsonPost, startTestService, type TestService, usdcBalances } from "./helpers/service.ts";
import { QUESTION, researchEnv, type StandIns, startStandIns } from "./operations/research-brief-standins.ts";

const SLUG = "csv-json-quality-toolkit";
const PRICE = 9_000_000n;

/** A fetch that remembers the SIGN-IN-WITH-X header, and the PAYMENT-SIGNATURE length, of every request it sends. */
function recordingFetch() {
  const sent: string[] = [];
  const paymentSignatureLengths: number[] = [];
  const recorder: typeof fetch = async (input, init) => {
    const request = new Request(input, init);
    const header = request.headers.get(SIGN_IN_WITH_X);
    if (header) sent.push(header);
    const payment = request.headers.get("payment-signature");
    if (payment) paymentSignatureLengths.push(payment.length);
    return fetch(request);
  };
  return { fetch: recorder, sent, paymentSignatureLengths };
}

/** The official client an agent uses: sign in first (wrapFetchWithSIWx), pay (@x402/fetch) if still asked to. */
function signInThenPay(privateKey: `0x${string}`, inner: typeof fetch = fetch) {
  const account = privateKeyToAccount(privateKey);
  const client = x402Client.fromConfig({ schemes: [], spendControls: { maxAmountPerPayment: "$100" } });
  registerExactEvmScheme(client, { signer: account });
  return wrapFetchWithPayment(wrapFetchWithSIWx(inner, account), client) as typeof fetch;
}

/** A SIGN-IN-WITH-X header built by the official package from a route's 402 challenge, for `url`. */
async function signedHeader(challengeUrl: string, privateKey: `0x${string}`, url = challengeUrl) {
  const answer = await fetch(challengeUrl);
  expect(answer.status).toBe(402);
  const required = decodePaymentRequiredHeader(answer.headers.get("payment-required") as string);
  const extension = required.extensions?.[SIGN_IN_WITH_X] as SIWxExtension;
  const chain = extension.supportedChains[0] as SIWxExtension["supportedChains"][number];
  const payload = await createSIWxPayload(
    { ...extension.info, chainId: chain.chainId, type: chain.type },
    privateKeyToAccount(privateKey),
    url,
  );
  return encodeSIWxHeader(payload);
}

describe("sign-in-with-x: a buyer downloads again, a payer finds its jobs", () => {
  let service: TestService;
  let standIns: StandIns;
  let balanceOf: ReturnType<typeof usdcBalances>;
  const work = fs.mkdtempSync(path.join(os.tmpdir(), "utility402-sign-in-"));
  const releasesDir = path.join(work, "releases");
  const buyer = devPrivateKey(2);
  const stranger = devPrivateKey(3);
  const briefPayer = devPrivateKey(4);

  beforeAll(async () => {
    for (const outcome of await buildProducts({ releasesDir, clinicalDb: path.join(work, "none.sqlite") }, [
      SLUG,
    ])) {
      if (outcome.state === "unbuildable") throw new Error(outcome.reason);
    }
    standIns = await startStandIns();
    service = await startTestService(
      { ...researchEnv(standIns), RELEASES_DIR: releasesDir },
      { operations: [...products.filter((product) => product.id === `product-${SLUG}`), researchBrief] },
    );
    balanceOf = usdcBalances(service.localChain?.rpcUrl as string);
  }, 180_000);

  afterAll(async () => {
    await service?.stop();
    await standIns?.stop();
    fs.rmSync(work, { recursive: true, force: true });
  });

  it("the discovery documents name the routes that take a sign-in", async () => {
    const productPath = `/v1/products/${SLUG}`;
    const openapi = await (await fetch(`${service.url}/openapi.json`)).json();
    expect(openapi.paths[productPath].get["x-sign-in-with-x"]).toMatchObject({ header: "SIGN-IN-WITH-X" });
    expect(openapi.paths["/v1/jobs"].get.responses).toHaveProperty("402");
    expect(openapi.paths["/v1/jobs/{id}"].get.responses).toHaveProperty("403");
    const manifest = await (await fetch(`${service.url}/.well-known/x402`)).json();
    expect(manifest.signIn).toMatchObject({ extension: "sign-in-with-x", chains: ["eip155:8453"] });
    expect(manifest.signIn.routes.map((route: { path: string }) => route.path)).toEqual([
      productPath,
      "/v1/jobs",
      "/v1/jobs/{id}",
    ]);
    const llms = await (await fetch(`${service.url}/llms.txt`)).text();
    expect(llms).toContain(`GET ${service.url}/v1/jobs\``);
    const skills = await (await fetch(`${service.url}/.well-known/agent-skills/index.json`)).json();
    const productSkill = skills.skills.find((skill: { name: string }) => skill.name === `product-${SLUG}`);
    const skill = await (await fetch(new URL(productSkill.url, service.url))).text();
    expect(skill).toContain("wrapFetchWithSIWx");
  });

  it("the 402 of a product carries a fresh sign-in challenge bound to this origin, route and chain", async () => {
    const url = `${service.url}/v1/products/${SLUG}`;
    const [first, second] = [await fetch(url), await fetch(url)];
    const challenges = [first, second].map((answer) => {
      expect(answer.status).toBe(402);
      const required = decodePaymentRequiredHeader(answer.headers.get("payment-required") as string);
      return required.extensions?.[SIGN_IN_WITH_X] as SIWxExtension;
    });
    const [one, two] = challenges as [SIWxExtension, SIWxExtension];
    // With the challenge, every response's headers still fit a proxy's 4 KB buffer (terms.ts).
    const headerLength = (first.headers.get("payment-required") as string).length;
    console.log(`PAYMENT-REQUIRED of a product with its sign-in challenge: ${headerLength} bytes`);
    expect(headerLength).toBeLessThanOrEqual(MAX_PAYMENT_REQUIRED_BYTES);
    expect(one.info).toMatchObject({ domain: new URL(service.url).host, uri: url, version: "1" });
    expect(one.supportedChains).toEqual([{ chainId: "eip155:8453", type: "eip191" }]);
    // Five minutes (the package reads the clock twice, for issuedAt and for expirationTime).
    const lifetime = Date.parse(one.info.expirationTime as string) - Date.parse(one.info.issuedAt);
    expect(lifetime).toBeGreaterThanOrEqual(300_000);
    expect(lifetime).toBeLessThan(301_000);
    expect(one.info.nonce).not.toBe(two.info.nonce);
  });

  it("re-downloads with wrapFetchWithSIWx: same bytes, nothing charged; another wallet gets the 402; a replay is refused", async () => {
    const url = `${service.url}/v1/products/${SLUG}`;
    const before = await balanceOf(privateKeyToAccount(buyer).address);

    // First purchase through the combined client: the sign-in is not enough (never bought), so it pays.
    const purchase = recordingFetch();
    const bought = await signInThenPay(buyer, purchase.fetch)(url);
    console.log(`PAYMENT-SIGNATURE of the purchase: ${purchase.paymentSignatureLengths.join(", ")} bytes`);
    // nginx reads a request header line into an 8 KB large_client_header_buffers buffer; held to the 4 KB the nginx test holds every route to.
    expect(Math.max(...purchase.paymentSignatureLengths)).toBeLessThanOrEqual(4096);
    expect(bought.status).toBe(200);
    expect(bought.headers.get("payment-response")).toBeTruthy();
    const bytes = Buffer.from(await bought.arrayBuffer());
    expect(await balanceOf(privateKeyToAccount(buyer).address)).toBe(before - PRICE);

    // Again, signing in only (the official wrapper alone, no payment client): the same bytes, free.
    const recorder = recordingFetch();
    const again = await wrapFetchWithSIWx(recorder.fetch, privateKeyToAccount(buyer))(url);
    expect(again.status).toBe(200);
    expect(again.headers.get("x-sign-in-with-x")).toBe("granted");
    expect(again.headers.get("payment-response")).toBeNull();
    expect(Buffer.from(await again.arrayBuffer()).equals(bytes)).toBe(true);
    // The combined client, too, downloads without paying now.
    const third = await signInThenPay(buyer)(url);
    expect(third.status).toBe(200);
    expect(Buffer.from(await third.arrayBuffer()).equals(bytes)).toBe(true);
    expect(await balanceOf(privateKeyToAccount(buyer).address)).toBe(before - PRICE);

    // The same signed message again: refused (its nonce is spent), nothing served.
    expect(recorder.sent).toHaveLength(1);
    const replay = await fetch(url, { headers: { [SIGN_IN_WITH_X]: recorder.sent[0] as string } });
    expect(replay.status).toBe(401);
    const problem = await replay.json();
    expect(problem).toMatchObject({ type: "urn:utility402:problem:sign-in-rejected", status: 401 });
    expect(problem.errors).toEqual([{ pointer: "/nonce", message: expect.stringContaining("used already") }]);

    // A forged message (the buyer's address, another wallet's signature) and a header that is no message at
    // all: a 401 naming the field, nothing served.
    const forged = JSON.parse(Buffer.from(await signedHeader(url, stranger), "base64").toString());
    forged.address = privateKeyToAccount(buyer).address;
    const forgedAnswer = await fetch(url, {
      headers: { [SIGN_IN_WITH_X]: Buffer.from(JSON.stringify(forged)).toString("base64") },
    });
    expect(forgedAnswer.status).toBe(401);
    expect((await forgedAnswer.json()).errors[0].pointer).toBe("/signature");
    const garbage = await fetch(url, { headers: { [SIGN_IN_WITH_X]: "not base64!" } });
    expect(garbage.status).toBe(401);
    expect(garbage.headers.get("content-type")).toBe("application/problem+json");
    expect((await garbage.json()).errors[0].pointer).toBe("");

    // A wallet that never bought: signed in, still the 402, nothing charged.
    const strangerBefore = await balanceOf(privateKeyToAccount(stranger).address);
    const refused = await wrapFetchWithSIWx(fetch, privateKeyToAccount(stranger))(url);
    expect(refused.status).toBe(402);
    expect(refused.headers.get("payment-required")).toBeTruthy();
    expect(await balanceOf(privateKeyToAccount(stranger).address)).toBe(strangerBefore);
    // Its sign-in for the product it did not buy does not open a Range either.
    const header = await signedHeader(url, stranger);
    const ranged = await fetch(url, { headers: { [SIGN_IN_WITH_X]: header, range: "bytes=0-9" } });
    expect(ranged.status).toBe(402);
  });

  /** The brief paid for in the test below, for the replay test after it. */
  let paidBrief:
    | { request: Record<string, unknown>; payment: Record<string, string>; jobId?: string }
    | undefined;

  it("the payer lists and reads its research job by signing in; another wallet cannot", async () => {
    const payer = createPayer(briefPayer);
    const request = { question: QUESTION, requiredSources: 3, maxWords: 200 };
    const unpaid = await fetch(`${service.url}/v1/research-brief`, jsonPost(request));
    paidBrief = { request, payment: await payer.signPayment(unpaid) };
    const accepted = await fetch(`${service.url}/v1/research-brief`, jsonPost(request, paidBrief.payment));
    expect(accepted.status).toBe(202);
    const { jobId } = await accepted.json();
    paidBrief.jobId = jobId;
    const listUrl = `${service.url}/v1/jobs`;

    // Without a sign-in: a 402 asking for one (accepts: [], nothing to pay), a problem+json body.
    const asked = await fetch(listUrl);
    expect(asked.status).toBe(402);
    const askedBody = await asked.json();
    expect(askedBody.type).toBe("urn:utility402:problem:sign-in-required");
    // A v1 client reads `error` and an empty `accepts`: told to sign in, not to send X-PAYMENT.
    expect(askedBody).toMatchObject({ accepts: [], error: expect.stringMatching(/^sign-in required/) });

    // The official client with the official sign-in extension: the payer's own jobs, each as its view.
    const client = new x402Client().registerExtension(
      createSIWxClientExtension({ signers: [privateKeyToAccount(briefPayer)] }),
    );
    const listed = await wrapFetchWithPayment(fetch, client)(listUrl);
    expect(listed.status).toBe(200);
    const mine = await listed.json();
    expect(mine.payer).toBe(payer.address.toLowerCase());
    expect(mine.jobs.map((job: { id: string }) => job.id)).toEqual([jobId]);
    expect(mine.jobs[0]).toMatchObject({ type: "research-brief" });

    // Another wallet signed in: none of them.
    const theirs = await wrapFetchWithPayment(
      fetch,
      new x402Client().registerExtension(
        createSIWxClientExtension({ signers: [privateKeyToAccount(stranger)] }),
      ),
    )(listUrl);
    expect(theirs.status).toBe(200);
    expect((await theirs.json()).jobs).toEqual([]);

    // Reading the job signed in: the payer reads it, another wallet gets a 403 naming why.
    const jobUrl = `${listUrl}/${jobId}`;
    const own = await fetch(jobUrl, {
      headers: { [SIGN_IN_WITH_X]: await signedHeader(listUrl, briefPayer) },
    });
    expect(own.status).toBe(200);
    expect((await own.json()).id).toBe(jobId);
    const other = await fetch(jobUrl, {
      headers: { [SIGN_IN_WITH_X]: await signedHeader(listUrl, stranger) },
    });
    expect(other.status).toBe(403);
    expect(await other.json()).toMatchObject({
      type: "urn:utility402:problem:not-the-payer",
      errors: [{ pointer: "/address", message: expect.any(String) }],
    });
  });

  /**
   * A settled payment is public (the transfer's calldata holds the authorization and its signature, the 402
   * the rest of the payload), so its replay, even at once and with the exact input, is a 409 without the job
   * id, which alone reads the brief: only the paying wallet's sign-in finds the job (GET /v1/jobs).
   */
  it("a replay of the settled brief payment, even with the exact input, is a 409 that does not name the job", async () => {
    const { request, payment, jobId } = paidBrief as NonNullable<typeof paidBrief>;
    const deadline = Date.now() + 60_000;
    let state = "";
    while (state !== "succeeded" && Date.now() < deadline) {
      state = (await (await fetch(`${service.url}/v1/jobs/${jobId}`)).json()).status;
      if (state === "failed") throw new Error("the brief failed");
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    expect(state).toBe("succeeded");
    const sameInput = await fetch(`${service.url}/v1/research-brief`, jsonPost(request, payment));
    expect(sameInput.status).toBe(409);
    const refusal = await sameInput.text();
    expect(refusal).not.toContain(jobId as string);
    expect(refusal).toContain("GET /v1/jobs with a SIGN-IN-WITH-X header");
    const otherInput = await fetch(
      `${service.url}/v1/research-brief`,
      jsonPost({ ...request, maxWords: 201 }, payment),
    );
    expect(otherInput.status).toBe(409);
    expect(await otherInput.text()).not.toContain(jobId as string);
  });
});
