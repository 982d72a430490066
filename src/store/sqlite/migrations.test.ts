import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import Database from "better-sqlite3";
import { afterEach, describe, expect, it } from "vitest";
import { SQLITE_MIGRATIONS } from "./migrations.ts";
import { SqliteStore } from "./sqlite-store.ts";

describe("SQLite migrations", () => {
  const dirs: string[] = [];
  afterEach(() => {
    for (const dir of dirs.splice(0)) fs.rmSync(dir, { recursive: true, force: true });
  });

  it("a database of the last release (version 5) keeps its payments and jobs through the table rebuild of version 6", async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), "utility402-migrate-"));
    dirs.push(dir);
    const file = path.join(dir, "store.sqlite");
    const old = new Database(file);
    old.pragma("foreign_keys = ON");
    old.exec(
      "CREATE TABLE schema_migrations (version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at TEXT NOT NULL)",
    );
    for (const migration of SQLITE_MIGRATIONS.filter((m) => m.version <= 5)) {
      old.exec(migration.sql);
      old
        .prepare("INSERT INTO schema_migrations VALUES (?, ?, ?)")
        .run(migration.version, migration.name, "2026-11-01T00:00:00Z");
    }
    old.exec(`
      INSERT INTO payments (payment_key, payload_hash, request_hash, operation_id, network, asset, amount, payer, pay_to,
        nonce, valid_before, lease_until, state, tx_hash, request_id, outcome, created_at, updated_at)
      VALUES ('k1', 'p', 'r', 'research-brief', 'eip155:8453', '0xa', '5000000', '0xpayer', '0xpayto', '0xn', 1, 0,
        'settled', '0xtx', 'req', '{"status":202,"headers":{},"body":"{}"}', '2026-11-01T00:00:00Z', '2026-11-01T00:00:00Z');
      INSERT INTO jobs (id, type, state, input, payment_key, attempts, max_attempts, created_at, updated_at)
      VALUES ('j1', 'research-brief', 'queued', '{}', 'k1', 0, 3, '2026-11-01T00:00:00Z', '2026-11-01T00:00:00Z');
    `);
    old.close();

    const store = new SqliteStore(file);
    try {
      expect(await store.getPayment("k1")).toMatchObject({ state: "settled", txHash: "0xtx", held: null });
      expect(await store.jobs.get("j1")).toMatchObject({ state: "queued", paymentKey: "k1" });
      // The new states are accepted, and the foreign key from jobs to payments still holds.
      await store.reservePayment({
        paymentKey: "k2",
        payloadHash: "p",
        requestHash: "r",
        operationId: "research-brief",
        network: "eip155:8453",
        asset: "0xa",
        amount: "5000000",
        payer: "0xpayer",
        payTo: "0xpayto",
        nonce: "0xm",
        validBefore: 1,
        requestId: "req",
        leaseUntil: 0,
      });
      const held = { payload: {}, requirements: {} } as never;
      expect(await store.holdPayment("k2", { outcome: { status: 202, headers: {}, body: "{}" }, held })).toBe(
        true,
      );
      await expect(
        store.jobs.create({
          id: "j2",
          type: "research-brief",
          input: {},
          paymentKey: "missing",
          maxAttempts: 3,
        }),
      ).rejects.toThrow(/FOREIGN KEY/);
    } finally {
      await store.close();
    }
  });
});
