/** The ledger's database did not answer (connection refused or lost, server shutting down, pool exhausted, a statement past DATABASE_STATEMENT_TIMEOUT_MS). */
export function isStoreOutage(error: unknown): boolean {
  const code = (error as { code?: unknown } | undefined)?.code;
  if (typeof code === "string" && (STORE_OUTAGE_CODES.has(code) || /^(08|57P)/.test(code))) return true;
  return (
    error instanceof Error &&
    /Connection terminated|timeout exceeded when trying to connect|Client has encountered a connection error|database is locked/i.test(
      error.message,
    )
  );
}
const STORE_OUTAGE_CODES = new Set([
  "ECONNREFUSED",
  "ECONNRESET",
  "ETIMEDOUT",
  "EPIPE",
  "EHOSTUNREACH",
  "ENOTFOUND",
  "SQLITE_BUSY",
  // too many connections; a statement cancelled (DATABASE_STATEMENT_TIMEOUT_MS); a lock not granted in time;
  // a session ended for sitting idle inside a transaction
  "53300",
  "57014",
  "55P03",
  "25P03",
]);
