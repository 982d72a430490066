import type { Config } from "../config.ts";
import { PostgresStore } from "./postgres/postgres-store.ts";
import { SqliteStore } from "./sqlite/sqlite-store.ts";
import type { Store } from "./store.ts";

/** The store DATABASE_URL names: a SQLite file (one machine) or PostgreSQL (shared by instances). */
export async function openStore(
  database: Config["database"],
  options: { now?: () => number } = {},
): Promise<Store> {
  return database.kind === "postgres"
    ? PostgresStore.open({
        connectionString: database.url,
        poolSize: database.poolSize,
        statementTimeoutMs: database.statementTimeoutMs,
        now: options.now,
      })
    : new SqliteStore(database.path, options);
}
