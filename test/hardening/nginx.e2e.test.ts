import { type ChildProcess, spawn } from "node:child_process";
import fs from "node:fs";
import http from "node:http";
import net from "node:net";
import os from "node:os";
import path from "node:path";
import { registerExactEvmScheme } from "@x402/evm/exact/client";
import { wrapFetchWithPayment, x402Client } from "@x402/fetch";
import { privateKeyToAccount } from "viem/accounts";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { OPERATIONS } from "../../src/catalog/registry.ts";
import { devPrivateKey } from "../../src/chain/dev-accounts.ts";
import type { AnyOperation } from "../../src/contract/operation.ts";
import { buildProducts } from "../../src/products/build.ts";
import { fixturePages, startTedStandIn, type TedStandIn } from "../fixtures/ted/stand-in.ts";
import { requireTool } from "../helpers/requires.ts";
import { startTestService, type TestService } from "../helpers/service.ts";
import { researchEnv, type StandIns, startStandIns } from "../operations/research-brief-standins.ts";
import { createClinicalDb } from "../products/helpers.ts";

/**
 * Every paid route through Debian's stock nginx, with the shipped deploy/nginx.conf (only its addresses
 * changed), in front of the real service on the local chain. nginx reads all of a response's headers into
 * one proxy_buffer_size buffer (4 KB by default) and answers 502 when they do not fit; a request header
 * line over 8 KB is refused with 400. So every response's header block and the official client's
 * PAYMENT-SIGNATURE must stay within 4 KB.
 */

const NGINX = "/usr/sbin/nginx";
const nginxInstalled = requireTool("nginx", NGINX, "apt-get install nginx-light");
/** nginx's default proxy_buffer_size: one memory page. */
const PROXY_BUFFER = 4096;
const DEPLOY_CONF = path.resolve("deploy/nginx.conf");

interface Exchange {
  operation: string;
  status: number;
  /** The raw response header block: status line, every header line, the blank line. */
  headerBytes: number;
  /** The PAYMENT-SIGNATURE the request carried, if any. */
  paymentSignatureBytes?: number;
}

/**
 * A fetch over node:http that records each response's raw header block as it came off the wire
 * (rawHeaders keeps every line as sent, repeated headers included), for the official client to wrap.
 */
function recordingFetch(operation: () => string, exchanges: Exchange[]): typeof fetch {
  return (async (input: RequestInfo | URL, init?: RequestInit) => {
    const request = new Request(input, init);
    const body = request.body ? Buffer.from(await request.arrayBuffer()) : undefined;
    const headers: Record<string, string> = Object.fromEntries(request.headers);
    if (body) headers["content-length"] = String(body.length);
    return new Promise<Response>((resolve, reject) => {
      const outgoing = http.request(request.url, { method: request.method, headers }, (incoming) => {
        const chunks: Buffer[] = [];
        incoming.on("data", (chunk: Buffer) => chunks.push(chunk));
        incoming.on("error", reject);
        incoming.on("end", () => {
          let block = `HTTP/${incoming.httpVersion} ${incoming.statusCode} ${incoming.statusMessage}\r\n`;
          const responseHeaders = new Headers();
          for (let i = 0; i < incoming.rawHeaders.length; i += 2) {
            const [name, value] = [incoming.rawHeaders[i] as string, incoming.rawHeaders[i + 1] as string];
            block += `${name}: ${value}\r\n`;
            responseHeaders.append(name, value);
          }
          const status = incoming.statusCode as number;
          exchanges.push({
            operation: operation(),
            status,
            headerBytes: Buffer.byteLength(`${block}\r\n`),
            ...(headers["payment-signature"]
              ? { paymentSignatureBytes: Buffer.byteLength(headers["payment-signature"]) }
              : {}),
          });
          const payload = status === 204 || status === 304 ? null : Buffer.concat(chunks);
          resolve(new Response(payload, { status, headers: responseHeaders }));
        });
      });
      outgoing.on("error", reject);
      outgoing.end(body);
    });
  }) as typeof fetch;
}

/** deploy/nginx.conf as shipped, with only the upstream address and the listen port rewritten. */
function readDeployConf(upstream: string, listen: string): string {
  const shipped = fs.readFileSync(DEPLOY_CONF, "utf8");
  expect(shipped).toContain("server api:8402;");
  expect(shipped).toContain("listen 8402;");
  return shipped
    .replace("server api:8402;", `server ${upstream};`)
    .replace("listen 8402;", `listen ${listen};`);
}

