import fs from "node:fs";
import path from "node:path";
import Database from "better-sqlite3";
import { SqliteJobQueue } from "../../jobs/sqlite-job-queue.ts";
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
import { SQLITE_MIGRATIONS } from "./migrations.ts";
import { SqliteVoucherChannels } from "./sqlite-voucher-channels.ts";

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
  valid_before: number;
  lease_until: number;
  state: PaymentState;
  tx_hash: string | null;
  request_id: string;
  error: string | null;
  outcome: string | null;
  pending_outcome: string | null;
  held: string | null;
  created_at: string;
  updated_at: string;
}

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
  validBefore: row.valid_before,
  leaseUntil: row.lease_until,
  state: row.state,
  txHash: row.tx_hash,
  requestId: row.request_id,
  error: row.error,
  outcome: row.outcome ? JSON.parse(row.outcome) : null,
  pendingOutcome: row.pending_outcome ? JSON.parse(row.pending_outcome) : null,
  held: row.held ? JSON.parse(row.held) : null,
  createdAt: row.created_at,
  updatedAt: row.updated_at,
});

/** SQLite in WAL mode: the zero-set-up store for one machine. */
export class SqliteStore implements Store {
  readonly kind = "sqlite";
  private readonly db: Database.Database;
  private readonly statements;
  readonly jobs: SqliteJobQueue;
  readonly vouchers: SqliteVoucherChannels;

