import type Database from "better-sqlite3";
import {
  attemptsExhausted,
  type FailedPaidJob,
  JOB_DEPTH_QUERY,
  type Job,
  type JobError,
  type JobProgress,
  type JobQueue,
  type JobState,
  jobDepth,
  type MaintenanceReport,
  type NewJob,
  RUNNING_OF_PAYER,
  RunnableSignal,
  SECURED_PAYMENT,
  SETTLING_PROGRESS,
  type UnfinishedJobState,
  type WorkerRecord,
} from "./queue.ts";

interface JobRow {
  id: string;
  type: string;
  state: JobState;
  input: string;
  payment_key: string | null;
  attempts: number;
  max_attempts: number;
  lease_owner: string | null;
  lease_until: number | null;
  progress: string | null;
  result: string | null;
  error: string | null;
  created_at: string;
  started_at: string | null;
  finished_at: string | null;
  updated_at: string;
}

const parse = (text: string | null) => (text === null ? null : JSON.parse(text));

const toJob = (row: JobRow): Job => ({
  id: row.id,
  type: row.type,
  state: row.state,
  input: JSON.parse(row.input),
  paymentKey: row.payment_key,
  attempts: row.attempts,
  maxAttempts: row.max_attempts,
  leaseOwner: row.lease_owner,
  leaseUntil: row.lease_until,
  progress: parse(row.progress),
  result: parse(row.result),
  error: parse(row.error),
  createdAt: row.created_at,
  startedAt: row.started_at,
  finishedAt: row.finished_at,
  updatedAt: row.updated_at,
});

/** Paid = the ledger row of the job's payment is settled. */
const SETTLED = "SELECT payment_key FROM payments WHERE state = 'settled'";

/**
 * The job queue on the store's SQLite database. Claims run in an IMMEDIATE transaction, so
 * processes sharing the file (API instances, `utility402 worker`s) never take the same job twice.
 */
export class SqliteJobQueue implements JobQueue {
  readonly runnable = new RunnableSignal();
  private readonly statements;

