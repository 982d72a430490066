import { randomBytes } from "node:crypto";
import pg from "pg";
import { requireEnv } from "./requires.ts";

/**
 * The PostgreSQL the tests may use (TEST_DATABASE_URL); undefined skips them outside CI, with a line
 * saying so. CI always sets it (.ci/run starts the machine's PostgreSQL), so there a missing URL is an
 * error rather than a skip.
 */
export function testDatabaseUrl(): string | undefined {
  const postgres = requireEnv(
    "PostgreSQL",
    "TEST_DATABASE_URL",
    "apt-get install postgresql, then TEST_DATABASE_URL=postgres://user:password@127.0.0.1:5432/database",
  );
  if (postgres.skip) return undefined;
  postgres.check();
  return process.env.TEST_DATABASE_URL;
}

/** A schema name of its own per test file and run, so parallel test files never share tables. */
export const freshSchemaName = (prefix: string) => `${prefix}_${randomBytes(6).toString("hex")}`;

export async function dropSchema(url: string, schema: string): Promise<void> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    await client.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`);
  } finally {
    await client.end();
  }
}

/**
 * A fresh schema in the test database and a DATABASE_URL that selects it (through the connection's
 * search_path), so a whole service runs on PostgreSQL in isolation; dispose drops the schema.
 */
export async function createTestDatabase(
  prefix = "service",
): Promise<{ url: string; dispose(): Promise<void> }> {
  const base = testDatabaseUrl();
  if (!base) throw new Error("TEST_STORE=postgres needs TEST_DATABASE_URL");
  const schema = freshSchemaName(prefix);
  const client = new pg.Client({ connectionString: base });
  await client.connect();
  try {
    await client.query(`CREATE SCHEMA ${schema}`);
  } finally {
    await client.end();
  }
  const url = new URL(base);
  url.searchParams.set("options", `-c search_path=${schema}`);
  return { url: url.toString(), dispose: () => dropSchema(base, schema) };
}
