import type pg from "pg";
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
  lease_until: string | null;
  progress: string | null;
  result: string | null;
  error: string | null;
  created_at: Date;
  started_at: Date | null;
  finished_at: Date | null;
  updated_at: Date;
}

const parse = (text: string | null) => (text === null ? null : JSON.parse(text));
const iso = (date: Date | null) => (date === null ? null : date.toISOString());

const toJob = (row: JobRow): Job => ({
  id: row.id,
  type: row.type,
  state: row.state,
  input: JSON.parse(row.input),
  paymentKey: row.payment_key,
  attempts: row.attempts,
  maxAttempts: row.max_attempts,
  leaseOwner: row.lease_owner,
  leaseUntil: row.lease_until === null ? null : Number(row.lease_until),
  progress: parse(row.progress),
  result: parse(row.result),
  error: parse(row.error),
  createdAt: row.created_at.toISOString(),
  startedAt: iso(row.started_at),
  finishedAt: iso(row.finished_at),
  updatedAt: row.updated_at.toISOString(),
});

/** Paid = the ledger row of the job's payment is settled. */
const SETTLED = "SELECT payment_key FROM payments WHERE state = 'settled'";

/**
 * The job queue on PostgreSQL, shared by every API instance and worker. A worker claims the oldest
 * runnable job with `FOR UPDATE SKIP LOCKED` inside one transaction, so two workers never take the
 * same job and never wait on each other; every other change is one conditional statement.
 */
export class PostgresJobQueue implements JobQueue {
  readonly runnable = new RunnableSignal();

  constructor(
    private readonly pool: pg.Pool,
    private readonly now: () => number = Date.now,
  ) {}

  private date(): Date {
    return new Date(this.now());
  }

  async create(job: NewJob, options: { queued?: boolean } = {}): Promise<Job> {
    const { rows } = await this.pool.query<JobRow>(
      `INSERT INTO jobs (id, type, state, input, payment_key, max_attempts, created_at, updated_at)
       VALUES ($1, $2, $3, $4, $5, $6, $7, $7) RETURNING *`,
      [
        job.id,
        job.type,
        options.queued ? "queued" : "awaiting_payment",
        JSON.stringify(job.input),
        job.paymentKey,
        job.maxAttempts,
        this.date(),
      ],
    );
    if (options.queued) this.runnable.notify();
    return toJob(rows[0] as JobRow);
  }

  async get(id: string): Promise<Job | undefined> {
    const { rows } = await this.pool.query<JobRow>("SELECT * FROM jobs WHERE id = $1", [id]);
    return rows[0] ? toJob(rows[0]) : undefined;
  }

  async getByPayment(paymentKey: string): Promise<Job | undefined> {
    const { rows } = await this.pool.query<JobRow>("SELECT * FROM jobs WHERE payment_key = $1", [paymentKey]);
    return rows[0] ? toJob(rows[0]) : undefined;
  }

  async markPaid(id: string): Promise<boolean> {
    const result = await this.pool.query(
      "UPDATE jobs SET state = 'queued', updated_at = $1 WHERE id = $2 AND state = 'awaiting_payment'",
      [this.date(), id],
    );
    if (result.rowCount === 1) this.runnable.notify();
    return result.rowCount === 1;
  }

  async drop(id: string): Promise<boolean> {
    const result = await this.pool.query("DELETE FROM jobs WHERE id = $1 AND state = 'awaiting_payment'", [
      id,
    ]);
    return result.rowCount === 1;
  }

