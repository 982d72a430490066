import pg from "pg";
import { PostgresJobQueue } from "../../jobs/postgres-job-queue.ts";
import { settlementTransactionRecord } from "../settlement-transactions.ts";
import type {
  CacheEntry,
  HeldAdmission,
  HeldAuthorization,
  NewPayment,
  PayerAccount,
  PayerPaymentsQuery,
  PaymentCompletion,
  PaymentCounts,
  PaymentIdentifierClaim,
  PaymentRecord,
  PaymentState,
  Reservation,
  ReserveResult,
  RevenueRow,
  SettlementTransactionNote,
  SettlementTransactionRecord,
  SettlerClaim,
  SettlerClaimResult,
  Store,
  StoredOutcome,
  UnfinishedPayment,
  UnfinishedPaymentRow,
} from "../store.ts";
import { heldRefusal, LATE_LANDING_MS, toUnfinished } from "../store.ts";
import { POSTGRES_MIGRATIONS } from "./migrations.ts";
import { PostgresVoucherChannels } from "./postgres-voucher-channels.ts";

export interface PostgresStoreOptions {
  connectionString: string;
  /** Connections this instance may hold; the sum over all instances must stay under the server's max_connections. */
  poolSize: number;
  /**
   * The longest any one statement may run or wait for a lock, and a transaction may sit idle, before
   * PostgreSQL cancels it (the call answers 503, retry). Default 10 s; 0: no limit (the server's own settings).
   */
  statementTimeoutMs?: number;
  /** A schema of its own (created when missing); tests use one per run. Default: the connection's search_path. */
  schema?: string;
  /** The job queue's clock (epoch ms); injectable in tests. */
  now?: () => number;
}

interface PaymentRow {
  payment_key: string;
  payload_hash: string;
  request_hash: string;
  operation_id: string;
  network: string;
  asset: string;
  amount: string;
  payer: string;
  pay_to: string;
  nonce: string;
  valid_before: string;
  lease_until: string;
  state: PaymentState;
  tx_hash: string | null;
  request_id: string;
  error: string | null;
  outcome: StoredOutcome | null;
  pending_outcome: StoredOutcome | null;
  held: HeldAuthorization | null;
  created_at: Date;
  updated_at: Date;
}

const DEFAULT_STATEMENT_TIMEOUT_MS = 10_000;

const toRecord = (row: PaymentRow): PaymentRecord => ({
  paymentKey: row.payment_key,
  payloadHash: row.payload_hash,
  requestHash: row.request_hash,
  operationId: row.operation_id,
  network: row.network,
  asset: row.asset,
  amount: row.amount,
  payer: row.payer,
  payTo: row.pay_to,
  nonce: row.nonce,
  validBefore: Number(row.valid_before),
  leaseUntil: Number(row.lease_until),
  state: row.state,
  txHash: row.tx_hash,
  requestId: row.request_id,
  error: row.error,
  outcome: row.outcome,
  pendingOutcome: row.pending_outcome,
  held: row.held,
  createdAt: row.created_at.toISOString(),
  updatedAt: row.updated_at.toISOString(),
});

const INSERT_PAYMENT = `INSERT INTO payments (payment_key, payload_hash, request_hash, operation_id, network, asset,
    amount, payer, pay_to, nonce, valid_before, lease_until, state, request_id, created_at, updated_at)
  VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, 'verified', $13, $14, $14)
  ON CONFLICT (payment_key) DO NOTHING`;

const paymentValues = (payment: NewPayment) => [
  payment.paymentKey,
  payment.payloadHash,
  payment.requestHash,
  payment.operationId,
  payment.network,
  payment.asset,
  payment.amount,
  payment.payer,
  payment.payTo,
  payment.nonce,
  payment.validBefore,
  payment.leaseUntil,
  payment.requestId,
  new Date(),
];

/** Every instance runs migrations at start; this lock makes them take turns. */
const MIGRATION_LOCK = "utility402:migrations";

const SCHEMA_NAME = /^[a-z_][a-z0-9_]{0,62}$/;

