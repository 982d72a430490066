import http from "node:http";
import net, { type AddressInfo } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ConfigError, loadConfig } from "../../src/config.ts";
import { classifyAddress } from "../../src/operations/research-brief/address-class.ts";
import { isAllowedUrl, parseAllowHost } from "../../src/operations/research-brief/fetch-allow.ts";
import { pdfText, readablePage } from "../../src/operations/research-brief/readable.ts";
import { FetchRefused, safeFetch } from "../../src/operations/research-brief/safe-fetch.ts";
import { minimalPdf } from "../helpers/minimal-pdf.ts";

const PDF_PARAGRAPHS = [
  "Lithium-ion batteries lose usable capacity in cold weather because the electrolyte becomes more viscous and lithium ions move more slowly between the electrodes.",
  "Charging in the cold is the larger risk: lithium plating on the graphite anode can permanently reduce capacity (in severe cases it creates internal short circuits).",
];
const PDF = minimalPdf([PDF_PARAGRAPHS, ["A second page that a one-page cap leaves unread."]]);

/** A page server on 127.0.0.1 that also redirects wherever a test asks it to. */
let server: http.Server;
let base: string;
let requests = 0;
let connections = 0;

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
    } else if (url.pathname === "/doc.pdf") {
      response.writeHead(200, { "content-type": "application/pdf" }).end(PDF);
    } else if (url.pathname === "/broken.pdf") {
      response.writeHead(200, { "content-type": "application/pdf" }).end("%PDF-1.4\nnot really a PDF\n");
    } else {
      response.writeHead(200, { "content-type": "text/html; charset=utf-8" }).end("<p>internal page</p>");
    }
  });
  server.on("connection", () => connections++);
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
    const allowed = await safeFetch(`${base}/page`, { allowHosts: [new URL(base).host] });
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
    const allow = [new URL(base).host];
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
    const allow = [new URL(base).host];
    expect((await refusal(`${base}/loop`, allow)).code).toBe("redirects");
    const big = await safeFetch(`${base}/big`, { allowHosts: allow, maxBytes: 10_000 }).catch((e) => e);
    expect(big.code).toBe("too_large");
    expect((await refusal(`${base}/image`, allow)).code).toBe("content_type");
  });
});

