import { Worker } from "node:worker_threads";
import { Readability } from "@mozilla/readability";
import { parseHTML } from "linkedom";
import { squeeze } from "./text.ts";

export interface ReadablePage {
  title: string;
  /** Main text, one block (paragraph, heading, list item) per paragraph, separated by blank lines. */
  text: string;
  publishedAt?: string;
}

const BLOCKS = "h1,h2,h3,h4,h5,h6,p,li,blockquote,pre,td,th,dd,dt,figcaption";

/** Paragraph-separated text of an HTML fragment: one entry per innermost block element. */
function blocksOf(html: string): string[] {
  const { document } = parseHTML(`<!doctype html><html><body>${html}</body></html>`);
  const blocks = [...document.querySelectorAll(BLOCKS)]
    .filter((element) => element.querySelector(BLOCKS) === null)
    .map((element) => squeeze(element.textContent ?? ""))
    .filter(Boolean);
  return blocks.length > 0 ? blocks : [squeeze(document.body?.textContent ?? "")].filter(Boolean);
}

/**
 * The main text of a page: HTML through Mozilla Readability on linkedom (navigation, footers and
 * ads dropped); plain text as it is; a PDF as the text `pdfText` read from it (the fetcher has
 * already turned the document into paragraphs separated by blank lines).
 */
export function readablePage(body: string, contentType: string, fallbackTitle: string): ReadablePage {
  if (contentType.startsWith("text/plain") || PDF_TYPES.some((type) => contentType.startsWith(type))) {
    const paragraphs = body
      .split(/\n\s*\n/)
      .map(squeeze)
      .filter(Boolean);
    return { title: fallbackTitle, text: paragraphs.join("\n\n") };
  }
  const { document } = parseHTML(body);
  const article = new Readability(document as unknown as Document).parse();
  const title = squeeze(article?.title ?? "") || fallbackTitle;
  const text = article?.content ? blocksOf(article.content).join("\n\n") : "";
  const publishedAt = article?.publishedTime ? squeeze(article.publishedTime) : undefined;
  return { title, text, ...(publishedAt ? { publishedAt } : {}) };
}

/** Content types read as PDF documents. */
export const PDF_TYPES = ["application/pdf", "application/x-pdf"];

export interface PdfLimits {
  /** Pages read from the start of the document; the rest are ignored. */
  maxPages: number;
  /** Characters of text kept. */
  maxChars: number;
  /** The parse is stopped (its worker terminated) after this long. */
  timeoutMs: number;
  /** Heap of the parsing worker, in MiB. */
  maxHeapMb: number;
  signal?: AbortSignal;
}

export const PDF_LIMITS: PdfLimits = { maxPages: 50, maxChars: 200_000, timeoutMs: 10_000, maxHeapMb: 256 };

/**
 * The text of a PDF document, one paragraph per blank-line-separated block, read by PDF.js (the
 * `unpdf` build) in a worker thread: a document anyone on the web wrote is parsed off the main
 * thread, with its own heap limit, at most `maxPages` pages, and the worker is terminated after
 * `timeoutMs` or when `signal` aborts. Rejects when the document cannot be parsed.
 */
export function pdfText(
  bytes: Uint8Array,
  limits: Partial<PdfLimits> = {},
): Promise<{ text: string; pages: number; pagesRead: number }> {
  const { maxPages, maxChars, timeoutMs, maxHeapMb, signal } = { ...PDF_LIMITS, ...limits };
  return new Promise((resolve, reject) => {
    if (signal?.aborted) return reject(signal.reason);
    const worker = new Worker(new URL("./pdf-worker.mjs", import.meta.url), {
      workerData: { bytes, maxPages, maxChars },
      resourceLimits: { maxOldGenerationSizeMb: maxHeapMb, maxYoungGenerationSizeMb: 32 },
      stdout: true,
      stderr: true,
    });
    worker.stdout.resume();
    worker.stderr.resume();
    let settled = false;
    const finish = (outcome: () => void) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      signal?.removeEventListener("abort", onAbort);
      void worker.terminate();
      outcome();
    };
    const timer = setTimeout(
      () => finish(() => reject(new Error(`the PDF was not read within ${timeoutMs} ms`))),
      timeoutMs,
    );
    const onAbort = () => finish(() => reject(signal?.reason));
    signal?.addEventListener("abort", onAbort, { once: true });
    worker.once(
      "message",
      (message: { ok: boolean; message?: string; text?: string; pages?: number; pagesRead?: number }) =>
        finish(() =>
          message.ok
            ? resolve({
                text: message.text ?? "",
                pages: message.pages ?? 0,
                pagesRead: message.pagesRead ?? 0,
              })
            : reject(new Error(`the PDF could not be read: ${message.message}`)),
        ),
    );
    worker.once("error", (error) =>
      finish(() => reject(new Error(`the PDF could not be read: ${error.message}`))),
    );
    worker.once("exit", (code) =>
      finish(() => reject(new Error(`the PDF reader stopped (exit code ${code}) before it answered`))),
    );
  });
}
