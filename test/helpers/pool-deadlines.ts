import { stretchWorkerPoolDeadlines } from "../../src/operations/worker-pool.ts";

/**
 * How much longer a test's worker pools may take than a served machine's (the service's own time limit,
 * queue wait and start of each pool): the test files run two at a time on two cores, and the pools'
 * workers, below the event loop's priority, are starved by the other file's work far longer than the
 * limits allow. A test of an operation asserts its answer, not its limits; a test of a limit sets the
 * limit itself (pool.test.ts), which the stretch leaves exact.
 */
export const TEST_POOL_DEADLINE_STRETCH = 4;

/** Gives the pools created from now on the test's stretched deadlines; returns the undo. */
export const stretchPoolDeadlinesForTests = () => stretchWorkerPoolDeadlines(TEST_POOL_DEADLINE_STRETCH);

/** Creates a pool (`create`) with the service's deadlines stretched as a test service's are. */
export function withTestDeadlines<P>(create: () => P): P {
  const undo = stretchPoolDeadlinesForTests();
  try {
    return create();
  } finally {
    undo();
  }
}