/**
 * PostgreSQL: the shared store of several API instances and workers. Every state change is one
 * conditional statement, so concurrent instances agree on who owns a payment without locks held
 * across calls.
 */
export class PostgresStore implements Store {
  readonly kind = "postgres";
  readonly pool: pg.Pool;
  /** The durable job queue, in the same database as the ledger (a job is linked to its payment). */
  readonly jobs: PostgresJobQueue;
  readonly vouchers: PostgresVoucherChannels;

  private constructor(pool: pg.Pool, now?: () => number) {
    this.pool = pool;
    this.jobs = new PostgresJobQueue(pool, now);
    this.vouchers = new PostgresVoucherChannels(pool);
  }

  /** Connects, creates the schema when asked, and migrates under an advisory lock. */
  static async open(options: PostgresStoreOptions): Promise<PostgresStore> {
    if (options.schema !== undefined && !SCHEMA_NAME.test(options.schema)) {
      throw new Error(`invalid schema name "${options.schema}"`);
    }
    const timeoutMs = options.statementTimeoutMs ?? DEFAULT_STATEMENT_TIMEOUT_MS;
    const pool = new pg.Pool({
      connectionString: options.connectionString,
      max: options.poolSize,
      // A database that does not answer is an outage to report (503), not a request to hang on: neither
      // while connecting, nor behind a lock another session holds, nor inside a transaction whose client
      // stopped (its locks go with it). Sent as startup parameters: they take precedence over the role's and
      // database's settings and over `-c` in the URL's options; a `statement_timeout` query parameter in the
      // URL replaces this one (pg reads the URL over its config).
      connectionTimeoutMillis: 10_000,
      statement_timeout: timeoutMs,
      idle_in_transaction_session_timeout: timeoutMs,
      // A connection whose peer vanished (no FIN: a partition, a killed host) is found by TCP keep-alive.
      keepAlive: true,
      ...(options.schema ? { options: `-c search_path=${options.schema}` } : {}),
    });
    // A client that loses its connection emits "error": an idle one on the pool, one checked out (a
    // transaction between two queries) on itself. Without a listener either would crash the process on a
    // database restart; the query in flight fails on its own and the request answers 503.
    pool.on("error", () => {});
    pool.on("connect", (client) => client.on("error", () => {}));
    const store = new PostgresStore(pool, options.now);
    try {
      await store.migrate(options.schema);
    } catch (error) {
      await pool.end();
      throw error;
    }
    return store;
  }

  private async migrate(schema: string | undefined): Promise<void> {
    const client = await this.pool.connect();
    try {
      // Migrations and the wait for another instance's migrations run without the statement timeout; the
      // pooled connection gets it back (RESET) before it serves requests.
      await client.query("SET statement_timeout = 0");
      await client.query("SELECT pg_advisory_lock(hashtext($1))", [MIGRATION_LOCK]);
      try {
        if (schema) await client.query(`CREATE SCHEMA IF NOT EXISTS ${schema}`);
        await client.query(
          `CREATE TABLE IF NOT EXISTS schema_migrations (
             version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at TIMESTAMPTZ NOT NULL DEFAULT now())`,
        );
        const { rows } = await client.query<{ version: number }>("SELECT version FROM schema_migrations");
        const applied = new Set(rows.map((row) => row.version));
        for (const migration of POSTGRES_MIGRATIONS) {
          if (applied.has(migration.version)) continue;
          await client.query("BEGIN");
          try {
            await client.query(migration.sql);
            await client.query("INSERT INTO schema_migrations (version, name) VALUES ($1, $2)", [
              migration.version,
              migration.name,
            ]);
            await client.query("COMMIT");
          } catch (error) {
            await client.query("ROLLBACK");
            throw error;
          }
        }
      } finally {
        await client.query("SELECT pg_advisory_unlock(hashtext($1))", [MIGRATION_LOCK]);
      }
      await client.query("RESET statement_timeout");
    } finally {
      client.release();
    }
  }

  async ping(): Promise<void> {
    await this.pool.query("SELECT 1");
  }