  /** `now` (epoch ms) drives the job queue's leases and liveness; injectable for tests. */
  constructor(file: string, options: { now?: () => number } = {}) {
    if (file !== ":memory:") fs.mkdirSync(path.dirname(file), { recursive: true });
    this.db = new Database(file);
    this.db.pragma("journal_mode = WAL");
    this.db.pragma("synchronous = NORMAL");
    this.db.pragma("busy_timeout = 5000");
    this.db.pragma("foreign_keys = ON");
    this.migrate();
    this.statements = {
      insertPayment: this.db.prepare(
        `INSERT INTO payments (payment_key, payload_hash, request_hash, operation_id, network, asset, amount, payer, pay_to,
           nonce, valid_before, lease_until, state, request_id, created_at, updated_at)
         VALUES (@paymentKey, @payloadHash, @requestHash, @operationId, @network, @asset, @amount, @payer, @payTo,
           @nonce, @validBefore, @leaseUntil, 'verified', @requestId, @now, @now)
         ON CONFLICT (payment_key) DO NOTHING`,
      ),
      getPayment: this.db.prepare("SELECT * FROM payments WHERE payment_key = ?"),
      completePayment: this.db.prepare(
        `UPDATE payments SET state = @state, tx_hash = @txHash, error = @error, outcome = @outcome,
           pending_outcome = NULL, updated_at = @now
         WHERE payment_key = @paymentKey
           AND (state IN ('verified', 'held') OR (@state = 'settled' AND state IN ('released', 'failed')))
           AND (@state = 'settled' OR @lease IS NULL OR lease_until = @lease)`,
      ),
      holdPayment: this.db.prepare(
        `UPDATE payments SET state = 'held', outcome = @outcome, held = @held, pending_outcome = NULL,
           lease_until = 0, updated_at = @now
         WHERE payment_key = @paymentKey AND state = 'verified'`,
      ),
      heldPaymentsToDecide: this.db.prepare(
        `SELECT p.payment_key FROM payments p LEFT JOIN jobs j ON j.payment_key = p.payment_key
         WHERE p.state = 'held'
           AND (j.id IS NULL OR j.state NOT IN ('queued', 'running') OR p.valid_before < @expiringBefore)
         ORDER BY p.created_at, p.payment_key LIMIT @limit`,
      ),
      outstandingOfPayer: this.db.prepare(
        `SELECT coalesce(sum(CASE WHEN operation_id = @operationId THEN 1 ELSE 0 END), 0) AS same_operation,
                CAST(coalesce(sum(CAST(amount AS INTEGER)), 0) AS TEXT) AS amount
         FROM payments WHERE payer = @payer AND network = @network AND asset = @asset
           AND state IN ('verified', 'held')`,
      ),
      markOutcomeDelivered: this.db.prepare(
        `UPDATE payments SET outcome = json_set(json_remove(outcome, '$.awaitingClient'), '$.deliveredAt', ?)
         WHERE payment_key = ? AND json_extract(outcome, '$.awaitingClient') IS NOT NULL`,
      ),
      payersWithUnfinished: this.db.prepare(
        `SELECT DISTINCT payer, network, asset FROM payments
         WHERE state IN ('verified', 'held') AND network = ?`,
      ),
      unfinishedOfPayer: this.db.prepare(
        `SELECT p.payment_key, p.amount, p.state, p.nonce, p.pay_to, j.id AS job_id, j.state AS job_state
         FROM payments p LEFT JOIN jobs j ON j.payment_key = p.payment_key
         WHERE p.payer = @payer AND p.network = @network AND p.asset = @asset AND p.state IN ('verified', 'held')
         ORDER BY p.created_at, p.payment_key`,
      ),
      orphanedPayments: this.db.prepare(
        "SELECT * FROM payments WHERE state = 'verified' AND lease_until <= ? ORDER BY lease_until LIMIT ?",
      ),
      renewLease: this.db.prepare(
        "UPDATE payments SET lease_until = ? WHERE payment_key = ? AND state IN ('verified', 'held') AND lease_until = ?",
      ),
      recordPendingOutcome: this.db.prepare(
        `UPDATE payments SET pending_outcome = ?, updated_at = ? WHERE payment_key = ? AND state = 'verified'`,
      ),
      takeOver: this.db.prepare(
        `UPDATE payments SET lease_until = ?, updated_at = CASE WHEN state = 'held' THEN updated_at ELSE ? END
         WHERE payment_key = ? AND state IN ('verified', 'held') AND lease_until <= ?`,
      ),
      releaseLease: this.db.prepare(
        `UPDATE payments SET lease_until = 0
         WHERE payment_key = @paymentKey AND state IN ('verified', 'held')
           AND (@heldUntil IS NULL OR lease_until = @heldUntil)`,
      ),
      revenue: this.db.prepare(
        `SELECT substr(updated_at, 1, 10) AS day, operation_id, count(*) AS payments,
                CAST(sum(CAST(amount AS INTEGER)) AS TEXT) AS atomic_amount
         FROM payments WHERE state = 'settled'
         GROUP BY day, operation_id ORDER BY day, operation_id`,
      ),
      counts: this.db.prepare(
        "SELECT operation_id, state, count(*) AS count FROM payments GROUP BY operation_id, state",
      ),
      claimSettler: this.db.prepare(
        `INSERT INTO settler_claims (account, instance_id, lease_until) VALUES (@account, @instanceId, @leaseUntil)
         ON CONFLICT (account) DO UPDATE SET instance_id = excluded.instance_id, lease_until = excluded.lease_until
         WHERE settler_claims.instance_id = excluded.instance_id OR settler_claims.lease_until <= @now`,
      ),
      getSettlerClaim: this.db.prepare(
        "SELECT instance_id, lease_until FROM settler_claims WHERE account = ?",
      ),
      claimPaymentIdentifier: this.db.prepare(
        `INSERT INTO payment_identifiers (key, payment_key, claimed_at) VALUES (@key, @paymentKey, @now)
         ON CONFLICT (key) DO UPDATE SET payment_key = excluded.payment_key, claimed_at = excluded.claimed_at
         WHERE payment_identifiers.payment_key = excluded.payment_key
           OR EXISTS (SELECT 1 FROM payments WHERE payments.payment_key = payment_identifiers.payment_key
                        AND (payments.state = 'released' OR (payments.state = 'failed'
                          AND payments.valid_before * 1000 + @lateLandingMs < @now)))
           OR (payment_identifiers.claimed_at < @staleBefore AND NOT EXISTS (
                 SELECT 1 FROM payments WHERE payments.payment_key = payment_identifiers.payment_key))`,
      ),
      getPaymentIdentifier: this.db.prepare("SELECT payment_key FROM payment_identifiers WHERE key = ?"),
      getCacheEntry: this.db.prepare(
        "SELECT value, stored_at FROM cache_entries WHERE key = ? AND value IS NOT NULL",
      ),
      putCacheEntry: this.db.prepare(
        `INSERT INTO cache_entries (key, value, stored_at, load_owner, load_until) VALUES (@key, @value, @storedAt, NULL, 0)
         ON CONFLICT (key) DO UPDATE SET value = excluded.value, stored_at = excluded.stored_at,
           load_owner = NULL, load_until = 0`,
      ),
      expireCacheEntries: this.db.prepare(
        "DELETE FROM cache_entries WHERE stored_at < @expireBefore AND load_until < @storedAt",
      ),
      claimCacheLoad: this.db.prepare(
        `INSERT INTO cache_entries (key, load_owner, load_until) VALUES (@key, @owner, @until)
         ON CONFLICT (key) DO UPDATE SET load_owner = excluded.load_owner, load_until = excluded.load_until
         WHERE cache_entries.load_until <= @now OR cache_entries.load_owner = excluded.load_owner`,
      ),
      releaseCacheLoad: this.db.prepare(
        "UPDATE cache_entries SET load_owner = NULL, load_until = 0 WHERE key = ? AND load_owner = ?",
      ),
      releaseSettler: this.db.prepare("DELETE FROM settler_claims WHERE account = ? AND instance_id = ?"),
      useSignInNonce: this.db.prepare(
        "INSERT INTO sign_in_nonces (nonce, keep_until) VALUES (?, ?) ON CONFLICT (nonce) DO NOTHING",
      ),
      expireSignInNonces: this.db.prepare("DELETE FROM sign_in_nonces WHERE keep_until < ?"),
    };
    this.jobs = new SqliteJobQueue(this.db, options.now);
    this.vouchers = new SqliteVoucherChannels(this.db);
  }

