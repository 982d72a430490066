import type { Migration } from "../sqlite/migrations.ts";

/** Append only, like the SQLite list: a released migration is never edited. */
export const POSTGRES_MIGRATIONS: Migration[] = [
  {
    version: 1,
    name: "payments ledger",
    sql: `
      CREATE TABLE payments (
        payment_key     TEXT PRIMARY KEY,
        payload_hash    TEXT NOT NULL,
        request_hash    TEXT NOT NULL,
        operation_id    TEXT NOT NULL,
        network         TEXT NOT NULL,
        asset           TEXT NOT NULL,
        amount          NUMERIC(78, 0) NOT NULL,
        payer           TEXT NOT NULL,
        pay_to          TEXT NOT NULL,
        nonce           TEXT NOT NULL,
        valid_before    BIGINT NOT NULL,
        lease_until     BIGINT NOT NULL,
        state           TEXT NOT NULL CHECK (state IN ('verified', 'settled', 'released', 'failed')),
        tx_hash         TEXT,
        request_id      TEXT NOT NULL,
        error           TEXT,
        outcome         JSONB,
        pending_outcome JSONB,
        created_at      TIMESTAMPTZ NOT NULL,
        updated_at      TIMESTAMPTZ NOT NULL
      );
      CREATE INDEX payments_created_at ON payments (created_at);
      CREATE INDEX payments_operation_state ON payments (operation_id, state);
    `,
  },
  {
    version: 2,
    name: "settler claims",
    sql: `
      CREATE TABLE settler_claims (
        account     TEXT PRIMARY KEY,
        instance_id TEXT NOT NULL,
        lease_until BIGINT NOT NULL
      );
    `,
  },
  {
    version: 3,
    name: "shared cache entries",
    sql: `
      CREATE TABLE cache_entries (
        key         TEXT PRIMARY KEY,
        value       TEXT,
        stored_at   BIGINT,
        load_owner  TEXT,
        load_until  BIGINT NOT NULL DEFAULT 0
      );
      CREATE INDEX cache_entries_stored_at ON cache_entries (stored_at);
    `,
  },
  {
    version: 4,
    name: "durable jobs and worker liveness",
    sql: `
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
        lease_until   BIGINT,
        progress      TEXT,
        result        TEXT,
        error         TEXT,
        created_at    TIMESTAMPTZ NOT NULL,
        started_at    TIMESTAMPTZ,
        finished_at   TIMESTAMPTZ,
        updated_at    TIMESTAMPTZ NOT NULL
      );
      CREATE INDEX jobs_runnable ON jobs (state, type, created_at);
      CREATE INDEX jobs_finished_at ON jobs (finished_at);
      CREATE TABLE workers (
        id          TEXT PRIMARY KEY,
        types       TEXT NOT NULL,
        host        TEXT NOT NULL,
        pid         INTEGER NOT NULL,
        started_at  TEXT NOT NULL,
        last_seen   BIGINT NOT NULL
      );
    `,
  },
  {
    version: 5,
    name: "held payments and jobs ready for settlement",
    sql: `
      ALTER TABLE payments DROP CONSTRAINT payments_state_check;
      ALTER TABLE payments ADD CONSTRAINT payments_state_check
        CHECK (state IN ('verified', 'held', 'settled', 'released', 'failed'));
      ALTER TABLE payments ADD COLUMN held JSONB;
      CREATE INDEX payments_held ON payments (state) WHERE state = 'held';
      ALTER TABLE jobs DROP CONSTRAINT jobs_state_check;
      ALTER TABLE jobs ADD CONSTRAINT jobs_state_check
        CHECK (state IN ('awaiting_payment', 'queued', 'running', 'ready', 'succeeded', 'failed'));
    `,
  },
  {
    version: 6,
    name: "orphaned payments found by their lease",
    sql: `
      CREATE INDEX payments_verified_lease ON payments (lease_until) WHERE state = 'verified';
    `,
  },
  {
    version: 7,
    name: "settlement transactions the chain lost",
    sql: `
      CREATE TABLE settlement_transactions (
        tx_hash    TEXT PRIMARY KEY,
        account    TEXT NOT NULL,
        nonce      BIGINT NOT NULL,
        kind       TEXT NOT NULL CHECK (kind IN ('call', 'filler')),
        state      TEXT NOT NULL CHECK (state IN ('dropped', 'resent', 'landed', 'reverted', 'lost', 'filled')),
        resent     INTEGER NOT NULL DEFAULT 0,
        detail     TEXT,
        updated_at TIMESTAMPTZ NOT NULL
      );
      CREATE INDEX payments_tx_hash ON payments (tx_hash) WHERE tx_hash IS NOT NULL;
    `,
  },
  {
    version: 8,
    name: "payment-identifiers (x402 extension): a client's idempotency key and the payment holding it",
    sql: `
      CREATE TABLE payment_identifiers (
        key         TEXT PRIMARY KEY,
        payment_key TEXT NOT NULL,
        claimed_at  BIGINT NOT NULL
      );
    `,
  },
  {
    version: 9,
    name: "a payer's unfinished payments counted at each held admission",
    sql: `
      CREATE INDEX payments_payer_unfinished ON payments (payer, state) WHERE state IN ('verified', 'held');
    `,
  },
  {
    version: 10,
    name: "sign-in-with-x: the nonces used, and a payer's payments by operation",
    sql: `
      CREATE TABLE sign_in_nonces (
        nonce      TEXT PRIMARY KEY,
        keep_until BIGINT NOT NULL
      );
      CREATE INDEX sign_in_nonces_keep_until ON sign_in_nonces (keep_until);
      CREATE INDEX payments_payer_operation ON payments (payer, operation_id, created_at);
    `,
  },
  {
    version: 11,
    name: "voucher channels (x402 batch-settlement) and their ledger of voucher-paid calls",
    sql: `
      CREATE TABLE voucher_channels (
        channel_id             TEXT PRIMARY KEY,
        network                TEXT NOT NULL,
        config                 JSONB NOT NULL,
        payer                  TEXT NOT NULL,
        charged_cumulative     NUMERIC(78, 0),
        signed_max_claimable   NUMERIC(78, 0),
        signature              TEXT,
        balance                NUMERIC(78, 0),
        total_claimed          NUMERIC(78, 0),
        withdraw_requested_at  BIGINT,
        refund_nonce           NUMERIC(78, 0),
        onchain_synced_at      BIGINT,
        last_request_at        BIGINT,
        busy_owner             TEXT,
        busy_until             BIGINT NOT NULL DEFAULT 0,
        created_at             TIMESTAMPTZ NOT NULL,
        updated_at             TIMESTAMPTZ NOT NULL
      );
      CREATE TABLE voucher_charges (
        channel_id            TEXT NOT NULL REFERENCES voucher_channels (channel_id),
        signed_max_claimable  NUMERIC(78, 0) NOT NULL,
        signature             TEXT NOT NULL,
        payload_hash          TEXT NOT NULL,
        request_hash          TEXT NOT NULL,
        door                  TEXT NOT NULL,
        operation_id          TEXT NOT NULL,
        amount                NUMERIC(78, 0) NOT NULL,
        cumulative            NUMERIC(78, 0) NOT NULL,
        request_id            TEXT NOT NULL,
        outcome               JSONB NOT NULL,
        created_at            TIMESTAMPTZ NOT NULL,
        PRIMARY KEY (channel_id, signed_max_claimable)
      );
      CREATE INDEX voucher_charges_created_at ON voucher_charges (created_at);
    `,
  },
];