  reservePayment(payment: NewPayment): Promise<Reservation>;
  reservePayment(payment: NewPayment, admission: HeldAdmission): Promise<ReserveResult>;
  async reservePayment(payment: NewPayment, admission?: HeldAdmission): Promise<ReserveResult> {
    if (admission) return this.reserveHeld(payment, admission);
    const inserted = await this.pool.query(INSERT_PAYMENT, paymentValues(payment));
    if (inserted.rowCount === 1) return { reserved: true };
    const existing = await this.getPayment(payment.paymentKey);
    if (!existing) throw new Error(`payment ${payment.paymentKey} vanished after a conflicting insert`);
    return { reserved: false, existing };
  }

  /**
   * One transaction under an advisory lock on the payer (network, asset, address): every instance counts
   * the payer's unfinished payments after the previous admission of that payer committed.
   */
  private async reserveHeld(payment: NewPayment, admission: HeldAdmission): Promise<ReserveResult> {
    const client = await this.pool.connect();
    try {
      await client.query("BEGIN");
      try {
        await client.query("SELECT pg_advisory_xact_lock(hashtext($1))", [
          `payer:${payment.network}:${payment.asset}:${payment.payer}`,
        ]);
        const known = await client.query<PaymentRow>(
          "SELECT *, amount::text AS amount FROM payments WHERE payment_key = $1",
          [payment.paymentKey],
        );
        let result: ReserveResult;
        if (known.rows[0]) {
          result = { reserved: false, existing: toRecord(known.rows[0]) };
        } else {
          const { rows } = await client.query<{ same_operation: string; amount: string }>(
            `SELECT count(*) FILTER (WHERE operation_id = $4) AS same_operation,
                    coalesce(sum(amount), 0)::text AS amount
             FROM payments WHERE payer = $1 AND network = $2 AND asset = $3 AND state IN ('verified', 'held')`,
            [payment.payer, payment.network, payment.asset, payment.operationId],
          );
          const counted = rows[0] as { same_operation: string; amount: string };
          const refused = heldRefusal(
            { sameOperation: Number(counted.same_operation), amount: counted.amount },
            payment.amount,
            admission,
          );
          if (refused) result = { reserved: false, refused };
          else {
            const inserted = await client.query(INSERT_PAYMENT, paymentValues(payment));
            // Only a reservation of the same payment without admission (another route) can have come first.
            const existing =
              inserted.rowCount === 1
                ? undefined
                : (
                    await client.query<PaymentRow>(
                      "SELECT *, amount::text AS amount FROM payments WHERE payment_key = $1",
                      [payment.paymentKey],
                    )
                  ).rows[0];
            result = existing ? { reserved: false, existing: toRecord(existing) } : { reserved: true };
          }
        }
        await client.query("COMMIT");
        return result;
      } catch (error) {
        await client.query("ROLLBACK").catch(() => {});
        throw error;
      }
    } finally {
      client.release();
    }
  }

  async getPayment(paymentKey: string): Promise<PaymentRecord | undefined> {
    const { rows } = await this.pool.query<PaymentRow>(
      "SELECT *, amount::text AS amount FROM payments WHERE payment_key = $1",
      [paymentKey],
    );
    return rows[0] ? toRecord(rows[0]) : undefined;
  }

  async recordPendingOutcome(paymentKey: string, outcome: StoredOutcome): Promise<void> {
    await this.pool.query(
      "UPDATE payments SET pending_outcome = $1, updated_at = $2 WHERE payment_key = $3 AND state = 'verified'",
      [JSON.stringify(outcome), new Date(), paymentKey],
    );
  }

  async holdPayment(
    paymentKey: string,
    hold: { outcome: StoredOutcome; held: HeldAuthorization },
  ): Promise<boolean> {
    const result = await this.pool.query(
      `UPDATE payments SET state = 'held', outcome = $2, held = $3, pending_outcome = NULL, lease_until = 0,
         updated_at = $4
       WHERE payment_key = $1 AND state = 'verified'`,
      [paymentKey, JSON.stringify(hold.outcome), JSON.stringify(hold.held), new Date()],
    );
    return result.rowCount === 1;
  }