async function waitForPort(port: number, child: ChildProcess, log: () => string): Promise<void> {
  for (let attempt = 0; attempt < 200; attempt++) {
    if (child.exitCode !== null) throw new Error(`nginx exited (${child.exitCode}): ${log()}`);
    const open = await new Promise<boolean>((resolve) => {
      const socket = net.connect(port, "127.0.0.1");
      socket.once("connect", () => socket.end(() => resolve(true)));
      socket.once("error", () => resolve(false));
    });
    if (open) return;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  throw new Error(`nginx did not listen on ${port}: ${log()}`);
}

const requestFor = (operation: AnyOperation, base: string): [string, RequestInit] => {
  const input = operation.example.input as Record<string, unknown> | undefined;
  if (operation.inputFrom === "body") {
    return [
      base + operation.path,
      {
        method: operation.method,
        headers: { "content-type": "application/json" },
        body: JSON.stringify(input ?? {}),
      },
    ];
  }
  const query = new URLSearchParams(
    Object.entries(input ?? {}).map(([key, value]) => [key, String(value)] as [string, string]),
  ).toString();
  return [`${base}${operation.path}${query ? `?${query}` : ""}`, { method: operation.method }];
};

describe.skipIf(nginxInstalled.skip)("every paid route through Debian's nginx with deploy/nginx.conf", () => {
  let work = ""; // made in beforeAll: a skipped suite runs its body but not its hooks
  let nginx: ChildProcess | undefined;
  let nginxLog = "";
  let nginxUrl = "";
  let service: TestService | undefined;
  let standIns: StandIns | undefined;
  let ted: TedStandIn | undefined;
  const exchanges: Exchange[] = [];
  let current = "";
  const recorded = recordingFetch(() => current, exchanges);
  const client = x402Client.fromConfig({ schemes: [], spendControls: { maxAmountPerPayment: "$100" } });
  registerExactEvmScheme(client, { signer: privateKeyToAccount(devPrivateKey(6)) });
  const payingFetch = wrapFetchWithPayment(recorded, client);

  beforeAll(async () => {
    nginxInstalled.check();
    work = fs.mkdtempSync(path.join(os.tmpdir(), "utility402-nginx-"));
    // What every operation needs to answer: the TED, search, page and model stand-ins, and a release of
    // every product (the clinical one from a database ingested from a stand-in registry).
    const now = new Date();
    const pages = fixturePages("search-response-03.json", now);
    ted = await startTedStandIn((request) => ({
      body: pages[(request.page as number) - 1] ?? { ...pages[0], notices: [] },
    }));
    standIns = await startStandIns();
    const releasesDir = path.join(work, "releases");
    const clinicalDb = path.join(work, "clinical.sqlite");
    await createClinicalDb(clinicalDb);
    for (const outcome of await buildProducts({ releasesDir, clinicalDb })) {
      if (outcome.state === "unbuildable") throw new Error(outcome.reason);
    }
    // nginx's port is held until the service (and its chain) have taken theirs, so none of them takes it.
    const held = net.createServer();
    await new Promise<void>((resolve) => held.listen(0, "127.0.0.1", resolve));
    const nginxPort = (held.address() as net.AddressInfo).port;
    nginxUrl = `http://127.0.0.1:${nginxPort}`;
    service = await startTestService({
      ...researchEnv(standIns),
      TED_API_URL: ted.url,
      RELEASES_DIR: releasesDir,
      CLINICAL_TRIALS_DB: clinicalDb,
      BASE_URL: nginxUrl,
    });
    // service.url is BASE_URL (nginx's address): the service itself listens on its configured port.
    const servicePort = service.config.port;
    await new Promise((resolve) => held.close(resolve));

    // A standalone nginx: its own prefix, pid, logs and temp directories, the shipped server block
    // included in the http {} context the Debian main config would give it. Workers run as the
    // compiled-in user (nobody when started as root): they must reach the temp directories.
    const prefix = path.join(work, "nginx");
    fs.mkdirSync(prefix);
    for (const dir of ["client_body", "proxy", "fastcgi", "uwsgi", "scgi"]) {
      fs.mkdirSync(path.join(prefix, dir), { mode: 0o777 });
      fs.chmodSync(path.join(prefix, dir), 0o777);
    }
    fs.chmodSync(work, 0o755);
    fs.chmodSync(prefix, 0o755);
    fs.writeFileSync(
      path.join(prefix, "utility402.conf"),
      readDeployConf(`127.0.0.1:${servicePort}`, `127.0.0.1:${nginxPort}`),
    );
    const main = [
      `pid ${path.join(prefix, "nginx.pid")};`,
      `error_log ${path.join(prefix, "error.log")} warn;`,
      "worker_processes 1;",
      "events {}",
      "http {",
      `  access_log ${path.join(prefix, "access.log")};`,
      ...["client_body", "proxy", "fastcgi", "uwsgi", "scgi"].map(
        (dir) => `  ${dir}_temp_path ${path.join(prefix, dir)};`,
      ),
      `  include ${path.join(prefix, "utility402.conf")};`,
      "}",
      "",
    ].join("\n");
    fs.writeFileSync(path.join(prefix, "nginx.conf"), main);
    nginx = spawn(
      NGINX,
      [
        "-p",
        `${prefix}/`,
        "-c",
        path.join(prefix, "nginx.conf"),
        "-e",
        path.join(prefix, "error.log"),
        "-g",
        "daemon off;",
      ],
      { stdio: ["ignore", "pipe", "pipe"] },
    );
    nginx.stdout?.on("data", (chunk) => (nginxLog += chunk));
    nginx.stderr?.on("data", (chunk) => (nginxLog += chunk));
    await waitForPort(nginxPort, nginx, () => nginxLog);
  }, 240_000);

  afterAll(async () => {
    if (nginx?.pid && nginx.exitCode === null && nginx.signalCode === null) {
      const exited = new Promise((resolve) => nginx?.once("exit", resolve));
      process.kill(nginx.pid, "SIGTERM");
      await exited;
    }
    await service?.stop();
    await standIns?.stop();
    await ted?.close();
    if (work) fs.rmSync(work, { recursive: true, force: true });
  });

  const errorLog = () => {
    const file = path.join(work, "nginx", "error.log");
    return fs.existsSync(file) ? fs.readFileSync(file, "utf8").split("\n").slice(-5).join("\n") : "";
  };

  it("the test covers every operation of the registry and the five products", () => {
    expect(OPERATIONS.length).toBe(15);
    expect(OPERATIONS.filter((operation) => operation.path.startsWith("/v1/products/"))).toHaveLength(5);
  });

  for (const operation of OPERATIONS) {
    const success = operation.kind === "async" ? 202 : 200;
    it(`${operation.method} ${operation.path}: 402 unpaid, ${success} paid with @x402/fetch, headers ≤ 4 KB`, async () => {
      current = operation.id;
      const [url, init] = requestFor(operation, nginxUrl);
      const unpaid = await recorded(url, init);
      await unpaid.arrayBuffer();
      expect(unpaid.status, `${operation.id} unpaid; nginx: ${errorLog()}`).toBe(402);

      const paid = await payingFetch(url, init);
      const body = await paid.arrayBuffer();
      expect(
        paid.status,
        `${operation.id} paid: ${Buffer.from(body).toString("utf8").slice(0, 300)}; nginx: ${errorLog()}`,
      ).toBe(success);
      const mine = exchanges.filter((exchange) => exchange.operation === operation.id);
      // The unpaid call, the wrapper's own unpaid call and its paid retry.
      expect(mine.map((exchange) => exchange.status)).toEqual([402, 402, success]);
      for (const exchange of mine) {
        expect(exchange.headerBytes, `${operation.id} ${exchange.status}`).toBeLessThanOrEqual(PROXY_BUFFER);
      }
      const signature = mine.at(-1)?.paymentSignatureBytes as number;
      expect(signature).toBeGreaterThan(0);
      expect(signature).toBeLessThanOrEqual(PROXY_BUFFER);
    });
  }

  it("reports the largest header blocks and PAYMENT-SIGNATURE", () => {
    const largest = (select: (exchange: Exchange) => number | undefined) =>
      Math.max(...exchanges.map((exchange) => select(exchange) ?? 0));
    const report = {
      "402 header block": largest((e) => (e.status === 402 ? e.headerBytes : undefined)),
      "paid answer header block": largest((e) => (e.status !== 402 ? e.headerBytes : undefined)),
      "PAYMENT-SIGNATURE": largest((e) => e.paymentSignatureBytes),
    };
    console.log(`nginx e2e, largest over ${exchanges.length} exchanges (bytes): ${JSON.stringify(report)}`);
    expect(exchanges.length).toBe(3 * OPERATIONS.length);
    for (const bytes of Object.values(report)) expect(bytes).toBeLessThanOrEqual(PROXY_BUFFER);
  });
});
