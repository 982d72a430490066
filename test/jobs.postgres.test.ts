import { describe } from "vitest";
import { PostgresStore } from "../src/store/postgres/postgres-store.ts";
import { dropSchema, freshSchemaName, testDatabaseUrl } from "./helpers/postgres.ts";
import { jobQueueContract } from "./jobs-contract.ts";

const databaseUrl = testDatabaseUrl();
if (databaseUrl) {
  jobQueueContract("PostgreSQL", async (now) => {
    const schema = freshSchemaName("jobs_contract");
    const store = await PostgresStore.open({ connectionString: databaseUrl, poolSize: 5, schema, now });
    return {
      store,
      async cleanup() {
        await store.close();
        await dropSchema(databaseUrl, schema);
      },
    };
  });
} else {
  describe.skip("JobQueue contract: PostgreSQL (set TEST_DATABASE_URL; always run in CI)", () => {});
}
