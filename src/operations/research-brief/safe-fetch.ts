import dns from "node:dns";
import http from "node:http";
import https from "node:https";
import net from "node:net";
import zlib from "node:zlib";
import { classifyAddress } from "./address-class.ts";
import { isAllowedUrl, parseAllowHosts } from "./fetch-allow.ts";
import { PDF_TYPES, pdfText } from "./readable.ts";

/** Why a URL was not fetched; `code` is stable (tests and logs read it). */
export class FetchRefused extends Error {
  constructor(
    readonly code:
      | "scheme"
      | "credentials"
      | "address"
      | "redirects"
      | "too_large"
      | "content_type"
      | "status"
      | "timeout"
      | "network"
      | "unreadable",
    message: string,
  ) {
    super(message);
  }
}

export interface SafeFetchOptions {
  /**
   * `host:port` entries (IPv6 as `[::1]:8080`) that may be reached although the host is or resolves
   * to a private address (test stand-ins, an intranet); a bare `host` allows ports 80 and 443 only.
   */
  allowHosts: readonly string[];
  /** Cap on an HTML or text page, after decompression. */
  maxBytes?: number;
  /** Cap on a PDF document, after decompression. */
  maxPdfBytes?: number;
  timeoutMs?: number;
  maxRedirects?: number;
  /** Aborts the fetch (the job was abandoned). */
  signal?: AbortSignal;
  userAgent?: string;
}

export interface FetchedPage {
  /** The URL after redirects. */
  url: string;
  contentType: string;
  /** The page as text; for a PDF, the text read from the document (paragraphs separated by blank lines). */
  text: string;
}

const MAX_BYTES = 2 * 1024 * 1024;
const MAX_PDF_BYTES = 8 * 1024 * 1024;
const TIMEOUT_MS = 15_000;
const MAX_REDIRECTS = 5;
const READABLE_TYPES = ["text/html", "application/xhtml+xml", "text/plain", ...PDF_TYPES];
const isPdf = (contentType: string) => PDF_TYPES.some((type) => contentType.startsWith(type));

const bareHost = (url: URL) => url.hostname.replace(/^\[|\]$/g, "").toLowerCase();

/**
 * Checks a URL before any connection: http(s) only, no credentials, no special-purpose address
 * literal unless its host and port are allowed. Returns whether they are allowed.
 */
function checkUrl(url: URL, allowHosts: readonly string[]): boolean {
  if (url.protocol !== "http:" && url.protocol !== "https:") {
    throw new FetchRefused("scheme", `only http and https URLs are fetched, not ${url.protocol}`);
  }
  if (url.username || url.password)
    throw new FetchRefused("credentials", "URLs with credentials are not fetched");
  if (isAllowedUrl(url, allowHosts)) return true;
  const host = bareHost(url);
  if (net.isIP(host)) {
    const verdict = classifyAddress(host);
    if (!verdict.public) throw new FetchRefused("address", `${verdict.reason}: not fetched`);
  }
  return false;
}

/**
 * Resolves a host name and refuses it if any of its addresses is not public (see address-class.ts)
 * unless the URL's host and port are allowed. Used as the socket's `lookup`, so the address checked
 * is the address connected to (no DNS rebinding in between).
 */
function guardedLookup(allowed: boolean): net.LookupFunction {
  return (hostname, options, callback) => {
    dns.lookup(hostname, { all: true, family: options.family ?? 0 }, (error, addresses) => {
      if (error) return callback(error, "", 0);
      const refused = allowed
        ? undefined
        : addresses.map((entry) => classifyAddress(entry.address)).find((verdict) => !verdict.public);
      if (refused && !refused.public) {
        return callback(
          new FetchRefused("address", `${hostname} resolves to ${refused.address}: ${refused.reason}`),
          "",
          0,
        );
      }
      if (options.all) return (callback as (e: null, a: dns.LookupAddress[]) => void)(null, addresses);
      const first = addresses[0] as dns.LookupAddress;
      callback(null, first.address, first.family);
    });
  };
}

interface RawResponse {
  status: number;
  location?: string;
  contentType: string;
  body?: Buffer;
}

