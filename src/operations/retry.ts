/**
 * Retries with exponential backoff, and a limit on calls in flight: the one copy the operations share
 * (research brief providers, the TED client, the clinical-trials ingest). Both honour an AbortSignal: an
 * aborted signal ends a backoff wait or a wait for a slot at once, rejecting with the signal's reason.
 */

export interface RetryOptions<T> {
  /** Tries in all, the first included (1: no retry). */
  attempts: number;
  /** The first backoff; each further one doubles it. */
  baseMs: number;
  /** The longest backoff (before jitter); unbounded when absent. */
  maxMs?: number;
  /**
   * Scales each backoff to between half and all of itself. `true` draws from Math.random; a function
   * supplies the draw in [0, 1) (tests pin it).
   */
  jitter?: boolean | (() => number);
  /** Whether a thrown error is worth another try (default: every error is). */
  retryOn?: (error: unknown) => boolean;
  /** Whether a returned result is worth another try (default: none is); the last one is returned when tries run out. */
  retryResult?: (result: T) => boolean;
  /** A wait the upstream asked for (e.g. Retry-After), from the failed try's error or result; the longer of it and the backoff is waited. */
  retryAfterMs?: (outcome: { error: unknown } | { result: T }) => number | undefined;
  /** A requested wait longer than this ends the retries at once (the failure is passed on as it is). */
  maxRetryAfterMs?: number;
  signal?: AbortSignal;
  /** How a wait is slept (tests record it); the signal still cuts it short. */
  sleep?: (ms: number, signal?: AbortSignal) => Promise<void>;
}

/** The backoff before retry number `retry` (0: the first retry), before any Retry-After. */
export function backoffMs(
  retry: number,
  options: Pick<RetryOptions<unknown>, "baseMs" | "maxMs" | "jitter">,
): number {
  const full = Math.min(options.baseMs * 2 ** retry, options.maxMs ?? Number.POSITIVE_INFINITY);
  if (!options.jitter) return full;
  const draw = typeof options.jitter === "function" ? options.jitter() : Math.random();
  return full * (0.5 + draw / 2);
}

/** Rejects with the signal's reason as soon as it aborts; otherwise settles as `promise` does. */
export function abortable<T>(promise: Promise<T>, signal?: AbortSignal): Promise<T> {
  if (!signal) return promise;
  if (signal.aborted) return Promise.reject(signal.reason);
  return new Promise<T>((resolve, reject) => {
    const onAbort = () => reject(signal.reason);
    signal.addEventListener("abort", onAbort, { once: true });
    promise.then(
      (value) => {
        signal.removeEventListener("abort", onAbort);
        resolve(value);
      },
      (error: unknown) => {
        signal.removeEventListener("abort", onAbort);
        reject(error);
      },
    );
  });
}

/** setTimeout as a promise, cleared and rejected with the signal's reason when the signal aborts. */
export function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  if (signal?.aborted) return Promise.reject(signal.reason);
  return new Promise<void>((resolve, reject) => {
    const onAbort = () => {
      clearTimeout(timer);
      reject(signal?.reason);
    };
    const timer = setTimeout(() => {
      signal?.removeEventListener("abort", onAbort);
      resolve();
    }, ms);
    signal?.addEventListener("abort", onAbort, { once: true });
  });
}

/**
 * Calls `work` until it succeeds, fails in a way `retryOn` refuses, asks (Retry-After) for a longer wait
 * than `maxRetryAfterMs`, or the attempts run out; then throws the last error (or returns the last result
 * `retryResult` refused). An aborted signal is never waited on: before a try or during a backoff it
 * rejects with the signal's reason; a try that fails once the signal has aborted passes its own failure on.
 */
export async function retry<T>(
  work: (attempt: { number: number; signal?: AbortSignal }) => Promise<T>,
  options: RetryOptions<T>,
): Promise<T> {
  const { signal } = options;
  const wait = options.sleep ?? sleep;
  for (let retried = 0; ; retried++) {
    signal?.throwIfAborted();
    let outcome: { error: unknown } | { result: T };
    try {
      const result = await work({ number: retried + 1, signal });
      if (!options.retryResult?.(result)) return result;
      outcome = { result };
    } catch (error) {
      if (options.retryOn && !options.retryOn(error)) throw error;
      outcome = { error };
    }
    const last = () => {
      if ("error" in outcome) throw outcome.error;
      return outcome.result;
    };
    if (retried + 1 >= options.attempts || signal?.aborted) return last();
    const asked = options.retryAfterMs?.(outcome);
    if (asked !== undefined && options.maxRetryAfterMs !== undefined && asked > options.maxRetryAfterMs) {
      return last();
    }
    await abortable(wait(Math.max(backoffMs(retried, options), asked ?? 0), signal), signal);
  }
}

/** A call run under a limit; `signal` ends its wait for a slot (never a call already running). */
export type Limit = <T>(call: () => Promise<T>, signal?: AbortSignal) => Promise<T>;

/**
 * Runs at most `max` calls at once; the rest wait in arrival order, and a finished call hands its slot to
 * the next. A waiter whose signal aborts leaves the queue at once, rejecting with the signal's reason.
 */
export function limitConcurrency(max: number): Limit {
  if (!Number.isInteger(max) || max < 1)
    throw new RangeError(`a concurrency limit must be a whole number ≥ 1, not ${max}`);
  let running = 0;
  const waiting: (() => void)[] = [];
  const release = () => {
    const next = waiting.shift();
    if (next) next();
    else running--;
  };
  const acquire = (signal?: AbortSignal): Promise<void> => {
    if (signal?.aborted) return Promise.reject(signal.reason);
    if (running < max) {
      running++;
      return Promise.resolve();
    }
    return new Promise<void>((resolve, reject) => {
      const take = () => {
        signal?.removeEventListener("abort", onAbort);
        resolve();
      };
      const onAbort = () => {
        const at = waiting.indexOf(take);
        if (at >= 0) waiting.splice(at, 1);
        reject(signal?.reason);
      };
      waiting.push(take);
      signal?.addEventListener("abort", onAbort, { once: true });
    });
  };
  return async <T>(call: () => Promise<T>, signal?: AbortSignal): Promise<T> => {
    await acquire(signal);
    try {
      return await call();
    } finally {
      release();
    }
  };
}
