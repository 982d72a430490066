export interface Migration {
  version: number;
  name: string;
  sql: string;
  /**
   * The migration rebuilds a table others reference (SQLite cannot change a CHECK in place): foreign keys
   * are switched off around its transaction and checked before it commits (SQLite's documented procedure).
   */
  rebuildsTables?: boolean;
}

/** Append only: a released migration is never edited, a change is a new version. */
export const SQLITE_MIGRATIONS: Migration[] = [
  {
    version: 1,
    name: "payments ledger",
    sql: `
      CREATE TABLE payments (
        payment_key   TEXT PRIMARY KEY,
        payload_hash  TEXT NOT NULL,
        request_hash  TEXT NOT NULL,
        operation_id  TEXT NOT NULL,
        network       TEXT NOT NULL,
        asset         TEXT NOT NULL,
        amount        TEXT NOT NULL,
        payer         TEXT NOT NULL,
        pay_to        TEXT NOT NULL,
        nonce         TEXT NOT NULL,
        valid_before  INTEGER NOT NULL,
        lease_until   INTEGER NOT NULL,
        state         TEXT NOT NULL CHECK (state IN ('verified', 'settled', 'released', 'failed')),
        tx_hash       TEXT,
        request_id    TEXT NOT NULL,
        error         TEXT,
        outcome       TEXT,
        pending_outcome TEXT,
        created_at    TEXT NOT NULL,
        updated_at    TEXT NOT NULL
      );
      CREATE INDEX payments_created_at ON payments (created_at);
      CREATE INDEX payments_operation_state ON payments (operation_id, state);
    `,
  },
  {
    version: 2,
    name: "jobs",
    sql: `
      CREATE TABLE jobs (
        id            TEXT PRIMARY KEY,
        operation_id  TEXT NOT NULL,
        state         TEXT NOT NULL,
        input         TEXT NOT NULL,
        result        TEXT,
        error         TEXT,
        payment_key   TEXT REFERENCES payments (payment_key),
        created_at    TEXT NOT NULL,
        updated_at    TEXT NOT NULL
      );
    `,
  },
  {
    version: 3,
    name: "settler claims",
    sql: `
      CREATE TABLE settler_claims (
        account     TEXT PRIMARY KEY,
        instance_id TEXT NOT NULL,
        lease_until INTEGER NOT NULL
      );
    `,
  },
  {
    version: 4,
    name: "shared cache entries",
    sql: `
      CREATE TABLE cache_entries (
        key         TEXT PRIMARY KEY,
        value       TEXT,
        stored_at   INTEGER,
        load_owner  TEXT,
        load_until  INTEGER NOT NULL DEFAULT 0
      );
      CREATE INDEX cache_entries_stored_at ON cache_entries (stored_at);
    `,
  },
  {
    version: 5,
    name: "durable jobs and worker liveness",
    // Version 2's jobs table was a draft that nothing wrote to: replaced by the queue's shape.
    sql: `
      DROP TABLE jobs;
      CREATE TABLE jobs (
        id            TEXT PRIMARY KEY,
        type          TEXT NOT NULL,
        state         TEXT NOT NULL
                      CHECK (state IN ('awaiting_payment', 'queued', 'running', 'succeeded', 'failed')),
        input         TEXT NOT NULL,
        payment_key   TEXT UNIQUE REFERENCES payments (payment_key),
        attempts      INTEGER NOT NULL DEFAULT 0,
        max_attempts  INTEGER NOT NULL,
        lease_owner   TEXT,
        lease_until   INTEGER,
        progress      TEXT,
        result        TEXT,
        error         TEXT,
        created_at    TEXT NOT NULL,
        started_at    TEXT,
        finished_at   TEXT,
        updated_at    TEXT NOT NULL
      );
      CREATE INDEX jobs_runnable ON jobs (state, type, created_at);
      CREATE INDEX jobs_finished_at ON jobs (finished_at);
      CREATE TABLE workers (
        id          TEXT PRIMARY KEY,
        types       TEXT NOT NULL,
        host        TEXT NOT NULL,
        pid         INTEGER NOT NULL,
        started_at  TEXT NOT NULL,
        last_seen   INTEGER NOT NULL
      );
    `,
  },
  {
    version: 6,
    name: "held payments and jobs ready for settlement",
    rebuildsTables: true,
    sql: `
      CREATE TABLE payments_new (
        payment_key   TEXT PRIMARY KEY,
        payload_hash  TEXT NOT NULL,
        request_hash  TEXT NOT NULL,
        operation_id  TEXT NOT NULL,
        network       TEXT NOT NULL,
        asset         TEXT NOT NULL,
        amount        TEXT NOT NULL,
        payer         TEXT NOT NULL,
        pay_to        TEXT NOT NULL,
        nonce         TEXT NOT NULL,
        valid_before  INTEGER NOT NULL,
        lease_until   INTEGER NOT NULL,
        state         TEXT NOT NULL CHECK (state IN ('verified', 'held', 'settled', 'released', 'failed')),
        tx_hash       TEXT,
        request_id    TEXT NOT NULL,
        error         TEXT,
        outcome       TEXT,
        pending_outcome TEXT,
        held          TEXT,
        created_at    TEXT NOT NULL,
        updated_at    TEXT NOT NULL
      );
      INSERT INTO payments_new (payment_key, payload_hash, request_hash, operation_id, network, asset, amount, payer,
        pay_to, nonce, valid_before, lease_until, state, tx_hash, request_id, error, outcome, pending_outcome,
        created_at, updated_at)
      SELECT payment_key, payload_hash, request_hash, operation_id, network, asset, amount, payer,
        pay_to, nonce, valid_before, lease_until, state, tx_hash, request_id, error, outcome, pending_outcome,
        created_at, updated_at FROM payments;
      DROP TABLE payments;
      ALTER TABLE payments_new RENAME TO payments;
      CREATE INDEX payments_created_at ON payments (created_at);
      CREATE INDEX payments_operation_state ON payments (operation_id, state);
      CREATE INDEX payments_held ON payments (state) WHERE state = 'held';

      CREATE TABLE jobs_new (
        id            TEXT PRIMARY KEY,
        type          TEXT NOT NULL,
        state         TEXT NOT NULL
                      CHECK (state IN ('awaiting_payment', 'queued', 'running', 'ready', 'succeeded', 'failed')),
        input         TEXT NOT NULL,
        payment_key   TEXT UNIQUE REFERENCES payments (payment_key),
        attempts      INTEGER NOT NULL DEFAULT 0,
        max_attempts  INTEGER NOT NULL,
        lease_owner   TEXT,
        lease_until   INTEGER,
        progress      TEXT,
        result        TEXT,
        error         TEXT,
        created_at    TEXT NOT NULL,
        started_at    TEXT,
        finished_at   TEXT,
        updated_at    TEXT NOT NULL
      );
      INSERT INTO jobs_new SELECT id, type, state, input, payment_key, attempts, max_attempts, lease_owner,
        lease_until, progress, result, error, created_at, started_at, finished_at, updated_at FROM jobs;
      DROP TABLE jobs;
      ALTER TABLE jobs_new RENAME TO jobs;
      CREATE INDEX jobs_runnable ON jobs (state, type, created_at);
      CREATE INDEX jobs_finished_at ON jobs (finished_at);
    `,
  },
  {
    version: 7,
    name: "orphaned payments found by their lease",
    sql: `
      CREATE INDEX payments_verified_lease ON payments (lease_until) WHERE state = 'verified';
    `,
  },
  {
    version: 8,
    name: "settlement transactions the chain lost",
    sql: `
      CREATE TABLE settlement_transactions (
        tx_hash    TEXT PRIMARY KEY,
        account    TEXT NOT NULL,
        nonce      INTEGER NOT NULL,
        kind       TEXT NOT NULL CHECK (kind IN ('call', 'filler')),
        state      TEXT NOT NULL CHECK (state IN ('dropped', 'resent', 'landed', 'reverted', 'lost', 'filled')),
        resent     INTEGER NOT NULL DEFAULT 0,
        detail     TEXT,
        updated_at TEXT NOT NULL
      );
      CREATE INDEX payments_tx_hash ON payments (tx_hash) WHERE tx_hash IS NOT NULL;
    `,
  },
  {
    version: 9,
    name: "payment-identifiers (x402 extension): a client's idempotency key and the payment holding it",
    sql: `
      CREATE TABLE payment_identifiers (
        key         TEXT PRIMARY KEY,
        payment_key TEXT NOT NULL,
        claimed_at  INTEGER NOT NULL
      );
    `,
  },
  {
    version: 10,
    name: "a payer's unfinished payments counted at each held admission",
    sql: `
      CREATE INDEX payments_payer_unfinished ON payments (payer, state) WHERE state IN ('verified', 'held');
    `,
  },
  {
    version: 11,
    name: "sign-in-with-x: the nonces used, and a payer's payments by operation",
    sql: `
      CREATE TABLE sign_in_nonces (
        nonce      TEXT PRIMARY KEY,
        keep_until INTEGER NOT NULL
      );
      CREATE INDEX sign_in_nonces_keep_until ON sign_in_nonces (keep_until);
      CREATE INDEX payments_payer_operation ON payments (payer, operation_id, created_at);
    `,
  },
  {
    version: 12,
    name: "voucher channels (x402 batch-settlement) and their ledger of voucher-paid calls",
    sql: `
      CREATE TABLE voucher_channels (
        channel_id             TEXT PRIMARY KEY,
        network                TEXT NOT NULL,
        config                 TEXT NOT NULL,
        payer                  TEXT NOT NULL,
        charged_cumulative     TEXT,
        signed_max_claimable   TEXT,
        signature              TEXT,
        balance                TEXT,
        total_claimed          TEXT,
        withdraw_requested_at  INTEGER,
        refund_nonce           TEXT,
        onchain_synced_at      INTEGER,
        last_request_at        INTEGER,
        busy_owner             TEXT,
        busy_until             INTEGER NOT NULL DEFAULT 0,
        created_at             TEXT NOT NULL,
        updated_at             TEXT NOT NULL
      );
      CREATE TABLE voucher_charges (
        channel_id            TEXT NOT NULL REFERENCES voucher_channels (channel_id),
        signed_max_claimable  TEXT NOT NULL,
        signature             TEXT NOT NULL,
        payload_hash          TEXT NOT NULL,
        request_hash          TEXT NOT NULL,
        door                  TEXT NOT NULL,
        operation_id          TEXT NOT NULL,
        amount                TEXT NOT NULL,
        cumulative            TEXT NOT NULL,
        request_id            TEXT NOT NULL,
        outcome               TEXT NOT NULL,
        created_at            TEXT NOT NULL,
        PRIMARY KEY (channel_id, signed_max_claimable)
      );
      CREATE INDEX voucher_charges_created_at ON voucher_charges (created_at);
    `,
  },
];
