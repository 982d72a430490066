import dns from "node:dns";
import http from "node:http";
import https from "node:https";
import net from "node:net";
import zlib from "node:zlib";

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
      | "network",
    message: string,
  ) {
    super(message);
  }
}

export interface SafeFetchOptions {
  /** Host names or IP addresses that may be reached although they are private (test stand-ins, an intranet). */
  allowHosts: readonly string[];
  maxBytes?: number;
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
  text: string;
}

const MAX_BYTES = 2 * 1024 * 1024;
const TIMEOUT_MS = 15_000;
const MAX_REDIRECTS = 5;
const READABLE_TYPES = ["text/html", "application/xhtml+xml", "text/plain"];

/**
 * Addresses a fetch must never reach unless the host is allowed by name: loopback, private,
 * carrier-grade NAT, link-local (cloud metadata at 169.254.169.254 and fd00:ec2::254), multicast,
 * reserved, documentation ranges, and IPv6 forms that embed an IPv4 address.
 */
const BLOCKED = new net.BlockList();
for (const [prefix, bits] of [
  ["0.0.0.0", 8],
  ["10.0.0.0", 8],
  ["100.64.0.0", 10],
  ["127.0.0.0", 8],
  ["169.254.0.0", 16],
  ["172.16.0.0", 12],
  ["192.0.0.0", 24],
  ["192.0.2.0", 24],
  ["192.88.99.0", 24],
  ["192.168.0.0", 16],
  ["198.18.0.0", 15],
  ["198.51.100.0", 24],
  ["203.0.113.0", 24],
  ["224.0.0.0", 4],
  ["240.0.0.0", 4],
] as const) {
  BLOCKED.addSubnet(prefix, bits, "ipv4");
}
for (const [prefix, bits] of [
  ["::", 128],
  ["::1", 128],
  ["::ffff:0:0", 96], // IPv4-mapped
  ["64:ff9b::", 96], // NAT64
  ["100::", 64],
  ["2001:db8::", 32],
  ["2002::", 16], // 6to4
  ["fc00::", 7], // unique local (fd00:ec2::254 is AWS metadata)
  ["fe80::", 10],
  ["fec0::", 10],
  ["ff00::", 8],
] as const) {
  BLOCKED.addSubnet(prefix, bits, "ipv6");
}

function isBlockedAddress(address: string): boolean {
  const family = net.isIP(address);
  if (family === 0) return true;
  return BLOCKED.check(address, family === 4 ? "ipv4" : "ipv6");
}

const bareHost = (url: URL) => url.hostname.replace(/^\[|\]$/g, "").toLowerCase();

/** Checks a URL before any connection: http(s) only, no credentials, no private address literal. */
function checkUrl(url: URL, allowHosts: readonly string[]): void {
  if (url.protocol !== "http:" && url.protocol !== "https:") {
    throw new FetchRefused("scheme", `only http and https URLs are fetched, not ${url.protocol}`);
  }
  if (url.username || url.password)
    throw new FetchRefused("credentials", "URLs with credentials are not fetched");
  const host = bareHost(url);
  if (allowHosts.includes(host)) return;
  if (net.isIP(host) && isBlockedAddress(host)) {
    throw new FetchRefused("address", `${host} is a private, loopback, link-local or reserved address`);
  }
}

/**
 * Resolves a host name and refuses it if any of its addresses is blocked. Used as the socket's
 * `lookup`, so the address checked is the address connected to (no DNS rebinding in between).
 */
function guardedLookup(allowHosts: readonly string[]): net.LookupFunction {
  return (hostname, options, callback) => {
    dns.lookup(hostname, { all: true, family: options.family ?? 0 }, (error, addresses) => {
      if (error) return callback(error, "", 0);
      const host = hostname.toLowerCase();
      const blocked = addresses.find((entry) => isBlockedAddress(entry.address));
      if (blocked && !allowHosts.includes(host)) {
        return callback(
          new FetchRefused(
            "address",
            `${hostname} resolves to ${blocked.address}, a private or reserved address`,
          ),
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

function requestOnce(url: URL, options: Required<Omit<SafeFetchOptions, "signal">>, signal: AbortSignal) {
  return new Promise<RawResponse>((resolve, reject) => {
    const client = url.protocol === "https:" ? https : http;
    const request = client.request(
      url,
      {
        method: "GET",
        lookup: guardedLookup(options.allowHosts),
        signal,
        headers: {
          "user-agent": options.userAgent,
          accept: "text/html,application/xhtml+xml,text/plain;q=0.8",
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
        const length = Number(response.headers["content-length"] ?? 0);
        if (length > options.maxBytes) {
          response.destroy();
          return reject(new FetchRefused("too_large", `the page is larger than ${options.maxBytes} bytes`));
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
          if (size > options.maxBytes) {
            response.destroy();
            decoded.destroy();
            reject(new FetchRefused("too_large", `the page is larger than ${options.maxBytes} bytes`));
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
 * it runs in: http(s) only; every host resolved and refused if any address is private, loopback,
 * link-local or metadata (unless the host is in `allowHosts`); each redirect checked again; size,
 * time and redirect caps; readable content types only.
 */
export async function safeFetch(target: string, options: SafeFetchOptions): Promise<FetchedPage> {
  const settings = {
    allowHosts: options.allowHosts.map((host) => host.toLowerCase()),
    maxBytes: options.maxBytes ?? MAX_BYTES,
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
    checkUrl(url, settings.allowHosts);
    let response: RawResponse;
    try {
      response = await requestOnce(url, settings, signal);
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
    return {
      url: url.toString(),
      contentType: response.contentType,
      text: decode(response.body as Buffer, response.contentType),
    };
  }
}
