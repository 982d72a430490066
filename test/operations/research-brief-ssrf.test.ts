import http from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { FetchRefused, safeFetch } from "../../src/operations/research-brief/safe-fetch.ts";

/** A page server on 127.0.0.1 that also redirects wherever a test asks it to. */
let server: http.Server;
let base: string;
let requests = 0;

beforeAll(async () => {
  server = http.createServer((request, response) => {
    requests++;
    const url = new URL(request.url ?? "/", "http://127.0.0.1");
    if (url.pathname === "/redirect") {
      response.writeHead(302, { location: url.searchParams.get("to") ?? "/" }).end();
    } else if (url.pathname === "/loop") {
      response.writeHead(302, { location: "/loop" }).end();
    } else if (url.pathname === "/big") {
      response.writeHead(200, { "content-type": "text/html" });
      response.end(`<p>${"x".repeat(50_000)}</p>`);
    } else if (url.pathname === "/image") {
      response.writeHead(200, { "content-type": "image/png" }).end("png");
    } else {
      response.writeHead(200, { "content-type": "text/html; charset=utf-8" }).end("<p>internal page</p>");
    }
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
afterAll(async () => {
  await new Promise((resolve) => server.close(resolve));
});

async function refusal(url: string, allowHosts: string[] = []): Promise<FetchRefused> {
  const error = await safeFetch(url, { allowHosts, timeoutMs: 5000 }).then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(error, url).toBeInstanceOf(FetchRefused);
  return error as FetchRefused;
}

describe("the research fetcher refuses what could reach inside the network", () => {
  it("loopback is refused unless the host is explicitly allowed", async () => {
    const before = requests;
    for (const url of [
      `${base}/`,
      base.replace("127.0.0.1", "localhost"),
      base.replace("127.0.0.1", "127.9.9.9"),
      base.replace("127.0.0.1", "[::1]"),
      base.replace("127.0.0.1", "[::ffff:127.0.0.1]"),
      "http://2130706433/", // 127.0.0.1 written as one number
      "http://0x7f.1/",
      "http://0.0.0.0/",
    ]) {
      expect((await refusal(url)).code, url).toBe("address");
    }
    expect(requests).toBe(before);
    const allowed = await safeFetch(`${base}/page`, { allowHosts: ["127.0.0.1"] });
    expect(allowed.text).toBe("<p>internal page</p>");
    expect(requests).toBe(before + 1);
  });

  it("private, carrier-grade NAT, link-local and metadata addresses are refused", async () => {
    for (const url of [
      "http://10.0.0.1/",
      "http://172.16.5.4/",
      "http://192.168.1.10/admin",
      "http://100.64.0.1/",
      "http://169.254.10.20/",
      "http://169.254.169.254/latest/meta-data/",
      "https://169.254.169.254/",
      "http://[fe80::1]/",
      "http://[fd00:ec2::254]/latest/meta-data/",
      "http://[fc00::1]/",
    ]) {
      expect((await refusal(url)).code, url).toBe("address");
    }
  });

  it("a redirect to a private address (or a name resolving to one) is refused at the redirect", async () => {
    const allow = ["127.0.0.1"];
    for (const target of [
      "http://10.1.2.3/",
      "http://169.254.169.254/latest/meta-data/",
      base.replace("127.0.0.1", "localhost"),
    ]) {
      const error = await refusal(`${base}/redirect?to=${encodeURIComponent(target)}`, allow);
      expect(error.code, target).toBe("address");
    }
    const toFile = await refusal(`${base}/redirect?to=${encodeURIComponent("file:///etc/passwd")}`, allow);
    expect(toFile.code).toBe("scheme");
    const followed = await safeFetch(`${base}/redirect?to=/landing`, { allowHosts: allow });
    expect(followed.url).toBe(`${base}/landing`);
  });

  it("file: and every scheme other than http and https are refused", async () => {
    for (const url of [
      "file:///etc/passwd",
      "ftp://example.com/file",
      "gopher://example.com/",
      "data:text/html,<p>hi</p>",
      "javascript:alert(1)",
      "ws://example.com/",
    ]) {
      expect((await refusal(url)).code, url).toBe("scheme");
    }
    expect((await refusal("not a url")).code).toBe("scheme");
    expect((await refusal("http://user:secret@example.com/")).code).toBe("credentials");
  });

  it("redirect, size and content-type caps hold for allowed hosts too", async () => {
    const allow = ["127.0.0.1"];
    expect((await refusal(`${base}/loop`, allow)).code).toBe("redirects");
    const big = await safeFetch(`${base}/big`, { allowHosts: allow, maxBytes: 10_000 }).catch((e) => e);
    expect(big.code).toBe("too_large");
    expect((await refusal(`${base}/image`, allow)).code).toBe("content_type");
  });
});