  async heldPaymentsToDecide(options: { expiringBefore: number; limit: number }): Promise<string[]> {
    const { rows } = await this.pool.query<{ payment_key: string }>(
      `SELECT p.payment_key FROM payments p LEFT JOIN jobs j ON j.payment_key = p.payment_key
       WHERE p.state = 'held'
         AND (j.id IS NULL OR j.state NOT IN ('queued', 'running') OR p.valid_before < $1)
       ORDER BY p.created_at, p.payment_key LIMIT $2`,
      [options.expiringBefore, options.limit],
    );
    return rows.map((row) => row.payment_key);
  }

  async payersWithUnfinishedPayments(network: string): Promise<PayerAccount[]> {
    const { rows } = await this.pool.query<PayerAccount>(
      `SELECT DISTINCT payer, network, asset FROM payments WHERE state IN ('verified', 'held') AND network = $1`,
      [network],
    );
    return rows;
  }

  async unfinishedPaymentsOf(account: PayerAccount): Promise<UnfinishedPayment[]> {
    const { rows } = await this.pool.query<UnfinishedPaymentRow>(
      `SELECT p.payment_key, p.amount::text AS amount, p.state, p.nonce, p.pay_to, j.id AS job_id, j.state AS job_state
       FROM payments p LEFT JOIN jobs j ON j.payment_key = p.payment_key
       WHERE p.payer = $1 AND p.network = $2 AND p.asset = $3 AND p.state IN ('verified', 'held')
       ORDER BY p.created_at, p.payment_key`,
      [account.payer, account.network, account.asset],
    );
    return rows.map(toUnfinished);
  }

  async orphanedPayments(now: number, limit: number): Promise<PaymentRecord[]> {
    const { rows } = await this.pool.query<PaymentRow>(
      `SELECT *, amount::text AS amount FROM payments
       WHERE state = 'verified' AND lease_until <= $1 ORDER BY lease_until LIMIT $2`,
      [now, limit],
    );
    return rows.map(toRecord);
  }

  async takeOverPayment(paymentKey: string, now: number, leaseUntil: number): Promise<boolean> {
    const result = await this.pool.query(
      `UPDATE payments SET lease_until = $1, updated_at = CASE WHEN state = 'held' THEN updated_at ELSE $2 END
       WHERE payment_key = $3 AND state IN ('verified', 'held') AND lease_until <= $4`,
      [leaseUntil, new Date(), paymentKey, now],
    );
    return result.rowCount === 1;
  }

  async renewLease(paymentKey: string, heldUntil: number, leaseUntil: number): Promise<boolean> {
    const result = await this.pool.query(
      "UPDATE payments SET lease_until = $1 WHERE payment_key = $2 AND state IN ('verified', 'held') AND lease_until = $3",
      [leaseUntil, paymentKey, heldUntil],
    );
    return result.rowCount === 1;
  }

  async releaseLease(paymentKey: string, heldUntil?: number): Promise<void> {
    await this.pool.query(
      `UPDATE payments SET lease_until = 0
       WHERE payment_key = $1 AND state IN ('verified', 'held') AND ($2::bigint IS NULL OR lease_until = $2)`,
      [paymentKey, heldUntil ?? null],
    );
  }

  async completePayment(paymentKey: string, completion: PaymentCompletion): Promise<boolean> {
    const result = await this.pool.query(
      `UPDATE payments SET state = $2, tx_hash = $3, error = $4, outcome = $5, pending_outcome = NULL, updated_at = $6
       WHERE payment_key = $1
         AND (state IN ('verified', 'held') OR ($2 = 'settled' AND state IN ('released', 'failed')))
         AND ($2 = 'settled' OR $7::bigint IS NULL OR lease_until = $7)`,
      [
        paymentKey,
        completion.state,
        completion.txHash ?? null,
        completion.error ?? null,
        JSON.stringify(completion.outcome),
        new Date(),
        completion.lease ?? null,
      ],
    );
    return result.rowCount === 1;
  }