function requestOnce(
  url: URL,
  allowed: boolean,
  options: Required<Omit<SafeFetchOptions, "signal">>,
  signal: AbortSignal,
) {
  return new Promise<RawResponse>((resolve, reject) => {
    const client = url.protocol === "https:" ? https : http;
    const request = client.request(
      url,
      {
        method: "GET",
        lookup: guardedLookup(allowed),
        signal,
        headers: {
          "user-agent": options.userAgent,
          accept: "text/html,application/xhtml+xml,text/plain;q=0.8,application/pdf;q=0.7",
          "accept-encoding": "gzip, deflate, br",
        },
      },
      (response) => {
        const status = response.statusCode ?? 0;
        const contentType = String(response.headers["content-type"] ?? "").toLowerCase();
        if (status >= 300 && status < 400 && response.headers.location) {
          response.resume();
          return resolve({ status, location: response.headers.location, contentType });
        }
        if (status < 200 || status >= 300) {
          response.resume();
          return reject(new FetchRefused("status", `the page answered ${status}`));
        }
        if (!READABLE_TYPES.some((type) => contentType.startsWith(type))) {
          response.resume();
          return reject(
            new FetchRefused("content_type", `not a readable page (${contentType || "no type"})`),
          );
        }
        const maxBytes = isPdf(contentType) ? options.maxPdfBytes : options.maxBytes;
        const length = Number(response.headers["content-length"] ?? 0);
        if (length > maxBytes) {
          response.destroy();
          return reject(new FetchRefused("too_large", `the page is larger than ${maxBytes} bytes`));
        }
        const encoding = String(response.headers["content-encoding"] ?? "").toLowerCase();
        const decoded =
          encoding === "gzip" || encoding === "x-gzip"
            ? response.pipe(zlib.createGunzip())
            : encoding === "deflate"
              ? response.pipe(zlib.createInflate())
              : encoding === "br"
                ? response.pipe(zlib.createBrotliDecompress())
                : response;
        const chunks: Buffer[] = [];
        let size = 0;
        decoded.on("data", (chunk: Buffer) => {
          size += chunk.length;
          if (size > maxBytes) {
            response.destroy();
            decoded.destroy();
            reject(new FetchRefused("too_large", `the page is larger than ${maxBytes} bytes`));
            return;
          }
          chunks.push(chunk);
        });
        decoded.on("error", (error) => reject(error));
        decoded.on("end", () => resolve({ status, contentType, body: Buffer.concat(chunks) }));
      },
    );
    request.on("error", reject);
    request.end();
  });
}

function decode(body: Buffer, contentType: string): string {
  const charset = /charset=([^;]+)/.exec(contentType)?.[1]?.trim().replace(/^"|"$/g, "");
  try {
    return new TextDecoder(charset || "utf-8").decode(body);
  } catch {
    return new TextDecoder("utf-8").decode(body);
  }
}

/**
 * Fetches a public web page for reading, refusing anything that could reach inside the network
 * it runs in: http(s) only; every host resolved and refused if any address is not public
 * (address-class.ts: private, loopback, link-local, metadata, reserved, or an IPv6 form carrying
 * such an IPv4 address) unless its host and port are in `allowHosts`; each redirect checked again;
 * size, time and redirect caps; readable content types only. A PDF is read to text in a worker
 * thread (readable.ts `pdfText`) within the same time limit.
 */
export async function safeFetch(target: string, options: SafeFetchOptions): Promise<FetchedPage> {
  const settings = {
    allowHosts: parseAllowHosts(options.allowHosts),
    maxBytes: options.maxBytes ?? MAX_BYTES,
    maxPdfBytes: options.maxPdfBytes ?? MAX_PDF_BYTES,
    timeoutMs: options.timeoutMs ?? TIMEOUT_MS,
    maxRedirects: options.maxRedirects ?? MAX_REDIRECTS,
    userAgent: options.userAgent ?? "utility402-research/1.0",
  };
  const timeout = AbortSignal.timeout(settings.timeoutMs);
  const signal = options.signal ? AbortSignal.any([options.signal, timeout]) : timeout;
  let url: URL;
  try {
    url = new URL(target);
  } catch {
    throw new FetchRefused("scheme", `not a URL: ${target}`);
  }
  for (let hop = 0; ; hop++) {
    const allowed = checkUrl(url, settings.allowHosts);
    let response: RawResponse;
    try {
      signal.throwIfAborted(); // no connection at all for a job already abandoned
      response = await requestOnce(url, allowed, settings, signal);
    } catch (error) {
      if (error instanceof FetchRefused) throw error;
      if (timeout.aborted)
        throw new FetchRefused("timeout", `no complete answer within ${settings.timeoutMs} ms`);
      if ((error as { cause?: unknown }).cause instanceof FetchRefused)
        throw (error as { cause: FetchRefused }).cause;
      throw new FetchRefused("network", (error as Error).message);
    }
    if (response.location !== undefined) {
      if (hop >= settings.maxRedirects) {
        throw new FetchRefused("redirects", `more than ${settings.maxRedirects} redirects`);
      }
      try {
        url = new URL(response.location, url);
      } catch {
        throw new FetchRefused("scheme", `redirect to an invalid URL: ${response.location}`);
      }
      continue;
    }
    if (isPdf(response.contentType)) {
      const body = response.body as Buffer;
      const read = await pdfText(new Uint8Array(body.buffer, body.byteOffset, body.byteLength), {
        signal,
      }).catch((error: unknown) => {
        if (timeout.aborted)
          throw new FetchRefused("timeout", `no complete answer within ${settings.timeoutMs} ms`);
        if (signal.aborted) throw error;
        throw new FetchRefused("unreadable", (error as Error).message);
      });
      return { url: url.toString(), contentType: response.contentType, text: read.text };
    }
    return {
      url: url.toString(),
      contentType: response.contentType,
      text: decode(response.body as Buffer, response.contentType),
    };
  }
}
