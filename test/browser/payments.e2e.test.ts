import fs from "node:fs";
import http from "node:http";
import path from "node:path";
import * as esbuild from "esbuild";
import type { BrowserContext, Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { devAccount, devPrivateKey } from "../../src/chain/dev-accounts.ts";
import { csvCleanup } from "../../src/operations/csv-cleanup/index.ts";
import type { ReleaseDescriptor } from "../../src/products/release.ts";
import { chromiumInstalled, launchChromium } from "../helpers/chromium.ts";
import { buildOneRelease } from "../helpers/one-release.ts";
import { freePort, startTestService, type TestService, usdcBalances } from "../helpers/service.ts";
import type { BrowserAgent, BrowserCall } from "./agent-page.ts";

/**
 * A browser agent pays: Debian's Chromium (headless, driven by playwright-core) loads a page from
 * another origin (a second local port) that bundles the official client (`@x402/fetch` and the
 * `@x402/evm` exact scheme) and pays csv-cleanup and a product download on the local chain. Every
 * cross-origin call passes the browser's CORS checks or fails as a browser agent's would; the payer
 * is debited exactly the price and payTo credited. CI installs chromium (.ci/run); without it this
 * test fails there, and skips elsewhere.
 */

const PRODUCT = "csv-json-quality-toolkit";
const PRICES = { csvCleanup: 2_000_000n, product: 9_000_000n }; // USDC atomic units
const PAYER = 7;

describe.skipIf(chromiumInstalled.skip)(
  "a browser agent on another origin pays with @x402/fetch in Chromium",
  () => {
    let work = ""; // made in beforeAll: a skipped suite runs its body but not its hooks
    const payerAddress = devAccount(PAYER).address;
    let service: TestService | undefined;
    let pageServer: http.Server | undefined;
    let browser: BrowserContext | undefined;
    let page: Page;
    let descriptor: ReleaseDescriptor;
    let balanceOf: ReturnType<typeof usdcBalances>;
    /** What the browser reported: console messages (CORS refusals among them) and failed requests. */
    const browserLog: string[] = [];

    beforeAll(async () => {
      chromiumInstalled.check();
      const built = await buildOneRelease(PRODUCT, "utility402-browser-");
      ({ work, descriptor } = built);
      const { releasesDir, product } = built;
      service = await startTestService({ RELEASES_DIR: releasesDir }, { operations: [csvCleanup, product] });
      balanceOf = usdcBalances(service.localChain?.rpcUrl as string);

      // The agent's page: the official client bundled for the browser, served from a port of its own.
      const bundle = path.join(work, "agent.js");
      await esbuild.build({
        entryPoints: [path.join(import.meta.dirname, "agent-page.ts")],
        bundle: true,
        format: "esm",
        platform: "browser",
        outfile: bundle,
        logLevel: "warning",
      });
      const files: Record<string, [string, string]> = {
        "/": [
          "text/html",
          '<!doctype html><title>agent</title><script type="module" src="/agent.js"></script>',
        ],
        "/agent.js": ["text/javascript", fs.readFileSync(bundle, "utf8")],
        "/favicon.ico": ["image/x-icon", ""],
      };
      pageServer = http.createServer((request, response) => {
        const file = files[request.url ?? ""];
        response.writeHead(file ? 200 : 404, { "content-type": file?.[0] ?? "text/plain" });
        response.end(file?.[1] ?? "not found");
      });
      const pagePort = await freePort();
      await new Promise<void>((resolve) => pageServer?.listen(pagePort, "127.0.0.1", resolve));
      const pageOrigin = `http://127.0.0.1:${pagePort}`;
      expect(new URL(service.url).origin).not.toBe(pageOrigin);

      browser = await launchChromium(path.join(work, "profile"));
      page = browser.pages()[0] ?? (await browser.newPage());
      page.on("console", (message) => browserLog.push(`console.${message.type()}: ${message.text()}`));
      page.on("requestfailed", (request) =>
        browserLog.push(`failed: ${request.method()} ${request.url()}: ${request.failure()?.errorText}`),
      );
      await page.goto(`${pageOrigin}/`);
      await page.waitForFunction(() => "agent" in globalThis);
    }, 240_000);

    afterAll(async () => {
      await browser?.close();
      await new Promise((resolve) => (pageServer ? pageServer.close(resolve) : resolve(undefined)));
      await service?.stop();
      if (work) fs.rmSync(work, { recursive: true, force: true });
    });

    /** One paid call made by the page, in the browser. */
    const payInBrowser = (url: string, init: RequestInit = {}): Promise<BrowserCall> =>
      page.evaluate(
        ([key, target, options]) =>
          (globalThis as unknown as { agent: BrowserAgent }).agent.pay(key, target, options),
        [devPrivateKey(PAYER), url, init] as const,
      );

    it("pays csv-cleanup: 200 with the cleaned rows and a readable receipt; debited exactly $2.00", async () => {
      const running = service as TestService;
      const [payerBefore, payToBefore] = [await balanceOf(payerAddress), await balanceOf(running.payTo)];
      const call = await payInBrowser(`${running.url}/v1/csv-cleanup`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify(csvCleanup.example.input),
      });
      expect(call, browserLog.join("\n")).toMatchObject({ status: 200 });
      expect(JSON.parse(call.text as string)).toEqual(csvCleanup.example.output);
      expect(call.receipt).toMatchObject({ success: true, network: "eip155:8453", payer: payerAddress });
      expect(await balanceOf(payerAddress)).toBe(payerBefore - PRICES.csvCleanup);
      expect(await balanceOf(running.payTo)).toBe(payToBefore + PRICES.csvCleanup);
    });

    it(`downloads ${PRODUCT}: 200, the release's bytes, a readable receipt; debited exactly $9.00`, async () => {
      const running = service as TestService;
      const [payerBefore, payToBefore] = [await balanceOf(payerAddress), await balanceOf(running.payTo)];
      const call = await payInBrowser(`${running.url}/v1/products/${PRODUCT}`);
      expect(call, browserLog.join("\n")).toMatchObject({
        status: 200,
        contentType: "application/zip",
        contentDisposition: `attachment; filename="${PRODUCT}-${descriptor.version}.zip"`,
        size: descriptor.size,
        sha256: descriptor.sha256,
      });
      expect(call.receipt).toMatchObject({ success: true, network: "eip155:8453", payer: payerAddress });
      expect(await balanceOf(payerAddress)).toBe(payerBefore - PRICES.product);
      expect(await balanceOf(running.payTo)).toBe(payToBefore + PRICES.product);
    });
  },
);
