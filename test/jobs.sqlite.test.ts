import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { SqliteStore } from "../src/store/sqlite/sqlite-store.ts";
import { jobQueueContract } from "./jobs-contract.ts";

jobQueueContract("SQLite", async (now) => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "utility402-jobs-"));
  const store = new SqliteStore(path.join(dir, "jobs.sqlite"), { now });
  return {
    store,
    async cleanup() {
      await store.close();
      fs.rmSync(dir, { recursive: true, force: true });
    },
  };
});
