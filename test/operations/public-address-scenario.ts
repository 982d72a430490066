/**
 * The research brief against pages on PUBLIC addresses, without leaving the machine. Run only by
 * research-brief-public-address.e2e.test.ts, as PID 1 of fresh network, mount and PID namespaces
 * (`unshare --net --mount --pid --fork --mount-proc`): it puts public addresses on the namespace's
 * own loopback interface, bind-mounts a hosts file of its own over /etc/hosts (in its mount
 * namespace only), serves SearXNG-shaped search and the pages there (HTTP, HTTPS with a private CA
 * the test made, IPv4 and IPv6), starts the real service with its local chain, pays for a brief,
 * and prints one line `SUMMARY {json}` for the test to check. Private targets listen too and count
 * connections: the fetcher must refuse them without connecting.
 *
 * Every process it starts (servers, the service, anvil) ends with it: it stops them itself, and the
 * PID namespace takes down anything left when it exits.
 */
import { execFileSync } from "node:child_process";
import fs from "node:fs";
import http from "node:http";
import https from "node:https";
import type { AddressInfo } from "node:net";
import os from "node:os";
import path from "node:path";
import { devPrivateKey } from "../../src/chain/dev-accounts.ts";
import { createPayer } from "../../src/client/paying-fetch.ts";
import { researchBrief } from "../../src/operations/research-brief/index.ts";
import { safeFetch } from "../../src/operations/research-brief/safe-fetch.ts";
import { minimalPdf } from "../helpers/minimal-pdf.ts";
import { jsonPost, startTestService, usdcBalances } from "../helpers/service.ts";

const NEWS_V4 = "93.184.216.34";
const PAPERS_V4 = "185.15.59.224";
const WIKI_V6 = "2606:4700::1111";
const INTRANET_V4 = "10.0.0.5";
const METADATA_V4 = "169.254.169.254";

const HOSTS_FILE = `127.0.0.1 localhost
::1 localhost ip6-localhost ip6-loopback
${NEWS_V4} news.example.org
${PAPERS_V4} papers.example.com search.example.org
${WIKI_V6} wiki.example.net
${INTRANET_V4} intranet.example
127.0.0.1 sneaky.example
`;

const QUESTION = "Why do lithium-ion batteries lose capacity in cold weather, and how can fleets limit it?";

const PAGES: Record<string, { title: string; paragraphs: string[] }> = {
  "cold-chemistry": {
    title: "The chemistry of cold batteries",
    paragraphs: [
      "Lithium-ion batteries lose usable capacity in cold weather because the electrolyte becomes more viscous and lithium ions move more slowly between the electrodes.",
      "At minus twenty degrees Celsius a typical cell delivers roughly sixty to seventy percent of its rated capacity, although most of that capacity returns once the cell warms up again.",
      "Charging in the cold is the larger risk: lithium plating on the graphite anode can permanently reduce capacity and, in severe cases, create internal short circuits.",
    ],
  },
  "fleet-practice": {
    title: "Winter practice for electric fleets",
    paragraphs: [
      "Fleet operators limit cold-weather capacity loss by preconditioning batteries while vehicles are still plugged in, so the energy for heating comes from the grid rather than the pack.",
      "Parking vehicles indoors or in sheltered depots keeps cells several degrees warmer overnight and measurably reduces the morning range penalty for lithium-ion packs.",
      "Operators also schedule charging to finish shortly before departure, because a battery that was just charged is still warm when the shift starts in cold weather.",
    ],
  },
  "heat-pump-range": {
    title: "Heat pumps and winter range",
    paragraphs: [
      "Cabin heating is a major share of winter energy use in electric vehicles, and resistive heaters draw several kilowatts at low temperatures, which drivers notice as lost battery capacity.",
      "Heat pumps move heat instead of generating it and can cut heating energy by half in mild cold, which limits the apparent capacity loss fleets see in cold weather.",
      "Below about minus fifteen degrees Celsius the efficiency advantage of heat pumps shrinks, so range still falls noticeably in very cold climates.",
    ],
  },
  "winter-degradation": {
    title: "Long-term degradation in cold climates",
    paragraphs: [
      "A multi-year study of fleet vehicles in Nordic climates found that cold weather alone caused little permanent degradation of lithium-ion batteries when charging limits were respected.",
      "Permanent capacity loss was mostly associated with repeated fast charging of cold packs, which promotes lithium plating on the anode.",
      "Vehicles that preconditioned their batteries before fast charging showed degradation rates similar to vehicles in temperate climates.",
    ],
  },
};
const PDF_PARAGRAPHS = [
  "This report measures how lithium-ion battery capacity falls in cold weather across a fleet of two hundred delivery vans during three winters.",
  "Usable capacity fell by a quarter at minus ten degrees Celsius, mainly because ion transport in the cold electrolyte slows, and it recovered fully after the packs were warmed.",
  "Fleets that kept vans in heated depots and preconditioned packs before each shift limited the loss to less than a tenth of rated capacity.",
];

