import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { startLocalChain } from "../../src/chain/local-chain.ts";
import { createLogger } from "../../src/log.ts";
import { csvCleanup } from "../../src/operations/csv-cleanup/index.ts";
import { freePort } from "../../test/helpers/service.ts";
import { summariseProfile } from "./cpu-profile.ts";
import { runLoad } from "./load.ts";
import { startServerProcess } from "./servers.ts";

const body = JSON.stringify(csvCleanup.example.input);
const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), "p402-"));
const chain = await startLocalChain({ port: await freePort(), log: createLogger("silent") });
const port = await freePort();
const ours = await startServerProcess({
  name: "ours",
  script: "bench/load/profiled-serve.ts",
  args: ["serve"],
  port,
  readyPath: "/readyz",
  ipc: true,
  env: {
    PORT: String(port),
    PAYMENT_MODE: "self",
    RPC_URL: chain.rpcUrl,
    X402_SETTLER_PRIVATE_KEY: "0x" + "11".repeat(32),
    X402_PAY_TO: "0x" + "22".repeat(20),
    DATA_DIR: dataDir,
    LOG_LEVEL: process.env.LL ?? "info",
  },
});
await runLoad({
  targets: [ours.url + "/v1/csv-cleanup"],
  connections: 32,
  method: "POST",
  body,
  durationSeconds: 2,
});
await ours.request({ type: "profile-start" }, "profile-started");
const cpu0 = ours.cpuSeconds();
const r = await runLoad({
  targets: [ours.url + "/v1/csv-cleanup"],
  connections: 32,
  method: "POST",
  body,
  durationSeconds: 4,
});
const cpu = ours.cpuSeconds() - cpu0;
await ours.request({ type: "profile-stop", path: "/tmp/perfwork/402.cpuprofile" }, "profile-written");
console.log(r.statuses, r.perSecond, "cpu us/req", (cpu * 1e6) / r.responses);
const s = summariseProfile("/tmp/perfwork/402.cpuprofile", 25);
console.table(s.byPlace);
console.table(s.topFunctions);
await ours.stop();
await chain.stop();