  private migrate(): void {
    this.db.exec(
      "CREATE TABLE IF NOT EXISTS schema_migrations (version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at TEXT NOT NULL)",
    );
    const applied = new Set(
      (this.db.prepare("SELECT version FROM schema_migrations").all() as { version: number }[]).map(
        (r) => r.version,
      ),
    );
    for (const migration of SQLITE_MIGRATIONS) {
      if (applied.has(migration.version)) continue;
      if (migration.rebuildsTables) this.db.pragma("foreign_keys = OFF");
      try {
        this.db.transaction(() => {
          this.db.exec(migration.sql);
          if (migration.rebuildsTables && (this.db.pragma("foreign_key_check") as unknown[]).length > 0) {
            throw new Error(`migration ${migration.version} would break a foreign key`);
          }
          this.db
            .prepare("INSERT INTO schema_migrations (version, name, applied_at) VALUES (?, ?, ?)")
            .run(migration.version, migration.name, new Date().toISOString());
        })();
      } finally {
        if (migration.rebuildsTables) this.db.pragma("foreign_keys = ON");
      }
    }
  }

  async ping(): Promise<void> {
    this.db.prepare("SELECT 1").get();
  }

  reservePayment(payment: NewPayment): Promise<Reservation>;
  reservePayment(payment: NewPayment, admission: HeldAdmission): Promise<ReserveResult>;
  async reservePayment(payment: NewPayment, admission?: HeldAdmission): Promise<ReserveResult> {
    if (admission) return this.reserveHeld(payment, admission);
    const result = this.statements.insertPayment.run({ ...payment, now: new Date().toISOString() });
    if (result.changes === 1) return { reserved: true };
    const existing = await this.getPayment(payment.paymentKey);
    if (!existing) throw new Error(`payment ${payment.paymentKey} vanished after a conflicting insert`);
    return { reserved: false, existing };
  }