const pageHtml = (page: { title: string; paragraphs: string[] }) =>
  `<!doctype html><html lang="en"><head><meta charset="utf-8"><title>${page.title}</title></head><body>
<nav><a href="/">Home</a> <a href="/about">About</a></nav>
<main><article><h1>${page.title}</h1>
${page.paragraphs.map((paragraph) => `<p>${paragraph}</p>`).join("\n")}
</article></main><footer><p>Copyright the publisher.</p></footer></body></html>`;

const INTERNAL_PAGE = `<!doctype html><html><head><title>INTERNAL</title></head><body><main><article><h1>INTERNAL</h1>
${Array.from({ length: 6 }, () => "<p>INTERNAL-SECRET lithium-ion batteries cold weather capacity fleets limit this internal page must never be read by the research fetcher.</p>").join("\n")}
</article></main></body></html>`;

function run(command: string, args: string[]) {
  execFileSync(command, args, { stdio: ["ignore", "ignore", "pipe"] });
}

interface Served {
  server: http.Server;
  /** `METHOD host path → local address` of every request. */
  requests: { host: string; path: string; localAddress: string; tls: boolean }[];
  connections: number;
}

async function serve(
  address: string,
  port: number,
  handler: (request: http.IncomingMessage, response: http.ServerResponse) => void,
  tls?: { key: Buffer; cert: Buffer },
): Promise<Served & { port: number }> {
  const served: Served = { server: undefined as unknown as http.Server, requests: [], connections: 0 };
  const listener: http.RequestListener = (request, response) => {
    served.requests.push({
      host: request.headers.host ?? "",
      path: request.url ?? "",
      localAddress: request.socket.localAddress ?? "",
      tls: tls !== undefined,
    });
    handler(request, response);
  };
  served.server = tls ? https.createServer(tls, listener) : http.createServer(listener);
  served.server.on("connection", () => served.connections++);
  await new Promise<void>((resolve, reject) => {
    served.server.once("error", reject);
    served.server.listen(port, address, resolve);
  });
  return { ...served, port: (served.server.address() as AddressInfo).port };
}

async function main() {
  if (process.pid !== 1 || !process.env.SCENARIO_MARKER) {
    throw new Error(
      "public-address-scenario.ts changes network addresses and /etc/hosts: it runs only as PID 1 of the namespaces that research-brief-public-address.e2e.test.ts creates",
    );
  }
  const cleanups: (() => Promise<unknown> | unknown)[] = [];
  const cleanUp = async () => {
    for (const step of cleanups.splice(0).reverse()) {
      try {
        await step();
      } catch (error) {
        process.stderr.write(`cleanup: ${(error as Error).message}\n`);
      }
    }
  };
  for (const signal of ["SIGTERM", "SIGINT"] as const) {
    process.once(signal, () => {
      process.stderr.write(`scenario: ${signal}, stopping\n`);
      void cleanUp().finally(() => process.exit(1));
    });
  }
  try {
    return await scenario(cleanups);
  } finally {
    await cleanUp();
  }
}