describe("the address rule", () => {
  // The bug this rule replaces: a net.BlockList with the IPv4-mapped rule ::ffff:0:0/96 matches
  // every IPv4 address, so every public IPv4 address was refused.
  it("Node's BlockList matches any IPv4 address against an IPv4-mapped rule (why the rule is not a BlockList)", () => {
    const list = new net.BlockList();
    list.addSubnet("::ffff:0:0", 96, "ipv6");
    expect(list.check("8.8.8.8", "ipv4")).toBe(true);
  });

  it.each([
    "8.8.8.8",
    "1.1.1.1",
    "93.184.216.34",
    "185.15.59.224",
    "2606:4700::1111",
    "2620:0:862:ed1a::1",
    "::ffff:8.8.8.8", // IPv4-mapped public
    "64:ff9b::808:808", // NAT64 of 8.8.8.8 (a DNS64 network)
    "2002:808:808::1", // 6to4 of 8.8.8.8
    "100.63.255.255",
    "100.128.0.0",
    "172.15.255.255",
    "172.32.0.0",
    "192.0.1.255",
    "198.17.255.255",
    "198.20.0.0",
    "223.255.255.255",
  ])("%s is public", (address) => {
    expect(classifyAddress(address)).toEqual({ public: true, address });
  });

  it.each([
    ["0.0.0.0", "0.0.0.0/8"],
    ["0.255.1.2", "0.0.0.0/8"],
    ["10.0.0.5", "10.0.0.0/8"],
    ["100.64.0.1", "100.64.0.0/10"],
    ["100.127.255.254", "100.64.0.0/10"],
    ["127.0.0.1", "127.0.0.0/8"],
    ["127.255.255.254", "127.0.0.0/8"],
    ["169.254.169.254", "169.254.0.0/16"],
    ["172.16.5.4", "172.16.0.0/12"],
    ["172.31.255.255", "172.16.0.0/12"],
    ["192.0.0.9", "192.0.0.0/24"],
    ["192.0.2.10", "192.0.2.0/24"],
    ["192.31.196.1", "192.31.196.0/24"],
    ["192.52.193.1", "192.52.193.0/24"],
    ["192.88.99.1", "192.88.99.0/24"],
    ["192.168.1.10", "192.168.0.0/16"],
    ["192.175.48.6", "192.175.48.0/24"],
    ["198.18.0.1", "198.18.0.0/15"],
    ["198.19.255.255", "198.18.0.0/15"],
    ["198.51.100.7", "198.51.100.0/24"],
    ["203.0.113.9", "203.0.113.0/24"],
    ["224.0.0.251", "224.0.0.0/4"],
    ["239.255.255.250", "224.0.0.0/4"],
    ["240.0.0.1", "240.0.0.0/4"],
    ["255.255.255.255", "255.255.255.255/32"],
    ["::", "::/128"],
    ["::1", "::1/128"],
    ["0:0:0:0:0:0:0:1", "::1/128"],
    ["64:ff9b:1::a00:1", "64:ff9b:1::/48"],
    ["64:ff9b:1:ffff::1", "64:ff9b:1::/48"],
    ["100::1", "100::/64"],
    ["100::ffff:ffff:ffff:ffff", "100::/64"],
    ["2001:2::1", "2001::/23"], // benchmarking
    ["2001:1::1", "2001::/23"], // PCP anycast
    ["2001:1ff:ffff::1", "2001::/23"],
    ["2001:db8::1", "2001:db8::/32"],
    ["2001:db8:ffff::1", "2001:db8::/32"],
    ["2620:4f:8000::42", "2620:4f:8000::/48"],
    ["3fff::1", "3fff::/20"],
    ["3fff:fff::1", "3fff::/20"],
    ["5f00::1", "5f00::/16"],
    ["fc00::1", "fc00::/7"],
    ["fd00:ec2::254", "fc00::/7"],
    ["fe80::1", "fe80::/10"],
    ["fe80::1%eth0", "fe80::/10"],
    ["febf::1", "fe80::/10"],
    ["fec0::1", "fec0::/10"],
    ["ff02::1", "ff00::/8"],
    ["1::", ""], // outside 2000::/3: reserved by the IETF
    ["4000::1", ""],
  ])("%s is refused (%s)", (address, range) => {
    const verdict = classifyAddress(address);
    expect(verdict).toMatchObject({ public: false, range });
    expect(verdict.public || verdict.reason).toContain(address);
  });

  it.each([
    ["::ffff:127.0.0.1", "::ffff:0:0/96", "127.0.0.1"],
    ["::ffff:7f00:1", "::ffff:0:0/96", "127.0.0.1"],
    ["::ffff:169.254.169.254", "::ffff:0:0/96", "169.254.169.254"],
    ["::ffff:a00:5", "::ffff:0:0/96", "10.0.0.5"],
    ["::7f00:1", "::/96", "127.0.0.1"],
    ["::127.0.0.1", "::/96", "127.0.0.1"],
    ["::8.8.8.8", "::/96", "8.8.8.8"], // deprecated IPv4-compatible: refused whatever it carries
    ["64:ff9b::a00:1", "64:ff9b::/96", "10.0.0.1"],
    ["64:ff9b::7f00:1", "64:ff9b::/96", "127.0.0.1"],
    ["64:ff9b::a9fe:a9fe", "64:ff9b::/96", "169.254.169.254"],
    ["2002:c0a8:0101::1", "2002::/16", "192.168.1.1"],
    ["2002:7f00:1::", "2002::/16", "127.0.0.1"],
    ["2002:a9fe:a9fe:1::1", "2002::/16", "169.254.169.254"],
    // Teredo: server 65.54.227.120, client address inverted in the last 32 bits. Refused whatever
    // the client address is; the reason names it.
    ["2001:0:4136:e378:8000:63bf:80ff:fffe", "2001::/32", "127.0.0.1"],
    ["2001:0:4136:e378:8000:63bf:f5ff:fffa", "2001::/32", "10.0.0.5"],
    ["2001:0:4136:e378:8000:63bf:f7f7:f7f7", "2001::/32", "8.8.8.8"],
  ])("%s (in %s, carrying %s) is refused", (address, range, embedded) => {
    const verdict = classifyAddress(address);
    expect(verdict).toMatchObject({ public: false, range });
    expect(verdict.public || verdict.reason).toContain(`carrying ${embedded}`);
  });

  it("anything that is not an IP address is refused", () => {
    for (const text of ["", "localhost", "1.2.3", "1.2.3.4.5", "::g", "1:2:3:4:5:6:7:8:9", "01.2.3.4"]) {
      expect(classifyAddress(text).public, text).toBe(false);
    }
  });

  it("a public IPv4 literal passes the address check (only the aborted signal stops the fetch)", async () => {
    // An aborted signal stops the fetch before any connection (shown on the local server first),
    // so this test never reaches the public addresses it names.
    const before = connections;
    const local = await safeFetch(`${base}/page`, {
      allowHosts: [new URL(base).host],
      signal: AbortSignal.abort(),
    }).catch((e) => e);
    expect(local.code).toBe("network");
    expect(connections).toBe(before);
    for (const url of ["http://93.184.216.34/", "http://8.8.8.8/", "https://[2606:4700::1111]/"]) {
      const error = await safeFetch(url, { allowHosts: [], signal: AbortSignal.abort() }).catch((e) => e);
      expect(error, url).toBeInstanceOf(Error);
      expect((error as FetchRefused).code, url).not.toBe("address");
    }
  });

  it("IPv6 forms that carry a private IPv4 address are refused before any connection", async () => {
    const before = requests;
    for (const host of [
      "[::ffff:7f00:1]",
      "[::7f00:1]",
      "[64:ff9b::7f00:1]",
      "[64:ff9b:1::7f00:1]",
      "[2002:7f00:1::1]",
      "[2001:0:4136:e378:8000:63bf:80ff:fffe]",
    ]) {
      const url = base.replace("127.0.0.1", host);
      expect((await refusal(url)).code, url).toBe("address");
    }
    expect(requests).toBe(before);
  });
});

