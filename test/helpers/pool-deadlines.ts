import { stretchWorkerPoolDeadlines, type WorkerPoolOptions } from "../../src/operations/worker-pool.ts";

/**
 * How much longer a test's worker pools may take than a served machine's (their time limit, queue wait and
 * start): the test files run two at a time on two cores, and the pools' workers, below the event loop's
 * priority, are starved by the other file's work far longer than the limits allow. A test of an
 * operation asserts its answer, not its limits (pool.test.ts asserts those, with limits of its own).
 */
export const TEST_POOL_DEADLINE_STRETCH = 4;

/** Gives the pools created from now on the test's stretched deadlines; returns the undo. */
export const stretchPoolDeadlinesForTests = () => stretchWorkerPoolDeadlines(TEST_POOL_DEADLINE_STRETCH);

type Deadlines = Pick<WorkerPoolOptions, "timeLimitMs" | "queueTimeoutMs" | "startTimeoutMs">;

/**
 * Creates a pool (`create`) with the service's deadlines stretched as a test service's are, unless
 * `options` sets a deadline of its own: that test is about the limit and keeps it exact.
 */
export function withTestDeadlines<P>(options: Partial<Deadlines>, create: () => P): P {
  const ownDeadline = ["timeLimitMs", "queueTimeoutMs", "startTimeoutMs"].some((name) => name in options);
  const undo = ownDeadline ? () => {} : stretchPoolDeadlinesForTests();
  try {
    return create();
  } finally {
    undo();
  }
}
