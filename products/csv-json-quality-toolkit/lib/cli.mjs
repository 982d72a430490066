// What every script and gate shares: strict arguments, exit codes and one-line errors.
import path from "node:path";

/** Exit codes every script and gate uses: 0 pass, 1 the data fails, 2 the call is wrong. */
export const EXIT = { PASS: 0, FAIL: 1, USAGE: 2 };

/** A wrong call: unknown option, missing argument, unreadable file, invalid schema or gate (exit 2). */
export class UsageError extends Error {}
/** The data fails in a way that stops the script (exit 1), e.g. a value that would be lost. */
export class DataError extends Error {}

/**
 * Positional arguments and options. `options` take a value (`--name value` or `--name=value`),
 * `flags` take none; anything else starting with `--` is a usage error.
 */
export function parseCliArgs(argv, { options = [], flags = [] } = {}) {
  const positional = [];
  const values = {};
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i];
    if (!arg.startsWith("--") || arg === "--") {
      positional.push(arg);
      continue;
    }
    const [name, inline] = arg.slice(2).split(/=(.*)/s, 2);
    if (flags.includes(name)) {
      if (inline !== undefined) throw new UsageError(`--${name} takes no value`);
      values[name] = true;
    } else if (options.includes(name)) {
      const value = inline ?? argv[++i];
      if (value === undefined || (inline === undefined && value.startsWith("--"))) throw new UsageError(`--${name} needs a value`);
      values[name] = value;
    } else {
      const known = [...options, ...flags].map((o) => `--${o}`).join(", ");
      throw new UsageError(`unknown option --${name} (known: ${known || "none"})`);
    }
  }
  return { positional, options: values };
}

/**
 * Runs a command-line entry point: its return value is the exit code. Every error becomes one line
 * on stderr (no stack trace): exit 1 for a DataError, 2 for anything else.
 */
export async function runCli(main) {
  const name = path.basename(process.argv[1] ?? "script", ".mjs");
  try {
    process.exitCode = await main();
  } catch (error) {
    const message = String(error?.message ?? error).replace(/\s*\n\s*/g, " ");
    process.stderr.write(`${name}: ${message}\n`);
    process.exitCode = error instanceof DataError ? EXIT.FAIL : EXIT.USAGE;
  }
}

/** A non-negative integer option, or a usage error. */
export function integerOption(options, name, fallback) {
  if (options[name] === undefined) return fallback;
  const value = Number(options[name]);
  if (!Number.isInteger(value) || value < 0) throw new UsageError(`--${name} must be a whole number ≥ 0, not "${options[name]}"`);
  return value;
}