  constructor(
    private readonly db: Database.Database,
    private readonly now: () => number = Date.now,
  ) {
    this.statements = {
      insert: db.prepare(
        `INSERT INTO jobs (id, type, state, input, payment_key, max_attempts, created_at, updated_at)
         VALUES (@id, @type, @state, @input, @paymentKey, @maxAttempts, @now, @now)`,
      ),
      get: db.prepare("SELECT * FROM jobs WHERE id = ?"),
      getByPayment: db.prepare("SELECT * FROM jobs WHERE payment_key = ?"),
      markPaid: db.prepare(
        "UPDATE jobs SET state = 'queued', updated_at = ? WHERE id = ? AND state = 'awaiting_payment'",
      ),
      drop: db.prepare("DELETE FROM jobs WHERE id = ? AND state = 'awaiting_payment'"),
      runnable: db.prepare(
        `SELECT j.* FROM jobs j LEFT JOIN payments p ON p.payment_key = j.payment_key
         WHERE j.type IN (SELECT value FROM json_each(@types))
           AND (j.state = 'queued' OR (j.state = 'running' AND j.lease_until <= @now))
         ORDER BY (${RUNNING_OF_PAYER("@now")}), j.created_at, j.id LIMIT 1`,
      ),
      take: db.prepare(
        `UPDATE jobs SET state = 'running', attempts = attempts + 1, lease_owner = @workerId,
           lease_until = @leaseUntil, started_at = coalesce(started_at, @now), updated_at = @now
         WHERE id = @id`,
      ),
      exhaust: db.prepare(
        `UPDATE jobs SET state = 'failed', error = @error, lease_owner = NULL, lease_until = NULL,
           finished_at = @now, updated_at = @now WHERE id = @id`,
      ),
      heartbeat: db.prepare(
        `UPDATE jobs SET lease_until = @leaseUntil, progress = coalesce(@progress, progress), updated_at = @now
         WHERE id = @id AND state = 'running' AND lease_owner = @workerId`,
      ),
      fail: db.prepare(
        `UPDATE jobs SET state = 'failed', error = @error, progress = NULL,
           lease_owner = NULL, lease_until = NULL, finished_at = @now, updated_at = @now
         WHERE id = @id AND state = 'running' AND lease_owner = @workerId`,
      ),
      ready: db.prepare(
        `UPDATE jobs SET state = CASE WHEN payment_key IS NULL THEN 'succeeded' ELSE 'ready' END,
           result = @result, progress = CASE WHEN payment_key IS NULL THEN NULL ELSE @progress END, lease_owner = NULL, lease_until = NULL,
           finished_at = CASE WHEN payment_key IS NULL THEN @now END, updated_at = @now
         WHERE id = @id AND state = 'running' AND lease_owner = @workerId`,
      ),
      deliver: db.prepare(
        `UPDATE jobs SET state = 'succeeded', progress = NULL, finished_at = @now, updated_at = @now
         WHERE id = @id AND state = 'ready'`,
      ),
      withhold: db.prepare(
        `UPDATE jobs SET state = 'failed', error = @error, progress = NULL, finished_at = @now,
           updated_at = @now
         WHERE id = @id AND state = 'ready'`,
      ),
      expire: db.prepare(
        `UPDATE jobs SET state = 'failed', error = @error, progress = NULL, lease_owner = NULL, lease_until = NULL,
           finished_at = @now, updated_at = @now
         WHERE id = @id AND state IN ('awaiting_payment', 'queued', 'running')`,
      ),
      readyJobs: db.prepare("SELECT * FROM jobs WHERE state = 'ready' ORDER BY updated_at, id"),
      depth: db.prepare(JOB_DEPTH_QUERY),
      reportWorker: db.prepare(
        `INSERT INTO workers (id, types, host, pid, started_at, last_seen)
         VALUES (@id, @types, @host, @pid, @startedAt, @lastSeen)
         ON CONFLICT (id) DO UPDATE SET types = excluded.types, last_seen = excluded.last_seen`,
      ),
      removeWorker: db.prepare("DELETE FROM workers WHERE id = ?"),
      liveWorkers: db.prepare("SELECT * FROM workers WHERE last_seen >= ? ORDER BY started_at, id"),
      promote: db.prepare(
        `UPDATE jobs SET state = 'queued', updated_at = ?
         WHERE state = 'awaiting_payment' AND payment_key IN (${SECURED_PAYMENT})`,
      ),
      dropUnpaid: db.prepare(
        `DELETE FROM jobs WHERE state = 'awaiting_payment' AND payment_key IN
           (SELECT payment_key FROM payments WHERE state IN ('released', 'failed'))`,
      ),
      purge: db.prepare(
        `DELETE FROM jobs WHERE state IN ('succeeded', 'failed') AND finished_at < ?
           AND NOT (state = 'failed' AND payment_key IS NOT NULL AND payment_key IN (${SETTLED}))`,
      ),
      forgetWorkers: db.prepare("DELETE FROM workers WHERE last_seen < ?"),
      failedPaid: db.prepare(
        `SELECT j.id, j.type, j.error, j.finished_at, p.payment_key, p.payer, p.amount, p.tx_hash
         FROM jobs j JOIN payments p ON p.payment_key = j.payment_key
         WHERE j.state = 'failed' AND p.state = 'settled' ORDER BY j.finished_at, j.id`,
      ),
    };
  }

  private iso(): string {
    return new Date(this.now()).toISOString();
  }

  async create(job: NewJob, options: { queued?: boolean } = {}): Promise<Job> {
    this.statements.insert.run({
      id: job.id,
      type: job.type,
      state: options.queued ? "queued" : "awaiting_payment",
      input: JSON.stringify(job.input),
      paymentKey: job.paymentKey,
      maxAttempts: job.maxAttempts,
      now: this.iso(),
    });
    if (options.queued) this.runnable.notify();
    return (await this.get(job.id)) as Job;
  }

  async get(id: string): Promise<Job | undefined> {
    const row = this.statements.get.get(id) as JobRow | undefined;
    return row ? toJob(row) : undefined;
  }

  async getByPayment(paymentKey: string): Promise<Job | undefined> {
    const row = this.statements.getByPayment.get(paymentKey) as JobRow | undefined;
    return row ? toJob(row) : undefined;
  }

  async markPaid(id: string): Promise<boolean> {
    const queued = this.statements.markPaid.run(this.iso(), id).changes === 1;
    if (queued) this.runnable.notify();
    return queued;
  }

  async drop(id: string): Promise<boolean> {
    return this.statements.drop.run(id).changes === 1;
  }

