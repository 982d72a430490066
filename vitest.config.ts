import { availableParallelism } from "node:os";
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
  "test/operations/research-brief-floods.e2e.test.ts",
  "test/hardening/concurrent-duplicates.e2e.test.ts",
  "test/contract/paid-operations.e2e.test.ts",
  "test/x402-v1/payment-identifier.e2e.test.ts",
  "test/mcp/mcp.e2e.test.ts",
  "test/sign-in.e2e.test.ts",
  "test/paid-call-money.generated.e2e.test.ts",
  "test/vouchers/vouchers.e2e.test.ts",
  "test/vouchers/vouchers-mcp.e2e.test.ts",
  "test/vouchers/voucher-refunds.e2e.test.ts",
  "test/vouchers/hostile-vouchers.e2e.test.ts",
  "test/vouchers/voucher-ledger.e2e.test.ts",
  "test/vouchers/voucher-refunds.generated.e2e.test.ts",
  "test/vouchers/vouchers-channel.e2e.test.ts",
];

/**
 * Stress tests that load the whole machine (20,000 sockets, a flood of hostile bodies, kill -9 under
 * concurrent calls, a native build): they run after everything else, one file at a time, so they neither starve the
 * other tests nor are starved by them.
 */
const ALONE = [
  "test/hardening/load-watchdog.e2e.test.ts",
  "test/hardening/connection-cap.e2e.test.ts",
  "test/hardening/crash-recovery.e2e.test.ts",
  "test/hardening/held-payments-kill.generated.e2e.test.ts", // kill -9 of the service among held payments, ~2 min a store
  "test/operator/production-start.e2e.test.ts", // compiles better-sqlite3 for another Node version
];

/**
 * `npm run test:unit`: the fast tests that need no server, no chain and no database: the tests beside
 * the code in src/ (the payment decisions among them) and the import check. The tests in src/ that
 * start something (a server, worker threads, a program, a database) stay in the main project, named
 * here with what they start.
 */
const UNIT = ["src/**/*.test.ts", "test/imports/**/*.test.ts"];
const SRC_TESTS_THAT_START_THINGS = [
  "src/http/connection-limits.test.ts", // the HTTP server under a connection flood
  "src/http/health-listener.test.ts", // the health listener on a local port
  "src/operations/openapi-audit/no-external-access.test.ts", // a local HTTP server the audit must not reach
  "src/operations/openapi-audit/pool.test.ts", // real audit worker threads, each loading Spectral (a third of the unit time)
  "src/operations/research-brief/provider-health.test.ts", // local TCP servers as search providers
  "src/operations/tender-shortlist/ted-client.test.ts", // a stand-in TED API server
  "src/operations/unit-convert/gnu-units.test.ts", // GNU units, a program CI installs
  "src/store/store.test.ts", // the store contract on PostgreSQL too
  "src/payments/vouchers/voucher-calls.test.ts", // voucher channels on PostgreSQL too, two instances
];

/**
 * Unit tests that replace a module (vi.mock) run isolated, one module graph per file; the rest of the unit
 * project shares one per worker (`isolate: false`: the unit run's time was mostly importing, 27 s of 67 s).
 */
const UNIT_TESTS_THAT_MOCK_MODULES = ["src/operations/json-diff/self-check.test.ts"];

const shared = {
  // Hang guards, not speed limits: two files at once on a loaded two-core machine run a CPU-bound test
  // (an audit in worker threads, a several-MiB diff) several times slower than alone.
  testTimeout: 180_000,
  hookTimeout: 180_000,
  pool: "forks" as const,
  // FC_SEED / FC_PATH replay a generated (fast-check) failure: docs/testing.md.
  setupFiles: ["test/helpers/fast-check-replay.ts"],
};

/**
 * Test files at once. Most end-to-end files wait on I/O (a chain, a service, a socket), so two run
 * side by side even on two cores (vitest's default would be one there). What they start is their own:
 * free ports (startTestService retries a port lost to a race), a data directory, a PostgreSQL schema,
 * and a module graph per file (the service's singletons: the worker pools, the store). The worker
 * pools' deadlines are stretched in tests (test/helpers/pool-deadlines.ts), since the other file
 * starves their threads. `--maxWorkers=1` on the command line runs one file at a time again.
 */
const FILES_AT_ONCE = Math.max(2, availableParallelism() - 1);

export default defineConfig({
  test: {
    maxWorkers: FILES_AT_ONCE,
    projects: [
      {
        test: {
          ...shared,
          name: "unit",
          include: UNIT,
          exclude: [...SRC_TESTS_THAT_START_THINGS, ...UNIT_TESTS_THAT_MOCK_MODULES],
          isolate: false,
          sequence: { groupOrder: 0 },
        },
      },
      { test: { ...shared, name: "unit-mocked", include: UNIT_TESTS_THAT_MOCK_MODULES, sequence: { groupOrder: 0 } } },
      {
        test: {
          ...shared,
          name: "sqlite",
          include: ["test/**/*.test.ts", ...SRC_TESTS_THAT_START_THINGS],
          exclude: [...ALONE, "test/imports/**"],
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
