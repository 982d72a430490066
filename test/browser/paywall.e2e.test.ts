import { createHash } from "node:crypto";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { SIGN_IN_WITH_X } from "@x402/extensions/sign-in-with-x";
import type { BrowserContext, Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { devAccount } from "../../src/chain/dev-accounts.ts";
import { PAYWALL_CSP } from "../../src/http/paywall/paywall-page.ts";
import { tenderShortlistGet } from "../../src/operations/tender-shortlist/index.ts";
import { PAYMENT_REQUIRED_HEADER } from "../../src/payments/headers.ts";
import type { ReleaseDescriptor } from "../../src/products/release.ts";
import { fixturePages, startTedStandIn, type TedStandIn } from "../fixtures/ted/stand-in.ts";
import { chromiumInstalled, launchChromium } from "../helpers/chromium.ts";
import { buildOneRelease } from "../helpers/one-release.ts";
import { startTestService, type TestService, usdcBalances } from "../helpers/service.ts";

/**
 * The paywall page for people, in Debian's Chromium (headless, driven by playwright-core over the DevTools
 * protocol): a browser opening a paid GET gets a 402 page naming the resource and its price, and pays from
 * it with a browser wallet. The wallet is an EIP-1193 provider injected into every page before its scripts
 * run; it answers from the local anvil chain, which signs with the payer's dev key (eth_signTypedData_v4).
 * Every request the browser makes must go to the service itself (the page loads nothing from a CDN), and
 * the page must run under its Content-Security-Policy without a violation. Pays a product (the ZIP saved)
 * and the tender shortlist's GET (TED a stand-in replaying a recorded search; the shortlist shown). CI installs chromium
 * (.ci/run); without it this test fails there, and skips elsewhere.
 */

const PRODUCT = "csv-json-quality-toolkit";
const PRODUCT_PRICE = 9_000_000n; // USDC atomic units ($9.00)
const TENDER_PRICE = 150_000n; // $0.15
const PAYER = 8;
/** A browser's own navigation request headers (Chromium sends these; set here so no test depends on its defaults). */
const BROWSER_ACCEPT = "text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8";

describe.skipIf(chromiumInstalled.skip)("the paywall page in Chromium", () => {
  let work = ""; // made in beforeAll: a skipped suite runs its body but not its hooks
  const payerAddress = devAccount(PAYER).address;
  let service: TestService | undefined;
  let ted: TedStandIn | undefined;
  let browser: BrowserContext | undefined;
  let page: Page;
  let descriptor: ReleaseDescriptor;
  let balanceOf: ReturnType<typeof usdcBalances>;
  /** Console messages, page errors, failed requests: printed with a failing assertion. */
  const browserLog: string[] = [];
  /** Every URL the browser asked for that is not the service's. */
  const elsewhere: string[] = [];
  /** The wallet calls the page made, by method. */
  const walletCalls: string[] = [];
  /**
   * How the wallet signs: as the payer; not at all (the person rejects the request, EIP-1193 code 4001);
   * or with another account's key while naming the payer (a signature the service must refuse).
   */
  let signing: "payer" | "rejected" | "other-key" = "payer";

  /** The injected wallet's backend: the dev account's anvil, as a browser wallet answers a page. */
  async function walletRequest(method: string, params: unknown[]): Promise<unknown> {
    walletCalls.push(method);
    // Lower case, as MetaMask shares accounts: the page must not depend on the checksum form.
    if (method === "eth_requestAccounts" || method === "eth_accounts") return [payerAddress.toLowerCase()];
    if (method === "eth_signTypedData_v4" && signing === "rejected") {
      throw new Error("User rejected the request.");
    }
    if (method === "eth_signTypedData_v4" && signing === "other-key") {
      params = [devAccount(PAYER + 1).address, ...params.slice(1)];
    }
    if (!["eth_chainId", "eth_signTypedData_v4"].includes(method)) {
      throw new Error(`the test wallet does not do ${method}`);
    }
    const response = await fetch(service?.localChain?.rpcUrl as string, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ jsonrpc: "2.0", id: 1, method, params }),
    });
    const answer = (await response.json()) as { result?: unknown; error?: { message: string } };
    if (answer.error) throw new Error(answer.error.message);
    return answer.result;
  }

  beforeAll(async () => {
    chromiumInstalled.check();
    const built = await buildOneRelease(PRODUCT, "utility402-paywall-");
    ({ work, descriptor } = built);
    const { releasesDir, product } = built;
    // TED answers with a recorded search, its dates moved to a clock frozen near now (as the tender tests do).
    const now = new Date(Math.floor(Date.now() / 1000) * 1000);
    const pages = fixturePages("search-response-03.json", now);
    ted = await startTedStandIn((request) => ({
      body: pages[(request.page as number) - 1] ?? { ...pages[0], notices: [] },
    }));
    service = await startTestService(
      { RELEASES_DIR: releasesDir, TED_API_URL: ted.url },
      { operations: [product, tenderShortlistGet], clock: () => now.getTime() },
    );
    balanceOf = usdcBalances(service.localChain?.rpcUrl as string);
    const origin = new URL(service.url).origin;

    browser = await launchChromium(path.join(work, "profile"));
    // Offline: the browser reaches the service and nothing else.
    await browser.route("**/*", (route) => {
      const url = route.request().url();
      if (new URL(url).origin === origin || url.startsWith("blob:")) return route.continue();
      elsewhere.push(url);
      return route.abort("internetdisconnected");
    });
    await browser.exposeFunction("utility402TestWallet", walletRequest);
    await browser.addInitScript(() => {
      const call = (globalThis as unknown as Record<string, (m: string, p: unknown[]) => Promise<unknown>>)
        .utility402TestWallet as (method: string, params: unknown[]) => Promise<unknown>;
      (globalThis as unknown as { ethereum: unknown }).ethereum = {
        request: ({ method, params }: { method: string; params?: unknown[] }) => call(method, params ?? []),
      };
    });
    page = browser.pages()[0] ?? (await browser.newPage());
    await page.setExtraHTTPHeaders({ accept: BROWSER_ACCEPT });
    page.on("console", (message) => browserLog.push(`console.${message.type()}: ${message.text()}`));
    page.on("pageerror", (error) => browserLog.push(`pageerror: ${error.message}`));
    page.on("requestfailed", (request) =>
      browserLog.push(`failed: ${request.method()} ${request.url()}: ${request.failure()?.errorText}`),
    );
  }, 240_000);

  afterAll(async () => {
    await browser?.close();
    await service?.stop();
    await ted?.close();
    if (work) fs.rmSync(work, { recursive: true, force: true });
  });

  /** A screenshot kept after the run (os.tmpdir()), its path printed. */
  async function screenshot(name: string): Promise<void> {
    const file = path.join(os.tmpdir(), `utility402-paywall-${name}.png`);
    await page.screenshot({ path: file, fullPage: true });
    console.log(`paywall screenshot (${name}): ${file}`);
  }

  /** What an agent gets on the same URL: the 402 as before, JSON. */
  const agent402 = (url: string) => fetch(url, { headers: { accept: "application/json" } });

  /**
   * The 402 of clients that are not a browser asking for HTML, the same bytes for each: no Accept, `*\/*`,
   * JSON, and a Mozilla User-Agent that does not ask for HTML (a browser's fetch()).
   */
  /** A PAYMENT-REQUIRED header without its per-request sign-in challenge (a fresh nonce every time). */
  function withoutSignInChallenge(header: string): string {
    const decoded = JSON.parse(Buffer.from(header, "base64").toString("utf8"));
    if (!decoded.extensions?.[SIGN_IN_WITH_X]) return header;
    delete decoded.extensions[SIGN_IN_WITH_X];
    return Buffer.from(JSON.stringify(decoded)).toString("base64");
  }

  async function agentAnswers(url: string) {
    const variants: Record<string, string>[] = [
      {},
      { accept: "*/*" },
      { accept: "application/json" },
      { accept: "*/*", "user-agent": "Mozilla/5.0 (X11; Linux x86_64) Chrome/140.0.0.0" },
      { accept: "text/html", "user-agent": "curl/8.5.0" },
    ];
    return Promise.all(
      variants.map(async (headers) => {
        const response = await fetch(url, { headers });
        const { "x-request-id": _id, date: _date, ...rest } = Object.fromEntries(response.headers);
        const required = rest[PAYMENT_REQUIRED_HEADER.toLowerCase()];
        if (required) rest[PAYMENT_REQUIRED_HEADER.toLowerCase()] = withoutSignInChallenge(required);
        const body = JSON.parse(await response.text());
        delete body.extensions?.[SIGN_IN_WITH_X];
        return { status: response.status, headers: rest, body };
      }),
    );
  }

  it("a browser opening a product gets the 402 page: what it is, the price, a wallet button; agents still get JSON", async () => {
    const running = service as TestService;
    const url = `${running.url}/v1/products/${PRODUCT}`;
    const navigation = await page.goto(url);
    expect(navigation?.status()).toBe(402);
    const headers = navigation?.headers() ?? {};
    expect(headers["content-type"]).toBe("text/html; charset=utf-8");
    expect(headers["content-security-policy"]).toBe(PAYWALL_CSP);
    const agent = await agent402(url);
    expect(agent.status).toBe(402);
    expect(agent.headers.get("content-type")).toBe("application/problem+json");
    expect(agent.headers.get("content-security-policy")).toBeNull();
    // The same terms; an agent's also carry a fresh sign-in challenge (a buyer downloads again by signing in).
    expect(headers[PAYMENT_REQUIRED_HEADER.toLowerCase()]).toBe(
      withoutSignInChallenge(agent.headers.get(PAYMENT_REQUIRED_HEADER) ?? ""),
    );
    expect(await agent.json()).toMatchObject({ accepts: [{ maxAmountRequired: String(PRODUCT_PRICE) }] });
    const [first, ...others] = await agentAnswers(url);
    expect(first?.headers["content-type"]).toBe("application/problem+json");
    for (const other of others) expect(other).toEqual(first);

    await expect.poll(() => page.locator("#connect").isEnabled(), { timeout: 30_000 }).toBe(true);
    expect(await page.locator("h1").textContent()).toContain("CSV/JSON");
    expect(await page.locator("#price").textContent()).toBe("$9.00 USDC");
    expect(await page.locator("#pay").textContent()).toBe("Pay $9.00");
    // The test service runs on its local test chain: the page warns people off real wallets.
    expect(await page.locator("#test-chain").textContent()).toContain("Pay only from a test wallet");
    await screenshot(PRODUCT);
    expect(browserLog.filter((line) => /Content Security Policy|pageerror/.test(line))).toEqual([]);
    expect(elsewhere).toEqual([]);
  });

  /** Opens the product's page afresh and connects the wallet. */
  async function openAndConnect(): Promise<void> {
    await page.goto(`${(service as TestService).url}/v1/products/${PRODUCT}`);
    await expect.poll(() => page.locator("#connect").isEnabled(), { timeout: 30_000 }).toBe(true);
    await page.locator("#connect").click();
    await expect.poll(() => page.locator("#pay").isEnabled(), { timeout: 30_000 }).toBe(true);
  }

  it("a payment the wallet rejects or the service refuses says why on the page, and charges nothing", async () => {
    const running = service as TestService;
    const before = [await balanceOf(payerAddress), await balanceOf(running.payTo)];
    await openAndConnect();
    try {
      signing = "rejected";
      await page.locator("#pay").click();
      await expect
        .poll(() => page.locator("#status").textContent(), { timeout: 30_000 })
        .toBe("Not paid: User rejected the request.");
      await expect.poll(() => page.locator("#pay").isEnabled()).toBe(true);

      signing = "other-key";
      await page.locator("#pay").click();
      await expect
        .poll(() => page.locator("#status").textContent(), { timeout: 60_000 })
        .toMatch(/^Not paid: .*signature/i);
      await screenshot(`${PRODUCT}-refused`);
    } finally {
      signing = "payer";
    }
    expect([await balanceOf(payerAddress), await balanceOf(running.payTo)]).toEqual(before);
    expect(await page.locator("#result").isHidden()).toBe(true);
  });

  it("pays from the page with the injected wallet: the ZIP is saved, the payer debited exactly $9.00 on chain", async () => {
    const running = service as TestService;
    const [payerBefore, payToBefore] = [await balanceOf(payerAddress), await balanceOf(running.payTo)];
    await openAndConnect();
    const download = page.waitForEvent("download", { timeout: 120_000 });
    await page.locator("#pay").click();
    const saved = await download;
    expect(saved.suggestedFilename()).toBe(`${PRODUCT}-${descriptor.version}.zip`);
    const bytes = fs.readFileSync(await saved.path());
    expect(bytes.byteLength).toBe(descriptor.size);
    expect(createHash("sha256").update(bytes).digest("hex")).toBe(descriptor.sha256);
    await expect
      .poll(() => page.locator("#status").textContent(), { timeout: 30_000 })
      .toMatch(/^Paid \(transaction 0x[0-9a-f]{64}\)\.$/);
    await screenshot(`${PRODUCT}-paid`);

    expect(await balanceOf(payerAddress)).toBe(payerBefore - PRODUCT_PRICE);
    expect(await balanceOf(running.payTo)).toBe(payToBefore + PRODUCT_PRICE);
    expect(walletCalls).toContain("eth_signTypedData_v4");
    expect(browserLog.filter((line) => /Content Security Policy|pageerror/.test(line))).toEqual([]);
    expect(elsewhere, browserLog.join("\n")).toEqual([]);
  });

  it("the tender shortlist's GET has its page too: paid from it at $0.15, the shortlist shown", async () => {
    const running = service as TestService;
    const url = `${running.url}/v1/tender-shortlist?query=kentico&countries=AUT,DEU&cpvCodes=72,48&maxResults=5`;
    const navigation = await page.goto(url);
    expect(navigation?.status()).toBe(402);
    await expect.poll(() => page.locator("#connect").isEnabled(), { timeout: 30_000 }).toBe(true);
    expect(await page.locator("h1").textContent()).toBe(tenderShortlistGet.summary);
    expect(await page.locator("#price").textContent()).toBe("$0.15 USDC");
    await screenshot("tender-shortlist");
    const [first, ...others] = await agentAnswers(url);
    expect(first?.headers["content-type"]).toBe("application/problem+json");
    for (const other of others) expect(other).toEqual(first);

    const payerBefore = await balanceOf(payerAddress);
    await page.locator("#connect").click();
    await expect.poll(() => page.locator("#pay").isEnabled(), { timeout: 30_000 }).toBe(true);
    await page.locator("#pay").click();
    await expect
      .poll(() => page.locator("#status").textContent(), { timeout: 60_000 })
      .toMatch(/^Paid \(transaction 0x[0-9a-f]{64}\)\.$/);
    // The GET was paid for with its own query: the shortlist is the one asked for.
    const shortlist = JSON.parse((await page.locator("#result-json").textContent()) as string);
    expect(shortlist.query).toContain('FT~"kentico" AND buyer-country IN (AUT DEU)');
    expect(shortlist.tenders.length).toBe(shortlist.count);
    expect(shortlist.count).toBeGreaterThan(0);
    await screenshot("tender-shortlist-paid");
    expect(await balanceOf(payerAddress)).toBe(payerBefore - TENDER_PRICE);
    expect(browserLog.filter((line) => /Content Security Policy|pageerror/.test(line))).toEqual([]);
    expect(elsewhere).toEqual([]);
  });
});
