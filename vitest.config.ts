import { defineConfig } from "vitest/config";

/**
 * End-to-end tests whose outcome depends on the store: they run a second time with every test
 * service on PostgreSQL (a fresh schema each), when TEST_DATABASE_URL is set (always in CI).
 */
const STORE_SENSITIVE = [
  "test/payments.e2e.test.ts",
  "test/payment-recovery.e2e.test.ts",
  "test/payment-modes.e2e.test.ts",
  "test/operations/research-brief.e2e.test.ts",
  "test/operations/research-brief-settlement.e2e.test.ts",
  "test/operations/research-brief-workers.e2e.test.ts",
  "test/hardening/concurrent-duplicates.e2e.test.ts",
  "test/contract/paid-operations.e2e.test.ts",
];

/**
 * Stress tests that load the whole machine (20,000 sockets, a flood of hostile bodies, kill -9 under
 * concurrent calls): they run after everything else, one file at a time, so they neither starve the
 * other tests nor are starved by them.
 */
const ALONE = [
  "test/hardening/load-watchdog.e2e.test.ts",
  "test/hardening/connection-cap.e2e.test.ts",
  "test/hardening/crash-recovery.e2e.test.ts",
];

const shared = { testTimeout: 60_000, hookTimeout: 60_000, pool: "forks" as const };

export default defineConfig({
  test: {
    projects: [
      {
        test: {
          ...shared,
          name: "sqlite",
          include: ["src/**/*.test.ts", "test/**/*.test.ts"],
          exclude: ALONE,
          sequence: { groupOrder: 0 },
        },
      },
      ...(process.env.TEST_DATABASE_URL
        ? [
            {
              test: {
                ...shared,
                name: "postgres",
                include: STORE_SENSITIVE,
                env: { TEST_STORE: "postgres" },
                sequence: { groupOrder: 0 },
              },
            },
          ]
        : []),
      { test: { ...shared, name: "alone", include: ALONE, fileParallelism: false, sequence: { groupOrder: 1 } } },
    ],
  },
});