  async claim(workerId: string, types: readonly string[], leaseMs: number): Promise<Job | undefined> {
    if (types.length === 0) return undefined;
    const take = this.db.transaction((): JobRow | undefined => {
      const now = this.now();
      for (;;) {
        const row = this.statements.runnable.get({ types: JSON.stringify(types), now }) as JobRow | undefined;
        if (!row) return undefined;
        if (row.attempts >= row.max_attempts) {
          const error = attemptsExhausted(row.attempts);
          this.statements.exhaust.run({ id: row.id, error: JSON.stringify(error), now: this.iso() });
          continue;
        }
        this.statements.take.run({ id: row.id, workerId, leaseUntil: now + leaseMs, now: this.iso() });
        return this.statements.get.get(row.id) as JobRow;
      }
    });
    const row = take.immediate();
    return row ? toJob(row) : undefined;
  }

  async heartbeat(id: string, workerId: string, leaseMs: number, progress?: JobProgress): Promise<boolean> {
    const result = this.statements.heartbeat.run({
      id,
      workerId,
      leaseUntil: this.now() + leaseMs,
      progress: progress ? JSON.stringify(progress) : null,
      now: this.iso(),
    });
    return result.changes === 1;
  }

  async complete(id: string, workerId: string, result: unknown): Promise<boolean> {
    const outcome = this.statements.ready.run({
      id,
      workerId,
      result: JSON.stringify(result),
      progress: JSON.stringify(SETTLING_PROGRESS),
      now: this.iso(),
    });
    return outcome.changes === 1;
  }

  async deliver(id: string): Promise<boolean> {
    return this.statements.deliver.run({ id, now: this.iso() }).changes === 1;
  }

  async withhold(id: string, error: JobError): Promise<boolean> {
    return this.statements.withhold.run({ id, error: JSON.stringify(error), now: this.iso() }).changes === 1;
  }

  async expire(id: string, error: JobError): Promise<boolean> {
    return this.statements.expire.run({ id, error: JSON.stringify(error), now: this.iso() }).changes === 1;
  }

  async readyJobs(): Promise<Job[]> {
    return (this.statements.readyJobs.all() as JobRow[]).map(toJob);
  }

  async depth(): Promise<Record<UnfinishedJobState, number>> {
    return jobDepth(this.statements.depth.all() as { state: string; count: number }[]);
  }

  async fail(id: string, workerId: string, error: JobError): Promise<boolean> {
    const outcome = this.statements.fail.run({ id, workerId, error: JSON.stringify(error), now: this.iso() });
    return outcome.changes === 1;
  }

  async reportWorker(worker: Omit<WorkerRecord, "lastSeen">): Promise<void> {
    this.statements.reportWorker.run({
      ...worker,
      types: JSON.stringify(worker.types),
      lastSeen: this.now(),
    });
  }

  async removeWorker(workerId: string): Promise<void> {
    this.statements.removeWorker.run(workerId);
  }

  async liveWorkers(since: number): Promise<WorkerRecord[]> {
    const rows = this.statements.liveWorkers.all(since) as {
      id: string;
      types: string;
      host: string;
      pid: number;
      started_at: string;
      last_seen: number;
    }[];
    return rows.map((row) => ({
      id: row.id,
      types: JSON.parse(row.types),
      host: row.host,
      pid: row.pid,
      startedAt: row.started_at,
      lastSeen: row.last_seen,
    }));
  }

  async maintain(options: { purgeBefore: number; forgetWorkersBefore: number }): Promise<MaintenanceReport> {
    return this.db.transaction(() => ({
      promoted: this.statements.promote.run(this.iso()).changes,
      dropped: this.statements.dropUnpaid.run().changes,
      purged: this.statements.purge.run(new Date(options.purgeBefore).toISOString()).changes,
      forgottenWorkers: this.statements.forgetWorkers.run(options.forgetWorkersBefore).changes,
    }))();
  }

  async failedPaidJobs(): Promise<FailedPaidJob[]> {
    const rows = this.statements.failedPaid.all() as {
      id: string;
      type: string;
      error: string | null;
      finished_at: string | null;
      payment_key: string;
      payer: string;
      amount: string;
      tx_hash: string | null;
    }[];
    return rows.map((row) => ({
      jobId: row.id,
      type: row.type,
      error: parse(row.error),
      finishedAt: row.finished_at,
      paymentKey: row.payment_key,
      payer: row.payer,
      amount: row.amount,
      txHash: row.tx_hash,
    }));
  }
}
