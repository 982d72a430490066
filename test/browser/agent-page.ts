/**
 * The browser agent of test/browser/payments.e2e.test.ts: bundled for the browser with esbuild at
 * test time and loaded by a page of another origin. It pays with the official client packages
 * (`@x402/fetch` with the `@x402/evm` exact scheme, through src/client/paying-fetch.ts) and the
 * browser's own fetch, so the browser's CORS checks decide whether the paid call goes through.
 */
import { createPayer, paymentReceipt } from "../../src/client/paying-fetch.ts";

export interface BrowserCall {
  /** What the browser threw (a call CORS blocks fails with "Failed to fetch"). */
  error?: string;
  status?: number;
  contentType?: string | null;
  contentDisposition?: string | null;
  /** The settlement receipt decoded from PAYMENT-RESPONSE (null when the header cannot be read). */
  receipt?: ReturnType<typeof paymentReceipt> | null;
  size?: number;
  sha256?: string;
  /** The body as text when it is JSON. */
  text?: string;
}

export interface BrowserAgent {
  pay(privateKey: `0x${string}`, url: string, init?: RequestInit): Promise<BrowserCall>;
}

const hex = (bytes: ArrayBuffer) =>
  [...new Uint8Array(bytes)].map((b) => b.toString(16).padStart(2, "0")).join("");

const agent: BrowserAgent = {
  async pay(privateKey, url, init) {
    try {
      const response = await createPayer(privateKey).fetch(url, init);
      const bytes = await response.arrayBuffer();
      const contentType = response.headers.get("content-type");
      return {
        status: response.status,
        contentType,
        contentDisposition: response.headers.get("content-disposition"),
        receipt: paymentReceipt(response) ?? null,
        size: bytes.byteLength,
        sha256: hex(await crypto.subtle.digest("SHA-256", bytes)),
        ...(contentType?.includes("json") ? { text: new TextDecoder().decode(bytes) } : {}),
      };
    } catch (error) {
      return { error: error instanceof Error ? `${error.name}: ${error.message}` : String(error) };
    }
  },
};

(globalThis as unknown as { agent: BrowserAgent }).agent = agent;
