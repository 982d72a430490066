/**
 * Durable jobs: the queue the API records paid jobs in and workers take them from.
 *
 * The interface is async and says nothing about the engine: SQLite serves one machine; PostgreSQL
 * (postgres-job-queue.ts, FOR UPDATE SKIP LOCKED) serves many API instances and workers. Both pass
 * the same contract suite (test/jobs-contract.ts).
 *
 * States: awaiting_payment → queued → running → ready → succeeded | failed. A job is recorded while
 * its payment is being verified and held (awaiting_payment, invisible to workers), queued once the
 * payment is held, and dropped if it is not. A running job is held under a lease that its worker
 * renews with heartbeats; a job whose lease ran out (its worker died) is taken again, up to
 * maxAttempts claims, then failed with the reason. A paid job's result waits in `ready`, unseen,
 * until its held payment is settled (→ succeeded) or refused (→ failed, result withheld); a job
 * whose held payment runs out of time is failed (`expire`) wherever it is.
 */
import type { JobProgress } from "../contract/operation.ts";

export type JobState = "awaiting_payment" | "queued" | "running" | "ready" | "succeeded" | "failed";

export interface JobError {
  /** A stable machine-readable code, e.g. "provider_failed", "attempts_exhausted". */
  code: string;
  message: string;
}

// What a job is doing is the operation's to say (its job run reports it), so the contract defines it.
export type { JobProgress };

export interface Job {
  id: string;
  type: string;
  state: JobState;
  input: unknown;
  /** The ledger row (payments.payment_key) that paid for this job, if any. */
  paymentKey: string | null;
  /** How many times a worker took the job. */
  attempts: number;
  maxAttempts: number;
  leaseOwner: string | null;
  /** Epoch ms until which leaseOwner holds a running job. */
  leaseUntil: number | null;
  progress: JobProgress | null;
  result: unknown;
  error: JobError | null;
  createdAt: string;
  startedAt: string | null;
  finishedAt: string | null;
  updatedAt: string;
}

export interface NewJob {
  /** A random UUID v4: nothing about a job is guessable from another. */
  id: string;
  type: string;
  input: unknown;
  paymentKey: string | null;
  maxAttempts: number;
}

export interface WorkerRecord {
  id: string;
  /** Job types this worker can run (it has the providers they need). */
  types: string[];
  host: string;
  pid: number;
  startedAt: string;
  /** Epoch ms of its last liveness report. */
  lastSeen: number;
}

export interface MaintenanceReport {
  /** awaiting_payment jobs whose payment the ledger shows held (or settled): queued now. */
  promoted: number;
  /** awaiting_payment jobs whose payment was released or failed: dropped. */
  dropped: number;
  /** Finished jobs older than the retention: deleted. */
  purged: number;
  /** Worker rows not seen for a long time: deleted. */
  forgottenWorkers: number;
}

/** Tells this process's workers at once that a job became runnable here (workers elsewhere poll). */
export class RunnableSignal {
  private readonly listeners = new Set<() => void>();

