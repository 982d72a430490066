import type { AnyOperation } from "../../catalog/operation.ts";
import { PAYMENT_REQUIRED_HEADER } from "../../payments/headers.ts";
import type { PaymentTerms } from "../../payments/resource-server/terms.ts";
import type { StoredOutcome } from "../../store/store.ts";

/** Where the page's script and style are served (free GETs, app.ts): everything the page loads is ours. */
export const PAYWALL_SCRIPT_PATH = "/paywall/paywall.js";
export const PAYWALL_STYLE_PATH = "/paywall/paywall.css";

/**
 * The page's own Content-Security-Policy, sent with the HTML 402 only (no other answer of the service is
 * HTML). Scripts, styles and requests to this origin alone: the page loads nothing from a CDN, runs no
 * inline script (its terms ride in a JSON data block, which is never executed), and its paid retry goes
 * to its own URL. The wallet is the browser extension's `window.ethereum`, which no CSP governs.
 */
export const PAYWALL_CSP = [
  "default-src 'none'",
  "script-src 'self'",
  "style-src 'self'",
  "connect-src 'self'",
  "img-src 'self'",
  "base-uri 'none'",
  "form-action 'none'",
  "frame-ancestors 'none'",
].join("; ");

/**
 * A person's browser opening the URL, told apart from an agent as the official x402 middleware does
 * (`x402HTTPResourceServer.isWebBrowser` in @x402/core): it asks for HTML and calls itself Mozilla. An
 * agent (`Accept: application/json` or `*\/*`, any client library's User-Agent) gets the JSON 402.
 */
export function isBrowserNavigation(request: Request): boolean {
  const accept = request.headers.get("accept") ?? "";
  const userAgent = request.headers.get("user-agent") ?? "";
  return accept.includes("text/html") && userAgent.includes("Mozilla");
}

const HTML_ESCAPES: Record<string, string> = {
  "&": "&amp;",
  "<": "&lt;",
  ">": "&gt;",
  '"': "&quot;",
  "'": "&#39;",
};
const escapeHtml = (text: string) => text.replace(/[&<>"']/g, (char) => HTML_ESCAPES[char] as string);

/** JSON that cannot end the data block it sits in (`</script>`, `<!--`) nor a line of script (U+2028/9). */
const jsonInHtml = (value: unknown) =>
  JSON.stringify(value).replace(
    /[<>&\u2028\u2029]/g,
    (char) => `\\u${char.charCodeAt(0).toString(16).padStart(4, "0")}`,
  );

/**
 * Local mode settles on a test chain that reports Base's chain id, with USDC at Base's address: an
 * authorization a real wallet signed here would be just as valid on Base, paying real USDC to a dev
 * account whose key is public. The page says so before anyone connects a wallet.
 */
const TEST_CHAIN_WARNING =
  '<p class="test-chain" id="test-chain" role="alert">Local test chain: this service settles test USDC on a ' +
  "chain that reports Base's chain id. Pay only from a test wallet: a payment signed here with a real " +
  "wallet is also valid on Base, and would pay a development account whose key is public.</p>\n";

/** The names people know the networks by (CAIP-2 ids otherwise). */
const NETWORK_NAMES: Record<string, string> = { "eip155:8453": "Base", "eip155:84532": "Base Sepolia" };
const networkName = (network: string) =>
  NETWORK_NAMES[network] ? `${NETWORK_NAMES[network]} (${network})` : network;

/** The data the page's script reads (from the `x402-terms` block): the route's 402 as an agent gets it. */
export interface PaywallData {
  paymentRequired: PaymentTerms["paymentRequired"];
  /** The price as shown, e.g. "9.00": also the most the page's client will sign for. */
  priceUsd: string;
}

/**
 * The 402 a browser gets on a paid GET: a page saying what the resource is, its price and where the money
 * goes, with a button that pays from the browser's wallet (./paywall-client.browser.ts). It carries the
 * same PAYMENT-REQUIRED header as the agents' 402, so an x402 client that reaches it with a browser's
 * Accept still finds its terms. Built once per route: it never changes per request. `testChain`: the
 * service runs on its local test chain (a warning heads the page).
 */
export function paywallPage(
  operation: AnyOperation,
  terms: PaymentTerms,
  options: { testChain: boolean },
): StoredOutcome {
  const { amount, asset, network, payTo } = terms.requirements;
  const data: PaywallData = { paymentRequired: terms.paymentRequired, priceUsd: operation.priceUsd };
  const row = (label: string, value: string, id?: string) =>
    `<div class="row"><dt>${label}</dt><dd${id ? ` id="${id}"` : ""}>${escapeHtml(value)}</dd></div>`;
  const html = `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>Payment required: ${escapeHtml(operation.summary)}</title>
<link rel="stylesheet" href="${PAYWALL_STYLE_PATH}">
<script type="application/json" id="x402-terms">${jsonInHtml(data)}</script>
<script type="module" src="${PAYWALL_SCRIPT_PATH}"></script>
</head>
<body>
<main>
${options.testChain ? TEST_CHAIN_WARNING : ""}<p class="status-code">402 Payment Required</p>
<h1>${escapeHtml(operation.summary)}</h1>
<p class="description">${escapeHtml(operation.description)}</p>
<dl>
${row("Price", `$${operation.priceUsd} USDC`, "price")}
${row("Amount", `${amount} atomic units`)}
${row("Network", networkName(network))}
${row("Asset", asset)}
${row("Pay to", payTo)}
</dl>
<div class="actions">
<button id="connect" type="button" disabled>Connect wallet</button>
<button id="pay" type="button" disabled>Pay $${escapeHtml(operation.priceUsd)}</button>
</div>
<p id="status" role="status" aria-live="polite">Looking for a browser wallet…</p>
<div id="result" hidden></div>
<noscript><p>Paying here needs JavaScript and a browser wallet.</p></noscript>
<p class="agents">Agents: the same terms are in the <code>${PAYMENT_REQUIRED_HEADER}</code> header; pay with any x402 client (see <a href="/llms.txt">/llms.txt</a>).</p>
</main>
</body>
</html>
`;
  return {
    status: 402,
    headers: {
      "content-type": "text/html; charset=utf-8",
      [PAYMENT_REQUIRED_HEADER]: terms.header,
      "cache-control": "no-store",
      "content-security-policy": PAYWALL_CSP,
      "x-content-type-options": "nosniff",
      "referrer-policy": "no-referrer",
      vary: "Accept, User-Agent",
    },
    body: html,
  };
}