  async markOutcomeDelivered(paymentKey: string, deliveredAt: number): Promise<void> {
    await this.pool.query(
      `UPDATE payments SET outcome = (outcome - 'awaitingClient') || jsonb_build_object('deliveredAt', $2::bigint)
       WHERE payment_key = $1 AND outcome ->> 'awaitingClient' IS NOT NULL`,
      [paymentKey, deliveredAt],
    );
  }

  async revenueByOperationAndDay(): Promise<RevenueRow[]> {
    const { rows } = await this.pool.query<{
      day: string;
      operation_id: string;
      payments: string;
      atomic_amount: string;
    }>(
      `SELECT to_char(updated_at AT TIME ZONE 'UTC', 'YYYY-MM-DD') AS day, operation_id,
              count(*) AS payments, sum(amount)::text AS atomic_amount
       FROM payments WHERE state = 'settled'
       GROUP BY day, operation_id ORDER BY day, operation_id`,
    );
    return rows.map((row) => ({
      day: row.day,
      operationId: row.operation_id,
      payments: Number(row.payments),
      atomicAmount: row.atomic_amount,
    }));
  }

  async paymentCounts(): Promise<PaymentCounts[]> {
    const { rows } = await this.pool.query<{ operation_id: string; state: PaymentState; count: string }>(
      "SELECT operation_id, state, count(*) AS count FROM payments GROUP BY operation_id, state",
    );
    return rows.map((row) => ({ operationId: row.operation_id, state: row.state, count: Number(row.count) }));
  }

  async claimSettler(claim: SettlerClaim): Promise<SettlerClaimResult> {
    const taken = await this.pool.query(
      `INSERT INTO settler_claims (account, instance_id, lease_until) VALUES ($1, $2, $3)
         ON CONFLICT (account) DO UPDATE SET instance_id = excluded.instance_id, lease_until = excluded.lease_until
         WHERE settler_claims.instance_id = excluded.instance_id OR settler_claims.lease_until <= $4`,
      [claim.account, claim.instanceId, claim.leaseUntil, claim.now],
    );
    if (taken.rowCount === 1) return { claimed: true };
    const { rows } = await this.pool.query<{ instance_id: string; lease_until: string }>(
      "SELECT instance_id, lease_until FROM settler_claims WHERE account = $1",
      [claim.account],
    );
    const holder = rows[0];
    if (!holder) return this.claimSettler(claim);
    return { claimed: false, holder: holder.instance_id, leaseUntil: Number(holder.lease_until) };
  }

  async claimPaymentIdentifier(claim: PaymentIdentifierClaim): Promise<string> {
    const { rows } = await this.pool.query<{ payment_key: string }>(
      `INSERT INTO payment_identifiers AS claim (key, payment_key, claimed_at) VALUES ($1, $2, $3)
       ON CONFLICT (key) DO UPDATE SET payment_key = excluded.payment_key, claimed_at = excluded.claimed_at
       WHERE claim.payment_key = excluded.payment_key
         OR EXISTS (SELECT 1 FROM payments WHERE payments.payment_key = claim.payment_key
                      AND (payments.state = 'released' OR (payments.state = 'failed'
                        AND payments.valid_before * 1000 + $5 < $3)))
         OR (claim.claimed_at < $4 AND NOT EXISTS (
               SELECT 1 FROM payments WHERE payments.payment_key = claim.payment_key))
       RETURNING payment_key`,
      [claim.key, claim.paymentKey, claim.now, claim.staleBefore, LATE_LANDING_MS],
    );
    if (rows[0]) return rows[0].payment_key;
    const held = await this.pool.query<{ payment_key: string }>(
      "SELECT payment_key FROM payment_identifiers WHERE key = $1",
      [claim.key],
    );
    return held.rows[0]?.payment_key ?? this.claimPaymentIdentifier(claim);
  }

  async releaseSettler(account: string, instanceId: string): Promise<void> {
    await this.pool.query("DELETE FROM settler_claims WHERE account = $1 AND instance_id = $2", [
      account,
      instanceId,
    ]);
  }

