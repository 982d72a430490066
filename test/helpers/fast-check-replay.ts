/**
 * Replays a generated (fast-check) failure without editing the test: a failing property prints its
 * `seed` and `path`; run its file again with FC_SEED=<seed> FC_PATH=<path> (see docs/testing.md) and
 * fast-check starts from that case, shrunk as reported. FC_NUM_RUNS raises or lowers the number of
 * generated cases. Loaded before every test file (vitest.config.ts: setupFiles); fast-check is imported
 * only when one of them is set.
 */
const { FC_SEED, FC_PATH, FC_NUM_RUNS } = process.env;
if (FC_SEED || FC_NUM_RUNS) {
  const fc = await import("fast-check");
  fc.configureGlobal({
    ...fc.readConfigureGlobal(),
    ...(FC_SEED ? { seed: Number(FC_SEED) } : {}),
    ...(FC_SEED && FC_PATH ? { path: FC_PATH, endOnFailure: true } : {}),
    ...(FC_NUM_RUNS ? { numRuns: Number(FC_NUM_RUNS) } : {}),
  });
}
