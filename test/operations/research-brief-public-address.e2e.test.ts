import { execFileSync, spawn, spawnSync } from "node:child_process";
import { randomUUID } from "node:crypto";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, describe, expect, it } from "vitest";
import { requires } from "../helpers/requires.ts";

/**
 * Every earlier research test served its pages from an allow-listed 127.0.0.1, so a fetcher that
 * refused every public IPv4 address passed them all. Here the pages sit on public addresses
 * (93.184.216.34, 185.15.59.224, 2606:4700::1111) without leaving the machine: the scenario runs
 * in network, mount and PID namespaces of its own (root, as here and in CI), with those addresses
 * on its loopback interface and its own /etc/hosts. See public-address-scenario.ts.
 */

const ROOT = fileURLToPath(new URL("../..", import.meta.url));
const SCENARIO = "test/operations/public-address-scenario.ts";
const UNSHARE = ["--net", "--mount", "--pid", "--fork", "--mount-proc", "--propagation", "private"];
const PRICE = 5_000_000n;

/** Why the namespaces cannot be made here, or undefined when they can. */
function namespacesUnavailable(): string | undefined {
  for (const tool of ["unshare", "ip", "mount", "openssl"]) {
    const found = spawnSync("sh", ["-c", `command -v ${tool}`], { encoding: "utf8" });
    if (found.status !== 0) return `${tool} is not installed (util-linux, iproute2, mount, openssl)`;
  }
  const probe = spawnSync("unshare", [...UNSHARE, "--", "ip", "link", "set", "lo", "up"], {
    encoding: "utf8",
  });
  if (probe.status !== 0) {
    return `unshare could not create network, mount and PID namespaces (${(probe.stderr || probe.error?.message || "").trim()}); this test needs root (uid ${process.getuid?.()})`;
  }
  return undefined;
}

/** A private CA and a server certificate for news.example.org and papers.example.com. */
function makeTls(dir: string) {
  const openssl = (...args: string[]) => execFileSync("openssl", args, { cwd: dir, stdio: "pipe" });
  const ec = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes"];
  openssl(
    "req",
    "-x509",
    ...ec,
    "-keyout",
    "ca.key",
    "-out",
    "ca.pem",
    "-days",
    "2",
    "-subj",
    "/CN=utility402 test CA",
    "-addext",
    "basicConstraints=critical,CA:TRUE",
    "-addext",
    "keyUsage=critical,keyCertSign,cRLSign",
  );
  openssl("req", ...ec, "-keyout", "server.key", "-out", "server.csr", "-subj", "/CN=news.example.org");
  fs.writeFileSync(
    path.join(dir, "server.ext"),
    "subjectAltName=DNS:news.example.org,DNS:papers.example.com\nbasicConstraints=critical,CA:FALSE\nkeyUsage=critical,digitalSignature\nextendedKeyUsage=serverAuth\n",
  );
  openssl(
    "x509",
    "-req",
    "-in",
    "server.csr",
    "-CA",
    "ca.pem",
    "-CAkey",
    "ca.key",
    "-CAcreateserial",
    "-out",
    "server.pem",
    "-days",
    "2",
    "-extfile",
    "server.ext",
  );
}

/** Processes on this machine whose environment carries the marker (the scenario and its children). */
function markedProcesses(marker: string): string[] {
  return fs
    .readdirSync("/proc")
    .filter((entry) => /^\d+$/.test(entry))
    .filter((pid) => {
      try {
        return fs.readFileSync(`/proc/${pid}/environ`, "latin1").includes(marker);
      } catch {
        return false;
      }
    })
    .map((pid) => {
      try {
        return `${pid} ${fs.readFileSync(`/proc/${pid}/cmdline`, "latin1").replaceAll("\0", " ")}`;
      } catch {
        return pid;
      }
    });
}

function runScenario(env: NodeJS.ProcessEnv, timeoutMs: number) {
  return new Promise<{ code: number | null; stdout: string; stderr: string }>((resolve) => {
    const child = spawn(
      "unshare",
      [...UNSHARE, "--kill-child", "--", process.execPath, "--import", "tsx", SCENARIO],
      { cwd: ROOT, env, stdio: ["ignore", "pipe", "pipe"] },
    );
    let stdout = "";
    let stderr = "";
    child.stdout.on("data", (chunk) => (stdout += chunk));
    child.stderr.on("data", (chunk) => (stderr += chunk));
    // unshare --kill-child: when unshare dies, the scenario (PID 1 of its namespace) is killed,
    // and with it every process in the namespace.
    const timer = setTimeout(() => {
      stderr += `\n[test] scenario still running after ${timeoutMs} ms: killed\n`;
      child.kill("SIGKILL");
    }, timeoutMs);
    child.on("close", (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr });
    });
  });
}

const namespaces = requires(
  "network namespaces",
  namespacesUnavailable,
  "run as root with util-linux, mount, iproute2 and openssl (apt-get install util-linux mount iproute2 openssl)",
);