  /** One IMMEDIATE transaction: every process on this file counts the payer's payments one after the other. */
  private reserveHeld(payment: NewPayment, admission: HeldAdmission): ReserveResult {
    return this.db
      .transaction((): ReserveResult => {
        const existing = this.statements.getPayment.get(payment.paymentKey) as PaymentRow | undefined;
        if (existing) return { reserved: false, existing: toRecord(existing) };
        const counted = this.statements.outstandingOfPayer.get(payment) as {
          same_operation: number;
          amount: string;
        };
        const refused = heldRefusal(
          { sameOperation: counted.same_operation, amount: counted.amount },
          payment.amount,
          admission,
        );
        if (refused) return { reserved: false, refused };
        this.statements.insertPayment.run({ ...payment, now: new Date().toISOString() });
        return { reserved: true };
      })
      .immediate();
  }

  async getPayment(paymentKey: string): Promise<PaymentRecord | undefined> {
    const row = this.statements.getPayment.get(paymentKey) as PaymentRow | undefined;
    return row ? toRecord(row) : undefined;
  }

  async recordPendingOutcome(paymentKey: string, outcome: StoredOutcome): Promise<void> {
    this.statements.recordPendingOutcome.run(JSON.stringify(outcome), new Date().toISOString(), paymentKey);
  }

  async holdPayment(
    paymentKey: string,
    hold: { outcome: StoredOutcome; held: HeldAuthorization },
  ): Promise<boolean> {
    const result = this.statements.holdPayment.run({
      paymentKey,
      outcome: JSON.stringify(hold.outcome),
      held: JSON.stringify(hold.held),
      now: new Date().toISOString(),
    });
    return result.changes === 1;
  }

  async heldPaymentsToDecide(options: { expiringBefore: number; limit: number }): Promise<string[]> {
    return (this.statements.heldPaymentsToDecide.all(options) as { payment_key: string }[]).map(
      (row) => row.payment_key,
    );
  }

  async payersWithUnfinishedPayments(network: string): Promise<PayerAccount[]> {
    return this.statements.payersWithUnfinished.all(network) as PayerAccount[];
  }

  async unfinishedPaymentsOf(account: PayerAccount): Promise<UnfinishedPayment[]> {
    return (this.statements.unfinishedOfPayer.all(account) as UnfinishedPaymentRow[]).map(toUnfinished);
  }

  async orphanedPayments(now: number, limit: number): Promise<PaymentRecord[]> {
    return (this.statements.orphanedPayments.all(now, limit) as PaymentRow[]).map(toRecord);
  }

  async takeOverPayment(paymentKey: string, now: number, leaseUntil: number): Promise<boolean> {
    return this.statements.takeOver.run(leaseUntil, new Date().toISOString(), paymentKey, now).changes === 1;
  }

  async renewLease(paymentKey: string, heldUntil: number, leaseUntil: number): Promise<boolean> {
    return this.statements.renewLease.run(leaseUntil, paymentKey, heldUntil).changes === 1;
  }

  async releaseLease(paymentKey: string, heldUntil?: number): Promise<void> {
    this.statements.releaseLease.run({ paymentKey, heldUntil: heldUntil ?? null });
  }

  async completePayment(paymentKey: string, completion: PaymentCompletion): Promise<boolean> {
    const result = this.statements.completePayment.run({
      paymentKey,
      state: completion.state,
      txHash: completion.txHash ?? null,
      error: completion.error ?? null,
      outcome: JSON.stringify(completion.outcome),
      lease: completion.lease ?? null,
      now: new Date().toISOString(),
    });
    return result.changes === 1;
  }

  async markOutcomeDelivered(paymentKey: string, deliveredAt: number): Promise<void> {
    this.statements.markOutcomeDelivered.run(deliveredAt, paymentKey);
  }

  async revenueByOperationAndDay(): Promise<RevenueRow[]> {
    const rows = this.statements.revenue.all() as {
      day: string;
      operation_id: string;
      payments: number;
      atomic_amount: string;
    }[];
    return rows.map((row) => ({
      day: row.day,
      operationId: row.operation_id,
      payments: row.payments,
      atomicAmount: row.atomic_amount,
    }));
  }

  async paymentCounts(): Promise<PaymentCounts[]> {
    return (
      this.statements.counts.all() as { operation_id: string; state: PaymentState; count: number }[]
    ).map((row) => ({ operationId: row.operation_id, state: row.state, count: row.count }));
  }

