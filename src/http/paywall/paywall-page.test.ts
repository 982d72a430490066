import fc from "fast-check";
import { parseHTML } from "linkedom";
import { describe, expect, it } from "vitest";
import type { AnyOperation } from "../../catalog/operation.ts";
import type { PaymentTerms } from "../../payments/resource-server/terms.ts";
import { isBrowserNavigation, PAYWALL_SCRIPT_PATH, type PaywallData, paywallPage } from "./paywall-page.ts";

const CHROME_UA = "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/140.0.0.0";
const request = (headers: Record<string, string>) =>
  new Request("http://127.0.0.1/v1/products/x", { headers });

describe("isBrowserNavigation", () => {
  it("is a browser asking for HTML, as @x402/core's isWebBrowser decides, and nothing else", () => {
    expect(isBrowserNavigation(request({ accept: "text/html,*/*;q=0.8", "user-agent": CHROME_UA }))).toBe(
      true,
    );
    expect(isBrowserNavigation(request({ accept: "*/*", "user-agent": CHROME_UA }))).toBe(false);
    expect(isBrowserNavigation(request({ accept: "application/json", "user-agent": CHROME_UA }))).toBe(false);
    expect(isBrowserNavigation(request({ accept: "text/html", "user-agent": "curl/8.5.0" }))).toBe(false);
    expect(isBrowserNavigation(request({ accept: "text/html" }))).toBe(false);
    expect(isBrowserNavigation(request({}))).toBe(false);
  });
});

/** Terms as the page reads them, with `text` wherever the seller's words or the request could reach it. */
function termsWith(text: string): PaymentTerms {
  const requirements = {
    scheme: "exact",
    network: "eip155:8453",
    asset: "0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913",
    amount: "9000000",
    payTo: "0x70997970C51812dc3A010C7d01b50e0d17dc79C8",
    maxTimeoutSeconds: 120,
    extra: { name: "USD Coin", version: "2" },
  } as const;
  return {
    requirements,
    paymentRequired: {
      x402Version: 2,
      resource: { url: `http://127.0.0.1/v1/products/${encodeURIComponent(text)}`, description: text },
      accepts: [requirements],
    },
    header: "eyJ4NDAyVmVyc2lvbiI6Mn0=",
    discovery: {},
  } as unknown as PaymentTerms;
}

const operationWith = (summary: string, description: string) =>
  ({ summary, description, priceUsd: "9.00" }) as AnyOperation;

describe("paywallPage", () => {
  // Markup, script ends, comment openers, entities and the line separators JSON leaves raw, among any text.
  const hostile = fc.oneof(
    fc.string({ unit: "binary" }),
    fc
      .array(
        fc.constantFrom(
          "</script>",
          "<script>alert(1)</script>",
          "<!--",
          "-->",
          "&amp;",
          '"',
          "'",
          "\u2028",
          "\u2029",
          "<",
          ">",
          "x",
        ),
        { maxLength: 8 },
      )
      .map((parts) => parts.join("")),
  );

  it("shows any summary and description as text, and hands the script its terms intact (property)", () => {
    fc.assert(
      fc.property(hostile, hostile, (summary, description) => {
        const terms = termsWith(description);
        const page = paywallPage(operationWith(summary, description), terms, { testChain: false });
        const { document } = parseHTML(page.body as string);
        const scripts = [...document.querySelectorAll("script")];
        // The data block and the served module, nothing a string could have added.
        expect(scripts.map((script) => script.getAttribute("type"))).toEqual(["application/json", "module"]);
        expect(scripts[1]?.getAttribute("src")).toBe(PAYWALL_SCRIPT_PATH);
        const data = JSON.parse(scripts[0]?.textContent ?? "") as PaywallData;
        expect(data).toEqual({ paymentRequired: terms.paymentRequired, priceUsd: "9.00" });
        expect(document.querySelector("h1")?.textContent).toBe(summary);
        expect(document.querySelector(".description")?.textContent).toBe(description);
        expect(document.querySelector("#test-chain")).toBeNull();
      }),
    );
  });

  it("warns people off real wallets when the service runs on its local test chain", () => {
    const page = paywallPage(operationWith("a kit", "its files"), termsWith("x"), { testChain: true });
    const { document } = parseHTML(page.body as string);
    expect(document.querySelector("#test-chain")?.textContent).toMatch(/Pay only from a test wallet/);
  });
});