  async claim(workerId: string, types: readonly string[], leaseMs: number): Promise<Job | undefined> {
    if (types.length === 0) return undefined;
    const client = await this.pool.connect();
    try {
      await client.query("BEGIN");
      try {
        const now = this.now();
        for (;;) {
          const { rows } = await client.query<JobRow>(
            `SELECT j.* FROM jobs j LEFT JOIN payments p ON p.payment_key = j.payment_key
             WHERE j.type = ANY($1::text[])
               AND (j.state = 'queued' OR (j.state = 'running' AND j.lease_until <= $2))
             ORDER BY (${RUNNING_OF_PAYER("$2")}), j.created_at, j.id LIMIT 1 FOR UPDATE OF j SKIP LOCKED`,
            [types, now],
          );
          const row = rows[0];
          if (!row) {
            await client.query("COMMIT");
            return undefined;
          }
          if (row.attempts >= row.max_attempts) {
            const error = attemptsExhausted(row.attempts);
            await client.query(
              `UPDATE jobs SET state = 'failed', error = $2, lease_owner = NULL, lease_until = NULL,
                 finished_at = $3, updated_at = $3 WHERE id = $1`,
              [row.id, JSON.stringify(error), this.date()],
            );
            continue;
          }
          const taken = await client.query<JobRow>(
            `UPDATE jobs SET state = 'running', attempts = attempts + 1, lease_owner = $2, lease_until = $3,
               started_at = coalesce(started_at, $4), updated_at = $4
             WHERE id = $1 RETURNING *`,
            [row.id, workerId, now + leaseMs, this.date()],
          );
          await client.query("COMMIT");
          return toJob(taken.rows[0] as JobRow);
        }
      } catch (error) {
        await client.query("ROLLBACK").catch(() => {});
        throw error;
      }
    } finally {
      client.release();
    }
  }

  async heartbeat(id: string, workerId: string, leaseMs: number, progress?: JobProgress): Promise<boolean> {
    const result = await this.pool.query(
      `UPDATE jobs SET lease_until = $3, progress = coalesce($4, progress), updated_at = $5
       WHERE id = $1 AND state = 'running' AND lease_owner = $2`,
      [id, workerId, this.now() + leaseMs, progress ? JSON.stringify(progress) : null, this.date()],
    );
    return result.rowCount === 1;
  }

  async complete(id: string, workerId: string, result: unknown): Promise<boolean> {
    const outcome = await this.pool.query(
      `UPDATE jobs SET state = CASE WHEN payment_key IS NULL THEN 'succeeded' ELSE 'ready' END,
         result = $3, progress = CASE WHEN payment_key IS NULL THEN NULL ELSE $4 END, lease_owner = NULL, lease_until = NULL,
         finished_at = CASE WHEN payment_key IS NULL THEN $5::timestamptz END, updated_at = $5
       WHERE id = $1 AND state = 'running' AND lease_owner = $2`,
      [id, workerId, JSON.stringify(result), JSON.stringify(SETTLING_PROGRESS), this.date()],
    );
    return outcome.rowCount === 1;
  }

  async fail(id: string, workerId: string, error: JobError): Promise<boolean> {
    const outcome = await this.pool.query(
      `UPDATE jobs SET state = 'failed', error = $3, progress = NULL, lease_owner = NULL,
         lease_until = NULL, finished_at = $4, updated_at = $4
       WHERE id = $1 AND state = 'running' AND lease_owner = $2`,
      [id, workerId, JSON.stringify(error), this.date()],
    );
    return outcome.rowCount === 1;
  }

  async deliver(id: string): Promise<boolean> {
    const outcome = await this.pool.query(
      `UPDATE jobs SET state = 'succeeded', progress = NULL, finished_at = $2, updated_at = $2
       WHERE id = $1 AND state = 'ready'`,
      [id, this.date()],
    );
    return outcome.rowCount === 1;
  }

  async withhold(id: string, error: JobError): Promise<boolean> {
    const outcome = await this.pool.query(
      `UPDATE jobs SET state = 'failed', error = $2, progress = NULL, finished_at = $3,
         updated_at = $3
       WHERE id = $1 AND state = 'ready'`,
      [id, JSON.stringify(error), this.date()],
    );
    return outcome.rowCount === 1;
  }

  async expire(id: string, error: JobError): Promise<boolean> {
    const outcome = await this.pool.query(
      `UPDATE jobs SET state = 'failed', error = $2, progress = NULL, lease_owner = NULL, lease_until = NULL,
         finished_at = $3, updated_at = $3
       WHERE id = $1 AND state IN ('awaiting_payment', 'queued', 'running')`,
      [id, JSON.stringify(error), this.date()],
    );
    return outcome.rowCount === 1;
  }

  async readyJobs(): Promise<Job[]> {
    const { rows } = await this.pool.query<JobRow>(
      "SELECT * FROM jobs WHERE state = 'ready' ORDER BY updated_at, id",
    );
    return rows.map(toJob);
  }