  async claimSettler(claim: SettlerClaim): Promise<SettlerClaimResult> {
    if (this.statements.claimSettler.run(claim).changes === 1) return { claimed: true };
    const holder = this.statements.getSettlerClaim.get(claim.account) as
      | { instance_id: string; lease_until: number }
      | undefined;
    // The holder let go between the two statements: try once more.
    if (!holder) return this.claimSettler(claim);
    return { claimed: false, holder: holder.instance_id, leaseUntil: holder.lease_until };
  }

  async releaseSettler(account: string, instanceId: string): Promise<void> {
    this.statements.releaseSettler.run(account, instanceId);
  }

  async noteSettlementTransaction(note: SettlementTransactionNote): Promise<void> {
    this.db
      .prepare(
        `INSERT INTO settlement_transactions (tx_hash, account, nonce, kind, state, resent, detail, updated_at)
         VALUES (@txHash, @account, @nonce, @kind, @state, @resent, @detail, @updatedAt)
         ON CONFLICT (tx_hash) DO UPDATE SET state = excluded.state, resent = excluded.resent,
           detail = coalesce(excluded.detail, settlement_transactions.detail), updated_at = excluded.updated_at`,
      )
      .run({ ...note, detail: note.detail ?? null, updatedAt: new Date(note.at).toISOString() });
  }

  async settlementTransactions(): Promise<SettlementTransactionRecord[]> {
    const rows = this.db
      .prepare(
        `SELECT t.*, p.payment_key, p.state AS payment_state, p.operation_id, p.amount
         FROM settlement_transactions t LEFT JOIN payments p ON p.tx_hash = t.tx_hash
         ORDER BY t.updated_at DESC, t.nonce DESC`,
      )
      .all() as Record<string, string | number | null>[];
    return rows.map(settlementTransactionRecord);
  }

  async claimPaymentIdentifier(claim: PaymentIdentifierClaim): Promise<string> {
    this.statements.claimPaymentIdentifier.run({ ...claim, lateLandingMs: LATE_LANDING_MS });
    return (this.statements.getPaymentIdentifier.get(claim.key) as { payment_key: string }).payment_key;
  }

  async getCacheEntry(key: string): Promise<CacheEntry | undefined> {
    const row = this.statements.getCacheEntry.get(key) as { value: string; stored_at: number } | undefined;
    return row ? { value: row.value, storedAt: row.stored_at } : undefined;
  }

  async putCacheEntry(key: string, entry: CacheEntry, expireBefore: number): Promise<void> {
    this.db.transaction(() => {
      this.statements.putCacheEntry.run({ key, ...entry });
      this.statements.expireCacheEntries.run({ expireBefore, storedAt: entry.storedAt });
    })();
  }

  async claimCacheLoad(key: string, owner: string, until: number, now: number): Promise<boolean> {
    return this.statements.claimCacheLoad.run({ key, owner, until, now }).changes === 1;
  }

  async releaseCacheLoad(key: string, owner: string): Promise<void> {
    this.statements.releaseCacheLoad.run(key, owner);
  }

  async paymentsOfPayer(query: PayerPaymentsQuery): Promise<PaymentRecord[]> {
    if (query.operationIds.length === 0 || query.states.length === 0) return [];
    const marks = (values: readonly unknown[]) => values.map(() => "?").join(", ");
    const rows = this.db
      .prepare(
        `SELECT * FROM payments WHERE payer = ? AND operation_id IN (${marks(query.operationIds)})
           AND state IN (${marks(query.states)}) ORDER BY created_at DESC, payment_key LIMIT ?`,
      )
      .all(query.payer.toLowerCase(), ...query.operationIds, ...query.states, query.limit) as PaymentRow[];
    return rows.map(toRecord);
  }

  async useSignInNonce(nonce: string, keepUntil: number, now: number): Promise<boolean> {
    return this.db.transaction(() => {
      this.statements.expireSignInNonces.run(now);
      return this.statements.useSignInNonce.run(nonce, keepUntil).changes === 1;
    })();
  }

  async close(): Promise<void> {
    this.db.close();
  }
}