describe("the allow-list names host:port", () => {
  let other: http.Server;
  let otherPort: number;
  let otherRequests = 0;
  beforeAll(async () => {
    other = http.createServer((_request, response) => {
      otherRequests++;
      response.writeHead(200, { "content-type": "text/plain" }).end("another service on the same host");
    });
    await new Promise<void>((resolve) => other.listen(0, "127.0.0.1", resolve));
    otherPort = (other.address() as AddressInfo).port;
  });
  afterAll(async () => {
    await new Promise((resolve) => other.close(resolve));
  });

  it("a redirect from an allowed host:port to another port of the same host is refused", async () => {
    const allow = [new URL(base).host];
    for (const target of [
      `http://127.0.0.1:${otherPort}/metrics`,
      `http://localhost:${otherPort}/metrics`,
      `http://[::ffff:127.0.0.1]:${otherPort}/metrics`,
    ]) {
      const error = await refusal(`${base}/redirect?to=${encodeURIComponent(target)}`, allow);
      expect(error.code, target).toBe("address");
    }
    expect(otherRequests).toBe(0);
    // Allowing that port too opens it.
    const opened = await safeFetch(
      `${base}/redirect?to=${encodeURIComponent(`http://127.0.0.1:${otherPort}/x`)}`,
      {
        allowHosts: [...allow, `127.0.0.1:${otherPort}`],
      },
    );
    expect(opened.text).toBe("another service on the same host");
    expect(otherRequests).toBe(1);
  });

  it("a bare host allows ports 80 and 443 only", async () => {
    expect((await refusal(`${base}/page`, ["127.0.0.1"])).code).toBe("address");
    const at = (url: string, entries: string[]) => isAllowedUrl(new URL(url), entries);
    expect(at("http://127.0.0.1/", ["127.0.0.1"])).toBe(true);
    expect(at("https://127.0.0.1/", ["127.0.0.1"])).toBe(true);
    expect(at("http://127.0.0.1:443/", ["127.0.0.1"])).toBe(true);
    expect(at("http://127.0.0.1:8080/", ["127.0.0.1"])).toBe(false);
    expect(at("http://127.0.0.1:8080/", ["127.0.0.1:8080"])).toBe(true);
    expect(at("http://127.0.0.1/", ["127.0.0.1:8080"])).toBe(false);
    expect(at("http://[::1]:8080/", ["[::1]:8080"])).toBe(true);
    expect(at("http://[::1]/", ["[::1]"])).toBe(true);
    expect(at("http://[::1]:8080/", ["[::1]"])).toBe(false);
    expect(at("http://intranet.example:8080/", ["intranet.example:8080"])).toBe(true);
    expect(at("http://intranet.example:8081/", ["intranet.example:8080"])).toBe(false);
  });

  it("entries are parsed to the form URLs are compared in; invalid ones are named at start-up", () => {
    expect(parseAllowHost(" Intranet.Example:8080 ")).toEqual({ entry: "intranet.example:8080" });
    expect(parseAllowHost("[0:0::1]:80")).toEqual({ entry: "[::1]:80" });
    expect(parseAllowHost("::1")).toEqual({ entry: "[::1]" });
    expect(parseAllowHost("0x7f.1:81")).toEqual({ entry: "127.0.0.1:81" });
    for (const bad of [
      "http://intranet.example",
      "host:0",
      "host:65536",
      "host:port",
      "a/b",
      "[::1",
      "[nope]:80",
    ]) {
      expect(parseAllowHost(bad), bad).toHaveProperty("error");
    }
    expect(
      loadConfig({ RESEARCH_FETCH_ALLOW_HOSTS: "intranet.example, 10.0.0.5:8080,[fd00::5]:443" }).research
        .fetchAllowHosts,
    ).toEqual(["intranet.example", "10.0.0.5:8080", "[fd00::5]:443"]);
    const error = (() => {
      try {
        loadConfig({ RESEARCH_FETCH_ALLOW_HOSTS: "ok.example,http://bad.example/" });
      } catch (e) {
        return e;
      }
    })();
    expect(error).toBeInstanceOf(ConfigError);
    expect((error as ConfigError).problems).toEqual([
      expect.stringMatching(/^RESEARCH_FETCH_ALLOW_HOSTS: "http:\/\/bad.example\/": /),
    ]);
  });
});

