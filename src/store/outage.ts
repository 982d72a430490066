/** The ledger's database did not answer (connection refused or lost, server shutting down, pool exhausted). */
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
  "53300",
]);