  async depth(): Promise<Record<UnfinishedJobState, number>> {
    const { rows } = await this.pool.query<{ state: string; count: string }>(JOB_DEPTH_QUERY);
    return jobDepth(rows);
  }

  async reportWorker(worker: Omit<WorkerRecord, "lastSeen">): Promise<void> {
    await this.pool.query(
      `INSERT INTO workers (id, types, host, pid, started_at, last_seen) VALUES ($1, $2, $3, $4, $5, $6)
       ON CONFLICT (id) DO UPDATE SET types = excluded.types, last_seen = excluded.last_seen`,
      [worker.id, JSON.stringify(worker.types), worker.host, worker.pid, worker.startedAt, this.now()],
    );
  }

  async removeWorker(workerId: string): Promise<void> {
    await this.pool.query("DELETE FROM workers WHERE id = $1", [workerId]);
  }

  async liveWorkers(since: number): Promise<WorkerRecord[]> {
    const { rows } = await this.pool.query<{
      id: string;
      types: string;
      host: string;
      pid: number;
      started_at: string;
      last_seen: string;
    }>("SELECT * FROM workers WHERE last_seen >= $1 ORDER BY started_at, id", [since]);
    return rows.map((row) => ({
      id: row.id,
      types: JSON.parse(row.types),
      host: row.host,
      pid: row.pid,
      startedAt: row.started_at,
      lastSeen: Number(row.last_seen),
    }));
  }

  async maintain(options: { purgeBefore: number; forgetWorkersBefore: number }): Promise<MaintenanceReport> {
    const client = await this.pool.connect();
    try {
      await client.query("BEGIN");
      try {
        // Bulk work over tables that only grow: not held to a request's DATABASE_STATEMENT_TIMEOUT_MS (rolled
        // back at it every run, old jobs would never be purged).
        await client.query("SET LOCAL statement_timeout = 0");
        const promoted = await client.query(
          `UPDATE jobs SET state = 'queued', updated_at = $1
           WHERE state = 'awaiting_payment' AND payment_key IN (${SECURED_PAYMENT})`,
          [this.date()],
        );
        const dropped = await client.query(
          `DELETE FROM jobs WHERE state = 'awaiting_payment' AND payment_key IN
             (SELECT payment_key FROM payments WHERE state IN ('released', 'failed'))`,
        );
        const purged = await client.query(
          `DELETE FROM jobs WHERE state IN ('succeeded', 'failed') AND finished_at < $1
             AND NOT (state = 'failed' AND payment_key IS NOT NULL AND payment_key IN (${SETTLED}))`,
          [new Date(options.purgeBefore)],
        );
        const forgotten = await client.query("DELETE FROM workers WHERE last_seen < $1", [
          options.forgetWorkersBefore,
        ]);
        await client.query("COMMIT");
        return {
          promoted: promoted.rowCount ?? 0,
          dropped: dropped.rowCount ?? 0,
          purged: purged.rowCount ?? 0,
          forgottenWorkers: forgotten.rowCount ?? 0,
        };
      } catch (error) {
        await client.query("ROLLBACK").catch(() => {});
        throw error;
      }
    } finally {
      client.release();
    }
  }

  async failedPaidJobs(): Promise<FailedPaidJob[]> {
    const { rows } = await this.pool.query<{
      id: string;
      type: string;
      error: string | null;
      finished_at: Date | null;
      payment_key: string;
      payer: string;
      amount: string;
      tx_hash: string | null;
    }>(
      `SELECT j.id, j.type, j.error, j.finished_at, p.payment_key, p.payer, p.amount::text AS amount, p.tx_hash
       FROM jobs j JOIN payments p ON p.payment_key = j.payment_key
       WHERE j.state = 'failed' AND p.state = 'settled' ORDER BY j.finished_at, j.id`,
    );
    return rows.map((row) => ({
      jobId: row.id,
      type: row.type,
      error: parse(row.error),
      finishedAt: iso(row.finished_at),
      paymentKey: row.payment_key,
      payer: row.payer,
      amount: row.amount,
      txHash: row.tx_hash,
    }));
  }
}
