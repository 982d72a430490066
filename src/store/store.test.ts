import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { describe } from "vitest";
import { dropSchema, freshSchemaName, testDatabaseUrl } from "../../test/helpers/postgres.ts";
import { describeStoreContract } from "../../test/helpers/store-contract.ts";
import { PostgresStore } from "./postgres/postgres-store.ts";
import { SqliteStore } from "./sqlite/sqlite-store.ts";

describeStoreContract("SQLite", async () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "utility402-store-"));
  return {
    store: new SqliteStore(path.join(dir, "store.sqlite")),
    dispose: async () => fs.rmSync(dir, { recursive: true, force: true }),
  };
});

const databaseUrl = testDatabaseUrl();
if (databaseUrl) {
  describeStoreContract("PostgreSQL", async () => {
    const schema = freshSchemaName("store_contract");
    return {
      store: await PostgresStore.open({ connectionString: databaseUrl, poolSize: 5, schema }),
      dispose: () => dropSchema(databaseUrl, schema),
    };
  });
} else {
  describe.skip("Store contract: PostgreSQL (set TEST_DATABASE_URL; always run in CI)", () => {});
}