describe("PDF sources", () => {
  it("a PDF is read to paragraphs of text, and readablePage takes them like plain text", async () => {
    const allow = [new URL(base).host];
    const page = await safeFetch(`${base}/doc.pdf`, { allowHosts: allow });
    expect(page.contentType).toBe("application/pdf");
    expect(page.text.split("\n\n")).toEqual([
      ...PDF_PARAGRAPHS,
      "A second page that a one-page cap leaves unread.",
    ]);
    const readable = readablePage(page.text, page.contentType, "Cold batteries (search title)");
    expect(readable).toEqual({ title: "Cold batteries (search title)", text: page.text });
  });

  it("an unparsable PDF is refused as unreadable; the PDF size cap holds", async () => {
    const allow = [new URL(base).host];
    expect((await refusal(`${base}/broken.pdf`, allow)).code).toBe("unreadable");
    const big = await safeFetch(`${base}/doc.pdf`, { allowHosts: allow, maxPdfBytes: 500 }).catch((e) => e);
    expect(big.code).toBe("too_large");
    // The HTML cap does not apply to PDFs, which have their own.
    const small = await safeFetch(`${base}/doc.pdf`, { allowHosts: allow, maxBytes: 500 });
    expect(small.text).toContain("graphite anode");
  });

  it("the parse is bounded: pages, time, and the fetch's signal", async () => {
    const onePage = await pdfText(PDF, { maxPages: 1 });
    expect(onePage).toMatchObject({ pages: 2, pagesRead: 1 });
    expect(onePage.text).not.toContain("second page");
    await expect(pdfText(PDF, { timeoutMs: 1 })).rejects.toThrow(/not read within 1 ms/);
    const controller = new AbortController();
    const reading = pdfText(PDF, { signal: controller.signal });
    controller.abort(new Error("job abandoned"));
    await expect(reading).rejects.toThrow("job abandoned");
  });
});
