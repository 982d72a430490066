/**
 * Pays one call of every available operation of a running utility402 (local mode by default),
 * the way an agent would: read /catalog.json, call, get 402, pay with @x402/fetch, print the receipt.
 *
 *   npm start            # in one terminal
 *   npm run demo         # in another; DEMO_BASE_URL and DEMO_PRIVATE_KEY override the defaults
 */

import { devPrivateKey } from "../src/chain/dev-accounts.ts";
import { createPayer, paymentReceipt } from "../src/client/paying-fetch.ts";

interface CatalogEntry {
  id: string;
  method: string;
  url: string;
  available: boolean;
  /** Why an operation cannot serve now (e.g. no release built). */
  unavailable?: string;
  price: { usd: string };
  input: { in: "body" | "query" } | null;
  example: { input?: Record<string, unknown> };
}

const baseUrl = (process.env.DEMO_BASE_URL ?? "http://127.0.0.1:8402").replace(/\/+$/, "");
const privateKey = (process.env.DEMO_PRIVATE_KEY ?? devPrivateKey(2)) as `0x${string}`;
const payingFetch = createPayer(privateKey).fetch;

const catalogResponse = await fetch(`${baseUrl}/catalog.json`).catch((error: Error) => {
  console.error(`cannot reach ${baseUrl} (${error.message}); start the service with npm start first`);
  process.exit(1);
});
const catalog = (await catalogResponse.json()) as {
  operations: CatalogEntry[];
  products: CatalogEntry[];
  payment: { testChain: boolean };
};
if (!catalog.payment.testChain && !process.env.DEMO_PRIVATE_KEY) {
  console.error("this service settles on a real chain; set DEMO_PRIVATE_KEY deliberately to pay it");
  process.exit(1);
}

let failures = 0;
for (const entry of [...catalog.operations, ...catalog.products]) {
  if (!entry.available) {
    console.log(
      `${entry.id.padEnd(44)} unavailable here: ${entry.unavailable ?? "not built yet (501)"}; never charged`,
    );
    continue;
  }
  const input = entry.example.input ?? {};
  const url =
    entry.input?.in === "query"
      ? `${entry.url}?${new URLSearchParams(input as Record<string, string>)}`
      : entry.url;
  const init: RequestInit =
    entry.method === "POST"
      ? { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(input) }
      : { method: entry.method };
  const response = await payingFetch(url, init);
  const receipt = paymentReceipt(response);
  const text = await response.text();
  // An upstream this machine cannot reach (e.g. TED without internet) is a 502, never charged; research
  // answers 503 (never charged) while its sources (Wikipedia and Crossref by default, no key needed) cannot be reached.
  if (!response.ok && response.status !== 502 && response.status !== 503) failures++;
  const statusUrl =
    response.status === 202 ? (JSON.parse(text) as { statusUrl?: string }).statusUrl : undefined;
  const note =
    response.status === 502
      ? "  (its upstream is unreachable from here; nothing charged)"
      : response.status === 503
        ? `  (unavailable here now: ${problemDetail(text)})`
        : statusUrl
          ? `  (queued; researched on the configured sources, Wikipedia and Crossref by default; paid when the brief is ready: GET ${statusUrl})`
          : "";
  console.log(
    `${entry.id.padEnd(44)} ${response.status}  USD ${entry.price.usd.padStart(6)}  tx ${receipt?.transaction ?? "(none)"}${note}`,
  );
  if (statusUrl) {
    const job = await untilFinished(statusUrl);
    if (job.status !== "succeeded") failures++;
    console.log(
      `${"".padEnd(44)} job ${job.status}: payment ${job.payment?.state ?? "?"}, tx ${job.payment?.transaction ?? "(none)"}` +
        (job.error ? `, ${job.error.code}: ${job.error.message}` : ""),
    );
  }
}

/** The `detail` of a problem+json answer (it says what is unavailable and that nothing was charged). */
function problemDetail(text: string): string {
  try {
    return (JSON.parse(text) as { detail?: string }).detail ?? text;
  } catch {
    return text.slice(0, 200);
  }
}

/** Polls a job until it is finished and its payment settled or released (a few minutes at most). */
async function untilFinished(statusUrl: string) {
  const deadline = Date.now() + 5 * 60_000;
  for (;;) {
    const job = (await (await fetch(statusUrl)).json()) as {
      status: string;
      payment?: { state: string; transaction?: string };
      error?: { code: string; message: string };
    };
    const done = job.status === "succeeded" || job.status === "failed";
    if ((done && job.payment?.state !== "held") || Date.now() > deadline) return job;
    await new Promise((resolve) => setTimeout(resolve, 1000));
  }
}
process.exitCode = failures > 0 ? 1 : 0;
