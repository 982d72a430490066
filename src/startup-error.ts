import type { Config } from "./config.ts";

/**
 * A reason the service cannot start, naming the setting to change. main.ts prints it as one line,
 * `utility402: cannot start: SETTING: what is wrong`, and exits 1, without a stack trace.
 */
export class StartupError extends Error {
  constructor(
    readonly setting: string,
    readonly reason: string,
  ) {
    super(`${setting}: ${reason}`);
  }
}

/** One line: newlines and runs of spaces in a message (anvil's stderr, pg's notices) collapsed. */
export const oneLine = (text: string) => text.replace(/\s+/g, " ").trim();

const messageOf = (error: unknown) => oneLine(error instanceof Error ? error.message : String(error));

/** The first system error code (ECONNREFUSED…) on the error or its causes (fetch and viem wrap them). */
const codeOf = (error: unknown): string | undefined => {
  let current = error as { code?: unknown; cause?: unknown } | null | undefined;
  for (let depth = 0; current && depth < 5; depth++) {
    if (typeof current.code === "string" && /^E[A-Z_]+$/.test(current.code)) return current.code;
    current = current.cause as typeof current;
  }
  return undefined;
};

/** A URL to name in a message without its secrets: no user info, no path or query (RPC keys live there). */
export function safeOrigin(url: string): string {
  try {
    const parsed = new URL(url);
    return `${parsed.protocol}//${parsed.host}`;
  } catch {
    return "(unparsable URL)";
  }
}

/** What a failed connection to `target` (host:port) was, in words. */
function connectionFailure(error: unknown, target: string): string | undefined {
  switch (codeOf(error)) {
    case "ECONNREFUSED":
      return `cannot connect to ${target}: connection refused (is the server running there?)`;
    case "ENOTFOUND":
    case "EAI_AGAIN":
      return `cannot connect to ${target}: the host name does not resolve`;
    case "ETIMEDOUT":
    case "EHOSTUNREACH":
    case "ENETUNREACH":
      return `cannot connect to ${target}: no route or no answer (${codeOf(error)})`;
    case "ECONNRESET":
      return `cannot connect to ${target}: the connection was reset`;
    default:
      return undefined;
  }
}

/** The store failed to open: a PostgreSQL connection/authentication problem or a SQLite file problem. */
export function databaseStartError(error: unknown, database: Config["database"]): StartupError {
  if (error instanceof StartupError) return error;
  if (database.kind === "sqlite") {
    return new StartupError(
      "DATABASE_URL",
      `cannot open the SQLite database ${database.path} (DATABASE_URL, or DATA_DIR when it is unset): ${messageOf(error)}`,
    );
  }
  let target = "(unparsable URL)";
  let user = "";
  let hasPassword = false;
  try {
    const url = new URL(database.url);
    target = `${url.hostname || "localhost"}:${url.port || "5432"}`;
    user = decodeURIComponent(url.username);
    hasPassword = url.password !== "";
  } catch {}
  const message = messageOf(error);
  const reason =
    connectionFailure(error, target) ??
    // pg's words when the URL has no password and the server asks for SCRAM authentication.
    (/client password must be a string/i.test(message) || (!hasPassword && /password/i.test(message))
      ? `no password in the URL, and the PostgreSQL server at ${target} asks for one${user ? ` (user "${user}")` : ""}`
      : `${message} (PostgreSQL at ${target})`);
  return new StartupError("DATABASE_URL", reason);
}

/** The HTTP server could not listen on HOST:PORT. */
export function listenStartError(error: unknown, host: string, port: number, setting = "PORT"): StartupError {
  const where = `${host}:${port}`;
  switch (codeOf(error)) {
    case "EADDRINUSE":
      return new StartupError(setting, `${where} is already in use (another process listens there)`);
    case "EACCES":
      return new StartupError(
        setting,
        `not permitted to listen on ${where} (ports below 1024 need privileges)`,
      );
    case "EADDRNOTAVAIL":
    case "ENOTFOUND":
    case "EAI_AGAIN":
      return new StartupError("HOST", `cannot listen on ${host}: not an address of this machine`);
    default:
      return new StartupError(setting, `cannot listen on ${where}: ${messageOf(error)}`);
  }
}

/** The chain RPC did not answer a first read. */
export function rpcStartError(error: unknown, rpcUrl: string, setting = "RPC_URL"): StartupError {
  let target = safeOrigin(rpcUrl);
  try {
    const url = new URL(rpcUrl);
    target = `${url.hostname}:${url.port || (url.protocol === "https:" ? "443" : "80")}`;
  } catch {}
  // viem's full message repeats the URL (an RPC key may be in its path): its short message does not.
  const short = (error as { shortMessage?: unknown } | null)?.shortMessage;
  let root = error as { cause?: unknown; message?: unknown } | null | undefined;
  for (let depth = 0; root?.cause && depth < 5; depth++) root = root.cause as typeof root;
  const rootMessage =
    root && root !== error && typeof root.message === "string" ? ` (${oneLine(root.message)})` : "";
  const reason =
    connectionFailure(error, target) ??
    `no answer from the chain at ${safeOrigin(rpcUrl)}: ${typeof short === "string" ? oneLine(short) : messageOf(error)}${rootMessage}`;
  return new StartupError(setting, reason);
}

/** Any error at start, as the one line main.ts prints. */
export function startupErrorLine(error: unknown): string {
  if (error instanceof StartupError)
    return `utility402: cannot start: ${error.setting}: ${oneLine(error.reason)}`;
  return `utility402: cannot start: ${messageOf(error)}`;
}