  async noteSettlementTransaction(note: SettlementTransactionNote): Promise<void> {
    await this.pool.query(
      `INSERT INTO settlement_transactions (tx_hash, account, nonce, kind, state, resent, detail, updated_at)
       VALUES ($1, $2, $3, $4, $5, $6, $7, $8)
       ON CONFLICT (tx_hash) DO UPDATE SET state = excluded.state, resent = excluded.resent,
         detail = coalesce(excluded.detail, settlement_transactions.detail), updated_at = excluded.updated_at`,
      [
        note.txHash,
        note.account,
        note.nonce,
        note.kind,
        note.state,
        note.resent,
        note.detail ?? null,
        new Date(note.at),
      ],
    );
  }

  async settlementTransactions(): Promise<SettlementTransactionRecord[]> {
    const { rows } = await this.pool.query(
      `SELECT t.*, p.payment_key, p.state AS payment_state, p.operation_id, p.amount::text AS amount
       FROM settlement_transactions t LEFT JOIN payments p ON p.tx_hash = t.tx_hash
       ORDER BY t.updated_at DESC, t.nonce DESC`,
    );
    return rows.map(settlementTransactionRecord);
  }

  async getCacheEntry(key: string): Promise<CacheEntry | undefined> {
    const { rows } = await this.pool.query<{ value: string; stored_at: string }>(
      "SELECT value, stored_at FROM cache_entries WHERE key = $1 AND value IS NOT NULL",
      [key],
    );
    const row = rows[0];
    return row ? { value: row.value, storedAt: Number(row.stored_at) } : undefined;
  }

  async putCacheEntry(key: string, entry: CacheEntry, expireBefore: number): Promise<void> {
    await this.pool.query(
      `INSERT INTO cache_entries (key, value, stored_at, load_owner, load_until) VALUES ($1, $2, $3, NULL, 0)
         ON CONFLICT (key) DO UPDATE SET value = excluded.value, stored_at = excluded.stored_at,
           load_owner = NULL, load_until = 0`,
      [key, entry.value, entry.storedAt],
    );
    await this.pool.query("DELETE FROM cache_entries WHERE stored_at < $1 AND load_until < $2", [
      expireBefore,
      entry.storedAt,
    ]);
  }

  async claimCacheLoad(key: string, owner: string, until: number, now: number): Promise<boolean> {
    const result = await this.pool.query(
      `INSERT INTO cache_entries (key, load_owner, load_until) VALUES ($1, $2, $3)
         ON CONFLICT (key) DO UPDATE SET load_owner = excluded.load_owner, load_until = excluded.load_until
         WHERE cache_entries.load_until <= $4 OR cache_entries.load_owner = excluded.load_owner`,
      [key, owner, until, now],
    );
    return result.rowCount === 1;
  }

  async releaseCacheLoad(key: string, owner: string): Promise<void> {
    await this.pool.query(
      "UPDATE cache_entries SET load_owner = NULL, load_until = 0 WHERE key = $1 AND load_owner = $2",
      [key, owner],
    );
  }

  async paymentsOfPayer(query: PayerPaymentsQuery): Promise<PaymentRecord[]> {
    const { rows } = await this.pool.query<PaymentRow>(
      `SELECT *, amount::text AS amount FROM payments
       WHERE payer = $1 AND operation_id = ANY($2::text[]) AND state = ANY($3::text[])
       ORDER BY created_at DESC, payment_key LIMIT $4`,
      [query.payer.toLowerCase(), query.operationIds, query.states, query.limit],
    );
    return rows.map(toRecord);
  }

  async useSignInNonce(nonce: string, keepUntil: number, now: number): Promise<boolean> {
    await this.pool.query("DELETE FROM sign_in_nonces WHERE keep_until < $1", [now]);
    const result = await this.pool.query(
      "INSERT INTO sign_in_nonces (nonce, keep_until) VALUES ($1, $2) ON CONFLICT (nonce) DO NOTHING",
      [nonce, keepUntil],
    );
    return result.rowCount === 1;
  }

  async close(): Promise<void> {
    await this.pool.end();
  }
}