async function scenario(cleanups: (() => Promise<unknown> | unknown)[]) {
  // The namespace's network: only a loopback interface, carrying the public and private addresses.
  run("ip", ["link", "set", "lo", "up"]);
  for (const address of [NEWS_V4, PAPERS_V4, INTRANET_V4, METADATA_V4])
    run("ip", ["addr", "add", `${address}/32`, "dev", "lo"]);
  run("ip", ["-6", "addr", "add", `${WIKI_V6}/128`, "dev", "lo", "nodad"]);

  // Names, in this mount namespace only; no DNS server at all.
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "utility402-netns-"));
  cleanups.push(() => fs.rmSync(dir, { recursive: true, force: true }));
  fs.writeFileSync(path.join(dir, "hosts"), HOSTS_FILE);
  fs.writeFileSync(path.join(dir, "resolv.conf"), "# no name servers in this namespace\n");
  run("mount", ["--bind", path.join(dir, "hosts"), "/etc/hosts"]);
  if (fs.existsSync("/etc/resolv.conf"))
    run("mount", ["--bind", path.join(dir, "resolv.conf"), "/etc/resolv.conf"]);

  const tlsDir = process.env.SCENARIO_TLS_DIR as string;
  const tls = {
    key: fs.readFileSync(path.join(tlsDir, "server.key")),
    cert: fs.readFileSync(path.join(tlsDir, "server.pem")),
  };
  const servers: (Served & { port: number; name: string })[] = [];
  const start = async (
    name: string,
    address: string,
    port: number,
    handler: Parameters<typeof serve>[2],
    withTls?: boolean,
  ) => {
    const served = { ...(await serve(address, port, handler, withTls ? tls : undefined)), name };
    cleanups.push(
      () =>
        new Promise((resolve) => {
          served.server.closeAllConnections();
          served.server.close(resolve);
        }),
    );
    servers.push(served);
    return served;
  };

  // Private targets: each would serve a readable page, and counts connections (must stay 0).
  const internalPage = (_request: http.IncomingMessage, response: http.ServerResponse) =>
    response.writeHead(200, { "content-type": "text/html; charset=utf-8" }).end(INTERNAL_PAGE);
  const privateTargets = [
    await start("intranet 10.0.0.5:80", INTRANET_V4, 80, internalPage),
    await start("loopback 127.0.0.1:80", "127.0.0.1", 80, internalPage),
    await start("loopback [::1]:80", "::1", 80, internalPage),
    await start("metadata 169.254.169.254:80", METADATA_V4, 80, internalPage),
    await start("internal service 127.0.0.1:<port>", "127.0.0.1", 0, internalPage),
  ];
  const internalPort = (privateTargets.at(-1) as { port: number }).port;

  // Public pages: news (IPv4, HTTP and HTTPS), wiki (IPv6), papers (IPv4, HTTPS, a PDF).
  const articles = (request: http.IncomingMessage, response: http.ServerResponse) => {
    const url = new URL(request.url ?? "/", "http://x");
    const slug = url.pathname.split("/").at(-1) ?? "";
    const page = PAGES[slug];
    if (url.pathname === "/moved") {
      // A public page redirecting into the machine: refused at the redirect.
      response.writeHead(302, { location: `http://127.0.0.1:${internalPort}/metrics` }).end();
    } else if (page) {
      response.writeHead(200, { "content-type": "text/html; charset=utf-8" }).end(pageHtml(page));
    } else if (url.pathname === "/cold-study.pdf") {
      response
        .writeHead(200, { "content-type": "application/pdf" })
        .end(minimalPdf([PDF_PARAGRAPHS], "Cold-weather capacity of a delivery fleet"));
    } else {
      response.writeHead(404, { "content-type": "text/html" }).end("<p>not found</p>");
    }
  };
  await start("news http", NEWS_V4, 80, articles);
  await start("news https", NEWS_V4, 443, articles, true);
  await start("wiki http (IPv6)", WIKI_V6, 80, articles);
  await start("papers https", PAPERS_V4, 443, articles, true);

  const publicUrls = [
    "http://news.example.org/articles/cold-chemistry",
    "https://news.example.org/articles/fleet-practice",
    "http://wiki.example.net/wiki/heat-pump-range",
    `http://[${WIKI_V6}]/wiki/winter-degradation`,
    "https://papers.example.com/cold-study.pdf",
  ];
  const privateUrls = [
    "http://intranet.example/",
    "http://sneaky.example/",
    "http://127.0.0.1/",
    "http://[::1]/",
    "http://169.254.169.254/latest/meta-data/",
    "http://[::ffff:127.0.0.1]/",
    "http://news.example.org/moved",
  ];
  // A provider answers at most 10 hits a query: the question as asked finds the private targets,
  // the other queries the public pages. Merged by rank they are 12 candidates, all of which are
  // tried (7 sources are asked for and only the 5 public pages can be read).
  const hitsFor = (query: string) => (query === QUESTION ? privateUrls : publicUrls);
  const titleOf = (link: string, index: number) =>
    link.endsWith(".pdf")
      ? "Cold-weather capacity of a delivery fleet (PDF)"
      : (PAGES[link.split("/").at(-1) ?? ""]?.title ?? `Result ${index + 1}`);
  const searches: string[] = [];
  await start("search http", PAPERS_V4, 80, (request, response) => {
    const url = new URL(request.url ?? "/", "http://x");
    if (url.pathname !== "/search" || url.searchParams.get("format") !== "json") {
      response.writeHead(403, { "content-type": "text/html" }).end("<p>format not allowed</p>");
      return;
    }
    const query = url.searchParams.get("q") ?? "";
    searches.push(query);
    const hits = hitsFor(query);
    response.writeHead(200, { "content-type": "application/json" }).end(
      JSON.stringify({
        query,
        number_of_results: hits.length,
        results: hits.map((link, index) => ({
          url: link,
          title: titleOf(link, index),
          content: "Lithium-ion batteries in cold weather.",
          engine: "duckduckgo",
          engines: ["duckduckgo"],
          positions: [index + 1],
          score: 2 / (index + 1),
          category: "general",
        })),
        answers: [],
        corrections: [],
        infoboxes: [],
        suggestions: [],
        unresponsive_engines: [],
      }),
    );
  });

  // The real service: local chain on 127.0.0.1, SearXNG on a public address, NO fetch allow-list.
  const service = await startTestService(
    { RESEARCH_SEARCH_PROVIDER: "searxng", RESEARCH_SEARCH_URL: "http://search.example.org" },
    { operations: [researchBrief] },
  );
  cleanups.push(() => service.stop());
  const balanceOf = usdcBalances(service.localChain?.rpcUrl as string);
  const payer = createPayer(devPrivateKey(6));
  const before = { payer: await balanceOf(payer.address), payTo: await balanceOf(service.payTo) };

  const accepted = await payer.fetch(
    `${service.url}/v1/research-brief`,
    jsonPost({ question: QUESTION, requiredSources: privateUrls.length, maxWords: 300 }),
  );
  const acceptedBody = await accepted.json();
  const statuses: string[] = [];
  let job: Record<string, unknown> = {};
  if (accepted.status === 202) {
    const deadline = Date.now() + 90_000;
    while (Date.now() < deadline) {
      job = await (await fetch(acceptedBody.statusUrl)).json();
      if (statuses.at(-1) !== job.status) statuses.push(job.status as string);
      if (job.status === "succeeded" || job.status === "failed") break;
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
  }
  // The payment is settled when the brief is ready: wait for the balance to move (or not).
  const balanceDeadline = Date.now() + 30_000;
  let after = { payer: await balanceOf(payer.address), payTo: await balanceOf(service.payTo) };
  while (job.status === "succeeded" && after.payer === before.payer && Date.now() < balanceDeadline) {
    await new Promise((resolve) => setTimeout(resolve, 200));
    after = { payer: await balanceOf(payer.address), payTo: await balanceOf(service.payTo) };
  }
  await new Promise((resolve) => setTimeout(resolve, 500)); // a second charge would show by now
  after = { payer: await balanceOf(payer.address), payTo: await balanceOf(service.payTo) };

  // The same private targets through the fetcher directly: the refusal, its code and reason.
  const refusals: Record<string, { code: string; message: string }> = {};
  for (const url of privateUrls) {
    const error = await safeFetch(url, { allowHosts: [], timeoutMs: 5000 }).then(
      () => ({ code: "fetched", message: "" }),
      (e: { code?: string; message: string }) => ({ code: e.code ?? "error", message: e.message }),
    );
    refusals[url] = error;
  }
  // And a public page directly, over each transport.
  const direct: Record<string, string> = {};
  for (const url of publicUrls) {
    direct[url] = await safeFetch(url, { allowHosts: [], timeoutMs: 5000 }).then(
      (page) => `fetched ${page.contentType.split(";")[0]} ${page.text.length} chars`,
      (e: Error) => `refused: ${e.message}`,
    );
  }

  const marker = process.env.SCENARIO_MARKER as string;
  const markedProcesses = fs
    .readdirSync("/proc")
    .filter((entry) => /^\d+$/.test(entry))
    .filter((pid) => {
      try {
        return fs.readFileSync(`/proc/${pid}/environ`, "latin1").includes(marker);
      } catch {
        return false;
      }
    })
    .map((pid) => fs.readFileSync(`/proc/${pid}/cmdline`, "latin1").split("\0")[0]?.split("/").at(-1));

  const result = job.result as { sources?: { url: string; title: string; excerpt: string }[] } | undefined;
  return {
    accepted: { status: accepted.status, body: acceptedBody },
    statuses,
    job: { status: job.status, error: job.error, result: job.result },
    sources: (result?.sources ?? []).map((source) => source.url),
    publicUrls,
    privateUrls,
    searches: searches.length,
    balances: {
      payerDelta: (after.payer - before.payer).toString(),
      payToDelta: (after.payTo - before.payTo).toString(),
    },
    privateConnections: Object.fromEntries(privateTargets.map((target) => [target.name, target.connections])),
    publicRequests: servers
      .filter((server) => !privateTargets.includes(server))
      .flatMap((server) =>
        server.requests.map(
          (request) => `${server.name}: ${request.host}${request.path} → ${request.localAddress}`,
        ),
      ),
    refusals,
    direct,
    processesWhileRunning: markedProcesses,
  };
}

main().then(
  (summary) => {
    process.stdout.write(
      `SUMMARY ${JSON.stringify(summary, (_key, value) => (typeof value === "bigint" ? value.toString() : value))}\n`,
    );
    process.exit(0);
  },
  (error) => {
    process.stderr.write(
      `scenario failed: ${error instanceof Error ? (error.stack ?? error.message) : error}\n`,
    );
    process.exit(1);
  },
);