  /** Returns the function that stops listening. */
  listen(listener: () => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  notify(): void {
    for (const listener of this.listeners) listener();
  }
}

export interface JobQueue {
  /** Notified when create({queued}) or markPaid makes a job runnable through this queue object. */
  readonly runnable: RunnableSignal;
  /** Records a job in state awaiting_payment (or queued when it needs no payment). */
  create(job: NewJob, options?: { queued?: boolean }): Promise<Job>;
  get(id: string): Promise<Job | undefined>;
  getByPayment(paymentKey: string): Promise<Job | undefined>;
  /** awaiting_payment → queued; false if the job is not awaiting payment (already queued, or gone). */
  markPaid(id: string): Promise<boolean>;
  /** Deletes a job that is still awaiting payment (its payment did not settle); false otherwise. */
  drop(id: string): Promise<boolean>;
  /**
   * Takes a runnable job of one of `types` for `workerId` (a queued one, or a running one whose lease ran
   * out): the oldest of the payer with the fewest jobs running (RUNNING_OF_PAYER). Counts the attempt; a
   * job past maxAttempts is failed instead of returned.
   */
  claim(workerId: string, types: readonly string[], leaseMs: number): Promise<Job | undefined>;
  /** Renews the lease (and records progress) while workerId still holds the job; false if it lost it. */
  heartbeat(id: string, workerId: string, leaseMs: number, progress?: JobProgress): Promise<boolean>;
  /**
   * running → ready with the result (a paid job: its payment is settled next), or → succeeded (a job
   * without payment); only for the lease holder; false if it lost the job.
   */
  complete(id: string, workerId: string, result: unknown): Promise<boolean>;
  /** ready → succeeded: its payment is settled, the result is shown; false if not ready. */
  deliver(id: string): Promise<boolean>;
  /**
   * ready → failed with the error, the result withheld: kept, never shown (its payment was refused; should
   * the transfer land after all, the operator still has what was paid for); false if not ready.
   */
  withhold(id: string, error: JobError): Promise<boolean>;
  /** awaiting_payment | queued | running → failed (its payment's time ran out); false if it was past those. */
  expire(id: string, error: JobError): Promise<boolean>;
  /** Jobs in state ready, oldest first: results waiting for their payment to be settled. */
  readyJobs(): Promise<Job[]>;
  /** How many jobs are in each unfinished state (the queue's depth, 0 for an empty state): /metrics reads it. */
  depth(): Promise<Record<UnfinishedJobState, number>>;
  /** running → failed with the error, only for the lease holder; false if it lost the job. */
  fail(id: string, workerId: string, error: JobError): Promise<boolean>;
  /** Liveness: insert or refresh the worker's row. */
  reportWorker(worker: Omit<WorkerRecord, "lastSeen">): Promise<void>;
  removeWorker(workerId: string): Promise<void>;
  /** Workers seen at or after `since` (epoch ms). */
  liveWorkers(since: number): Promise<WorkerRecord[]>;
  /**
   * Housekeeping any worker may run at any time, concurrently with others: settles the fate of
   * awaiting_payment jobs from the ledger, purges finished jobs older than `purgeBefore` (epoch ms)
   * except failed paid ones (the operator's record of money taken for nothing), forgets workers
   * unseen since `forgetWorkersBefore`.
   */
  maintain(options: { purgeBefore: number; forgetWorkersBefore: number }): Promise<MaintenanceReport>;
  /** Failed jobs that were paid for, with their payment: what the operator may want to make good. */
  failedPaidJobs(): Promise<FailedPaidJob[]>;
}

export interface FailedPaidJob {
  jobId: string;
  type: string;
  error: JobError | null;
  finishedAt: string | null;
  paymentKey: string;
  payer: string;
  amount: string;
  txHash: string | null;
}

/** Why a job whose workers kept dying is failed instead of being taken again. */
export const attemptsExhausted = (attempts: number): JobError => ({
  code: "attempts_exhausted",
  message: `the job was started ${attempts} times and its worker stopped each time before finishing`,
});

export const FINAL_JOB_STATES: readonly JobState[] = ["succeeded", "failed"];
export const UNFINISHED_JOB_STATES = ["awaiting_payment", "queued", "running", "ready"] as const;
export type UnfinishedJobState = (typeof UNFINISHED_JOB_STATES)[number];

/** The counting query of depth() (the same SQL for SQLite and PostgreSQL; jobs_runnable indexes state). */
export const JOB_DEPTH_QUERY = `SELECT state, COUNT(*) AS count FROM jobs
  WHERE state IN (${UNFINISHED_JOB_STATES.map((state) => `'${state}'`).join(", ")}) GROUP BY state`;

/** depth() from JOB_DEPTH_QUERY's rows: every unfinished state, 0 where it has no row. */
export function jobDepth(
  rows: readonly { state: string; count: number | string }[],
): Record<UnfinishedJobState, number> {
  const depth = Object.fromEntries(UNFINISHED_JOB_STATES.map((state) => [state, 0])) as Record<
    UnfinishedJobState,
    number
  >;
  for (const { state, count } of rows) depth[state as UnfinishedJobState] = Number(count);
  return depth;
}

/** What a paid job shows while its result waits for its payment to be settled. */
export const SETTLING_PROGRESS: JobProgress = { stage: "settling payment", fraction: 0.98 };

/**
 * Fair queueing by payer: a claim takes the oldest runnable job of the payer with the fewest jobs running
 * now (the candidate's payer is `p.payer`), so one payer's jobs never keep every worker while another
 * payer's job waits: the next free worker takes the other payer's job. Jobs without a payment count as one
 * payer with nothing running. `now` is the SQL parameter holding the claim's clock (leases still running).
 */
export const RUNNING_OF_PAYER = (now: string) => `SELECT count(*) FROM jobs r
  JOIN payments rp ON rp.payment_key = r.payment_key
  WHERE r.state = 'running' AND r.lease_until > ${now} AND rp.payer = p.payer`;

/** Ledger states in which a job's payment is secured: the job may run. */
export const SECURED_PAYMENT = "SELECT payment_key FROM payments WHERE state IN ('held', 'settled')";