describe("research-brief with its sources on public addresses (network namespace, nothing leaves the machine)", () => {
  // Everything the scenario writes (CA, hosts file, the service's data) is under here, so that it
  // is removed even when the scenario is killed.
  const workDir = fs.mkdtempSync(path.join(os.tmpdir(), "utility402-netns-"));
  const tlsDir = path.join(workDir, "tls");
  const tmpDir = path.join(workDir, "tmp");
  afterAll(() => fs.rmSync(workDir, { recursive: true, force: true }));

  it.skipIf(namespaces.skip)(
    "reads public IPv4 and IPv6 pages (HTTP, HTTPS, a PDF), refuses every private target without connecting, charges once",
    async () => {
      namespaces.check();
      fs.mkdirSync(tlsDir);
      fs.mkdirSync(tmpDir);
      makeTls(tlsDir);
      const marker = `utility402-scenario-${randomUUID()}`;
      const env: NodeJS.ProcessEnv = {
        ...process.env,
        NODE_EXTRA_CA_CERTS: path.join(tlsDir, "ca.pem"),
        SCENARIO_TLS_DIR: tlsDir,
        SCENARIO_MARKER: marker,
        TMPDIR: tmpDir,
      };
      for (const name of ["TEST_STORE", "DATABASE_URL", "RESEARCH_FETCH_ALLOW_HOSTS", "NODE_OPTIONS"])
        delete env[name];

      const { code, stdout, stderr } = await runScenario(env, 150_000);
      // Nothing the scenario started outlives it (service, anvil, servers, tsx's esbuild).
      expect(markedProcesses(marker)).toEqual([]);
      const line = stdout.split("\n").find((candidate) => candidate.startsWith("SUMMARY "));
      expect(code, `scenario exited ${code}\n${stderr}`).toBe(0);
      expect(line, `no summary\n${stdout}\n${stderr}`).toBeDefined();
      const summary = JSON.parse((line as string).slice("SUMMARY ".length));

      // The job: accepted, run, succeeded, with exactly the public pages as its sources.
      expect(summary.accepted.status).toBe(202);
      expect(summary.statuses.at(-1), JSON.stringify(summary.job)).toBe("succeeded");
      expect(summary.searches).toBeGreaterThanOrEqual(2);
      expect([...summary.sources].sort()).toEqual([...summary.publicUrls].sort());
      expect(summary.sources).toEqual(
        expect.arrayContaining([
          "http://news.example.org/articles/cold-chemistry", // a name on public IPv4
          "https://news.example.org/articles/fleet-practice", // HTTPS, private CA
          "http://wiki.example.net/wiki/heat-pump-range", // a name on public IPv6
          "http://[2606:4700::1111]/wiki/winter-degradation", // an IPv6 literal
          "https://papers.example.com/cold-study.pdf", // a PDF
        ]),
      );
      expect(JSON.stringify(summary.job.result)).not.toContain("INTERNAL-SECRET");
      const pdfSource = summary.job.result.sources.find((source: { url: string }) =>
        source.url.endsWith(".pdf"),
      );
      expect(pdfSource.excerpt).toContain("lithium-ion battery capacity falls in cold weather");
      expect(summary.job.result.caveats[0]).toBe(
        "Source shortfall: only 5 of the 7 required sources could be found and read; the answer rests on fewer sources than asked for.",
      );
      // The pages were served from the public addresses.
      for (const address of ["93.184.216.34", "185.15.59.224", "2606:4700::1111"]) {
        expect(
          summary.publicRequests.some((request: string) => request.endsWith(`→ ${address}`)),
          address,
        ).toBe(true);
      }

      // Paid once: USD 5.00 from the payer to the service.
      expect(BigInt(summary.balances.payerDelta)).toBe(-PRICE);
      expect(BigInt(summary.balances.payToDelta)).toBe(PRICE);

      // Private targets: refused by address, and not one connection reached them.
      expect(summary.privateConnections).toEqual({
        "intranet 10.0.0.5:80": 0,
        "loopback 127.0.0.1:80": 0,
        "loopback [::1]:80": 0,
        "metadata 169.254.169.254:80": 0,
        "internal service 127.0.0.1:<port>": 0,
      });
      expect(Object.keys(summary.refusals)).toEqual(summary.privateUrls);
      for (const [url, refusal] of Object.entries(summary.refusals) as [
        string,
        { code: string; message: string },
      ][]) {
        expect(refusal.code, `${url}: ${refusal.message}`).toBe("address");
      }
      expect(summary.refusals["http://intranet.example/"].message).toContain("resolves to 10.0.0.5");
      expect(summary.refusals["http://sneaky.example/"].message).toContain("resolves to 127.0.0.1");
      expect(summary.refusals["http://news.example.org/moved"].message).toMatch(
        /^127\.0\.0\.1 is in 127\.0\.0\.0\/8/,
      );
      for (const url of summary.publicUrls) expect(summary.direct[url], url).toMatch(/^fetched /);
      expect(summary.direct["https://papers.example.com/cold-study.pdf"]).toMatch(
        /^fetched application\/pdf/,
      );

      // While it ran, the service's chain was a child inside the namespace (and is gone now, above).
      expect(summary.processesWhileRunning).toContain("anvil");
    },
    180_000,
  );
});
